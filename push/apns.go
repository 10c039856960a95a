package push

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// APNs endpoints.
const (
	// APNsProduction is the APNs endpoint for apps from the App Store,
	// TestFlight and ad hoc builds.
	APNsProduction = "https://api.push.apple.com"
	// APNsSandbox is the APNs endpoint for development builds.
	APNsSandbox = "https://api.sandbox.push.apple.com"
)

// APNs provider tokens: Apple refuses one older than an hour and one
// refreshed more often than every 20 minutes.
const (
	defaultAPNsTokenAge = 50 * time.Minute
	maxAPNsTokenAge     = 55 * time.Minute
	minAPNsTokenAge     = 20 * time.Minute
)

// APNsConfig configures an APNsSender. Key, KeyID, TeamID and Topic are
// required; every other field's zero value works.
type APNsConfig struct {
	// Key is the token signing key downloaded from the Apple developer
	// account (the .p8 file: a PKCS#8 PEM-encoded P-256 private key).
	Key []byte
	// KeyID is the key's 10-character identifier (the JWT's kid).
	KeyID string
	// TeamID is the developer team's identifier (the JWT's iss).
	TeamID string
	// Topic is the app's bundle ID (the apns-topic header).
	Topic string
	// Endpoint is the APNs base URL. Default APNsProduction; APNsSandbox
	// for development builds, or a local stand-in in tests.
	Endpoint string
	// Priority is the apns-priority header: 10 (deliver now) or 5 (at a
	// time that saves power). Default 10.
	Priority int
	// Expiration is how long APNs keeps trying an offline device (the
	// apns-expiration header is now plus this). Default 24 h.
	Expiration time.Duration
	// TokenAge is how long one provider token (JWT) is reused before a new
	// one is signed; Apple accepts a token for an hour and refuses refreshes
	// more often than every 20 minutes. Default 50 min; values are kept
	// between 20 and 55 minutes.
	TokenAge time.Duration
	// Network says how to reach the endpoint. Default: public addresses,
	// system TLS roots, 30 s per request. Only HTTP/2 is spoken.
	Network Network
	// Now is the clock (token age, expiration). Default time.Now.
	Now func() time.Time
}

// APNsSender sends alerts through the APNs HTTP/2 provider API with
// token-based authentication (an ES256 JWT, reused for TokenAge).
type APNsSender struct {
	cfg    APNsConfig
	key    *ecdsa.PrivateKey
	client *http.Client

	mu    sync.Mutex
	tok   string
	tokAt time.Time
}

// NewAPNs checks cfg, parses its key and returns a sender. It starts no
// goroutines and makes no request.
func NewAPNs(cfg APNsConfig) (*APNsSender, error) {
	if cfg.KeyID == "" || cfg.TeamID == "" || cfg.Topic == "" {
		return nil, errors.New("push: APNs needs KeyID, TeamID and Topic")
	}
	key, err := jwt.ParseECPrivateKeyFromPEM(cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("push: APNs key: %w", err)
	}
	if key.Curve.Params().Name != "P-256" {
		return nil, errors.New("push: APNs key must be a P-256 key")
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = APNsProduction
	}
	cfg.Endpoint = strings.TrimSuffix(cfg.Endpoint, "/")
	if cfg.Priority != 5 {
		cfg.Priority = 10
	}
	if cfg.Expiration <= 0 {
		cfg.Expiration = 24 * time.Hour
	}
	switch {
	case cfg.TokenAge <= 0:
		cfg.TokenAge = defaultAPNsTokenAge
	case cfg.TokenAge < minAPNsTokenAge:
		cfg.TokenAge = minAPNsTokenAge
	case cfg.TokenAge > maxAPNsTokenAge:
		cfg.TokenAge = maxAPNsTokenAge
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &APNsSender{cfg: cfg, key: key, client: cfg.Network.client(true)}, nil
}

// providerToken returns the current provider token, signing a new one when
// the last is TokenAge old (or from the future: the clock went back).
func (s *APNsSender) providerToken() (string, error) {
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tok != "" && !now.Before(s.tokAt) && now.Sub(s.tokAt) < s.cfg.TokenAge {
		return s.tok, nil
	}
	t := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss": s.cfg.TeamID,
		"iat": now.Unix(),
	})
	t.Header["kid"] = s.cfg.KeyID
	signed, err := t.SignedString(s.key)
	if err != nil {
		return "", err
	}
	s.tok, s.tokAt = signed, now
	return signed, nil
}

// dropToken forgets tok if it is still the current token, so the next
// send signs a new one.
func (s *APNsSender) dropToken(tok string) {
	s.mu.Lock()
	if s.tok == tok {
		s.tok = ""
	}
	s.mu.Unlock()
}

// apnsPayload is the JSON body: the alert under "aps", the notification's
// data as top-level custom keys.
func apnsPayload(n Notification) ([]byte, error) {
	p := make(map[string]any, len(n.Data)+1)
	for k, v := range n.Data {
		p[k] = v
	}
	p["aps"] = map[string]any{
		"alert": map[string]string{"title": n.Title, "body": n.Body},
	}
	return json.Marshal(p)
}

// Send posts one alert to the device's token.
func (s *APNsSender) Send(ctx context.Context, d Device, n Notification) error {
	if d.Token == "" {
		return &Error{Kind: Gone, Provider: APNs, Reason: "empty device token"}
	}
	if _, err := hex.DecodeString(d.Token); err != nil {
		return &Error{Kind: Gone, Provider: APNs, Reason: "device token is not hexadecimal"}
	}
	body, err := apnsPayload(n)
	if err != nil {
		return &Error{Kind: Permanent, Provider: APNs, Err: err}
	}
	tok, err := s.providerToken()
	if err != nil {
		return &Error{Kind: Permanent, Provider: APNs, Reason: "signing the provider token", Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.Endpoint+"/3/device/"+d.Token, bytes.NewReader(body))
	if err != nil {
		return &Error{Kind: Permanent, Provider: APNs, Err: err}
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("Authorization", "bearer "+tok)
	h.Set("apns-topic", s.cfg.Topic)
	h.Set("apns-push-type", "alert")
	h.Set("apns-priority", strconv.Itoa(s.cfg.Priority))
	h.Set("apns-expiration", strconv.FormatInt(s.cfg.Now().Add(s.cfg.Expiration).Unix(), 10))
	resp, err := s.client.Do(req)
	if err != nil {
		return transportError(APNs, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil
	}
	var r struct {
		Reason string `json:"reason"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 4<<10)).Decode(&r)
	e := &Error{Provider: APNs, Status: resp.StatusCode, Reason: r.Reason,
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), s.cfg.Now())}
	e.Kind = apnsKind(resp.StatusCode, r.Reason)
	if r.Reason == "ExpiredProviderToken" {
		s.dropToken(tok)
	}
	return e
}

// apnsKind maps an APNs error response to what the caller must do.
//
// 410 (Unregistered, ExpiredToken) means the token is no longer valid for
// the topic. 400 BadDeviceToken and DeviceTokenNotForTopic are taken as
// Gone too: such a token can never be accepted by this endpoint and topic,
// and apps register their current token at every launch, so a device
// removed because the endpoint was misconfigured (sandbox against
// production) comes back once it is fixed, whereas keeping it would fail
// every message for ever. 403 ExpiredProviderToken is retried with a newly
// signed token; other 403s (a key Apple does not know) are Permanent.
func apnsKind(status int, reason string) Kind {
	switch {
	case status == http.StatusGone:
		return Gone
	case reason == "BadDeviceToken" || reason == "DeviceTokenNotForTopic":
		return Gone
	case reason == "ExpiredProviderToken" || reason == "TooManyProviderTokenUpdates":
		return Retry
	}
	return statusKind(status)
}

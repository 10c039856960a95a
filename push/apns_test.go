package push

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/chatengine/chat/webhook"
)

const (
	apnsKeyID  = "ABC123DEFG"
	apnsTeamID = "DEF123GHIJ"
	apnsTopic  = "com.example.chat"
)

// apnsStandIn plays APNs: it checks what the real service checks (HTTP/2,
// the provider token's ES256 signature with the team's public key, its
// kid, iss and a fresh iat, the topic, push type, priority, expiration and
// the payload) and answers according to the device token.
type apnsStandIn struct {
	tb    testing.TB
	pub   *ecdsa.PublicKey
	clock *clock

	mu       sync.Mutex
	tokens   []string // provider token of every accepted request
	payloads []map[string]any
	answers  map[string]func(w http.ResponseWriter) // by device token
	failures []string
}

func (a *apnsStandIn) fail(format string, args ...any) {
	a.mu.Lock()
	a.failures = append(a.failures, fmt.Sprintf(format, args...))
	a.mu.Unlock()
}

func (a *apnsStandIn) reason(w http.ResponseWriter, status int, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"reason": reason})
}

func (a *apnsStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 2 {
		a.fail("protocol %s, APNs speaks only HTTP/2", r.Proto)
		a.reason(w, http.StatusBadRequest, "BadProtocol")
		return
	}
	dev, ok := strings.CutPrefix(r.URL.Path, "/3/device/")
	if r.Method != http.MethodPost || !ok || dev == "" {
		a.reason(w, http.StatusNotFound, "BadPath")
		return
	}
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "bearer ")
	if !ok {
		a.reason(w, http.StatusForbidden, "MissingProviderToken")
		return
	}
	now := a.clock.Now()
	tok, err := jwt.Parse(auth, func(t *jwt.Token) (any, error) { return a.pub, nil },
		jwt.WithValidMethods([]string{"ES256"}), jwt.WithTimeFunc(func() time.Time { return now }))
	if err != nil {
		a.fail("provider token: %v", err)
		a.reason(w, http.StatusForbidden, "InvalidProviderToken")
		return
	}
	claims := tok.Claims.(jwt.MapClaims)
	iat, _ := claims.GetIssuedAt()
	switch {
	case tok.Header["kid"] != apnsKeyID, claims["iss"] != apnsTeamID, iat == nil:
		a.fail("provider token header %v claims %v", tok.Header, claims)
		a.reason(w, http.StatusForbidden, "InvalidProviderToken")
		return
	case now.Sub(iat.Time) >= time.Hour:
		a.reason(w, http.StatusForbidden, "ExpiredProviderToken")
		return
	case iat.Time.After(now):
		a.fail("iat %v in the future of %v", iat.Time, now)
		a.reason(w, http.StatusForbidden, "InvalidProviderToken")
		return
	}
	h := r.Header
	if h.Get("apns-topic") != apnsTopic {
		a.reason(w, http.StatusBadRequest, "BadTopic")
		return
	}
	if h.Get("apns-push-type") != "alert" || h.Get("apns-priority") != "10" {
		a.fail("push type %q priority %q", h.Get("apns-push-type"), h.Get("apns-priority"))
		a.reason(w, http.StatusBadRequest, "InvalidPushType")
		return
	}
	exp, err := strconv.ParseInt(h.Get("apns-expiration"), 10, 64)
	if err != nil || exp <= now.Unix() {
		a.fail("apns-expiration %q", h.Get("apns-expiration"))
		a.reason(w, http.StatusBadRequest, "BadExpirationDate")
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 4097))
	if len(body) > 4096 {
		a.reason(w, http.StatusRequestEntityTooLarge, "PayloadTooLarge")
		return
	}
	var p map[string]any
	if err := json.Unmarshal(body, &p); err != nil {
		a.reason(w, http.StatusBadRequest, "PayloadEmpty")
		return
	}
	a.mu.Lock()
	a.tokens = append(a.tokens, auth)
	a.payloads = append(a.payloads, p)
	answer := a.answers[dev]
	a.mu.Unlock()
	if answer != nil {
		answer(w)
		return
	}
	w.Header().Set("apns-id", "6A6B2A4C-0E1B-4C5E-9D3E-3B5C0C5A8F10")
	w.WriteHeader(http.StatusOK)
}

func (a *apnsStandIn) check() {
	a.tb.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	require.Empty(a.tb, a.failures)
}

// newAPNs starts a stand-in and a sender configured for it.
func newAPNs(tb testing.TB, h2 bool) (*APNsSender, *apnsStandIn, *clock) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(tb, err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(tb, err)
	p8 := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	c := newClock()
	a := &apnsStandIn{tb: tb, pub: &key.PublicKey, clock: c, answers: map[string]func(http.ResponseWriter){}}
	srv := tlsServer(tb, a, h2)
	s, err := NewAPNs(APNsConfig{Key: p8, KeyID: apnsKeyID, TeamID: apnsTeamID, Topic: apnsTopic,
		Endpoint: srv.URL, Network: trusting(srv), Now: c.Now})
	require.NoError(tb, err)
	return s, a, c
}

const apnsDevice = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"

func TestAPNsSendsAlertWithProviderToken(t *testing.T) {
	t.Parallel()
	s, a, _ := newAPNs(t, true)
	n := ForMessage("General", "Ada", "hello there", "ch1", "m1")
	require.NoError(t, s.Send(context.Background(), Device{Provider: APNs, Token: apnsDevice}, n))
	a.check()
	require.Len(t, a.payloads, 1)
	require.Equal(t, map[string]any{
		"aps":       map[string]any{"alert": map[string]any{"title": "General", "body": "Ada: hello there"}},
		"channelId": "ch1",
		"messageId": "m1",
	}, a.payloads[0])
}

func TestAPNsTokenReusedThenRefreshed(t *testing.T) {
	t.Parallel()
	s, a, c := newAPNs(t, true)
	d := Device{Provider: APNs, Token: apnsDevice}
	n := ForMessage("General", "Ada", "hi", "ch1", "m1")
	ctx := context.Background()
	require.NoError(t, s.Send(ctx, d, n))
	c.Add(49 * time.Minute)
	require.NoError(t, s.Send(ctx, d, n))
	c.Add(2 * time.Minute) // 51 minutes after the first token was signed
	require.NoError(t, s.Send(ctx, d, n))
	a.check()
	require.Len(t, a.tokens, 3)
	require.Equal(t, a.tokens[0], a.tokens[1], "the provider token is reused within its age")
	require.NotEqual(t, a.tokens[1], a.tokens[2], "a new provider token is signed after its age")
}

func TestAPNsExpiredProviderTokenIsRetriedWithNewToken(t *testing.T) {
	t.Parallel()
	// A sender whose token age is longer than Apple allows: the stand-in
	// refuses the token at 60 minutes; the sender drops it and the retry
	// carries a new one.
	s, a, c := newAPNs(t, true)
	s.cfg.TokenAge = 2 * time.Hour
	d := Device{Provider: APNs, Token: apnsDevice}
	n := ForMessage("General", "Ada", "hi", "ch1", "m1")
	ctx := context.Background()
	require.NoError(t, s.Send(ctx, d, n))
	c.Add(61 * time.Minute)
	err := s.Send(ctx, d, n)
	require.ErrorIs(t, err, ErrRetry)
	require.Contains(t, err.Error(), "ExpiredProviderToken")
	require.NoError(t, s.Send(ctx, d, n))
	a.check()
	require.Len(t, a.tokens, 2)
	require.NotEqual(t, a.tokens[0], a.tokens[1])
}

func TestAPNsResponses(t *testing.T) {
	t.Parallel()
	s, a, _ := newAPNs(t, true)
	cases := []struct {
		status     int
		reason     string
		retryAfter string
		kind       Kind
		wantAfter  time.Duration
	}{
		{http.StatusGone, "Unregistered", "", Gone, 0},
		{http.StatusGone, "ExpiredToken", "", Gone, 0},
		{http.StatusBadRequest, "BadDeviceToken", "", Gone, 0},
		{http.StatusBadRequest, "DeviceTokenNotForTopic", "", Gone, 0},
		{http.StatusBadRequest, "PayloadEmpty", "", Permanent, 0},
		{http.StatusRequestEntityTooLarge, "PayloadTooLarge", "", Permanent, 0},
		{http.StatusForbidden, "InvalidProviderToken", "", Permanent, 0},
		{http.StatusTooManyRequests, "TooManyRequests", "7", Retry, 7 * time.Second},
		{http.StatusServiceUnavailable, "ServiceUnavailable", "", Retry, 0},
		{http.StatusInternalServerError, "InternalServerError", "", Retry, 0},
	}
	for i, tc := range cases {
		dev := fmt.Sprintf("%064x", i+1)
		a.mu.Lock()
		a.answers[dev] = func(w http.ResponseWriter) {
			if tc.retryAfter != "" {
				w.Header().Set("Retry-After", tc.retryAfter)
			}
			a.reason(w, tc.status, tc.reason)
		}
		a.mu.Unlock()
		err := s.Send(context.Background(), Device{Provider: APNs, Token: dev}, ForMessage("c", "s", "t", "ch", "m"))
		require.Error(t, err, tc.reason)
		var pe *Error
		require.ErrorAs(t, err, &pe)
		require.Equal(t, tc.kind, pe.Kind, tc.reason)
		require.Equal(t, tc.kind, KindOf(err), tc.reason)
		require.Equal(t, tc.status, pe.Status, tc.reason)
		require.Equal(t, tc.reason, pe.Reason)
		after, ok := RetryAfter(err)
		require.Equal(t, tc.wantAfter, after, tc.reason)
		require.Equal(t, tc.wantAfter > 0, ok, tc.reason)
	}
	a.check()
}

func TestAPNsRefusesHTTP1(t *testing.T) {
	t.Parallel()
	s, a, _ := newAPNs(t, false)
	err := s.Send(context.Background(), Device{Provider: APNs, Token: apnsDevice}, ForMessage("c", "s", "t", "ch", "m"))
	require.ErrorIs(t, err, ErrRetry)
	a.check()
	require.Empty(t, a.payloads)
}

func TestAPNsEndpointFollowsAddressRules(t *testing.T) {
	t.Parallel()
	s, a, _ := newAPNs(t, true)
	s2, err := NewAPNs(APNsConfig{Key: mustP8(t), KeyID: apnsKeyID, TeamID: apnsTeamID, Topic: apnsTopic,
		Endpoint: s.cfg.Endpoint, Network: Network{TLSConfig: s.cfg.Network.TLSConfig}})
	require.NoError(t, err)
	err = s2.Send(context.Background(), Device{Provider: APNs, Token: apnsDevice}, ForMessage("c", "s", "t", "ch", "m"))
	require.ErrorIs(t, err, ErrPermanent)
	require.True(t, errors.Is(err, webhook.ErrBlockedAddress), err)
	require.Empty(t, a.payloads)
}

func TestAPNsConfig(t *testing.T) {
	t.Parallel()
	_, err := NewAPNs(APNsConfig{Key: []byte("nope"), KeyID: "k", TeamID: "t", Topic: "x"})
	require.Error(t, err)
	_, err = NewAPNs(APNsConfig{Key: mustP8(t), TeamID: "t", Topic: "x"})
	require.Error(t, err)
	s, err := NewAPNs(APNsConfig{Key: mustP8(t), KeyID: "k", TeamID: "t", Topic: "x"})
	require.NoError(t, err)
	require.Equal(t, APNsProduction, s.cfg.Endpoint)
	require.Equal(t, 50*time.Minute, s.cfg.TokenAge)
	err = s.Send(context.Background(), Device{Provider: APNs, Token: "not hex"}, Notification{})
	require.ErrorIs(t, err, ErrGone)
}

func mustP8(tb testing.TB) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(tb, err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(tb, err)
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

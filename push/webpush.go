package push

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Web Push limits.
const (
	// recordSize is the aes128gcm record size announced in the header; the
	// whole notification is one record.
	recordSize = 4096
	// headerSize is the aes128gcm header: salt (16), record size (4), key
	// ID length (1) and the sender's public key (65).
	headerSize = 16 + 4 + 1 + 65
	// MaxWebPushPayload is the largest plaintext a Web Push notification
	// carries: push services accept bodies of 4096 bytes, from which the
	// header, the padding delimiter and the AEAD tag are taken.
	MaxWebPushPayload = 4096 - headerSize - 1 - 16
	// vapidLifetime is how long a VAPID JWT is valid (at most 24 h).
	vapidLifetime = 12 * time.Hour
)

// Subscription is a browser's PushSubscription: the push service endpoint
// and the keys that encrypt for it. A Web Push device's token is its JSON.
type Subscription struct {
	// Endpoint is the push service URL that receives the notifications.
	Endpoint string `json:"endpoint"`
	// Keys are the browser's encryption keys for this subscription.
	Keys struct {
		// P256dh is the browser's P-256 public key, an uncompressed point
		// in base64url.
		P256dh string `json:"p256dh"`
		// Auth is the 16-byte authentication secret in base64url.
		Auth string `json:"auth"`
	} `json:"keys"`
}

// ParseSubscription reads a PushSubscription JSON and checks its keys and
// endpoint: https (http too when allowPrivate), and an address the webhook
// rules allow (package webhook, CheckURL). It returns the subscription with
// its raw keys.
func ParseSubscription(token string, allowPrivate bool) (sub Subscription, uaPublic, auth []byte, err error) {
	if err = json.Unmarshal([]byte(token), &sub); err != nil {
		return sub, nil, nil, fmt.Errorf("not a PushSubscription JSON: %w", err)
	}
	if err = checkEndpoint(sub.Endpoint, allowPrivate); err != nil {
		return sub, nil, nil, err
	}
	uaPublic, err = decodeKey(sub.Keys.P256dh)
	if err != nil {
		return sub, nil, nil, fmt.Errorf("keys.p256dh: %w", err)
	}
	if _, err = ecdh.P256().NewPublicKey(uaPublic); err != nil {
		return sub, nil, nil, fmt.Errorf("keys.p256dh: not a P-256 public key: %w", err)
	}
	auth, err = decodeKey(sub.Keys.Auth)
	if err != nil {
		return sub, nil, nil, fmt.Errorf("keys.auth: %w", err)
	}
	if len(auth) != 16 {
		return sub, nil, nil, fmt.Errorf("keys.auth: %d bytes, want 16", len(auth))
	}
	return sub, uaPublic, auth, nil
}

// checkEndpoint refuses an endpoint that is not https (or http with
// allowPrivate) or that the webhook address rules refuse.
func checkEndpoint(endpoint string, allowPrivate bool) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return fmt.Errorf("endpoint: %w", err)
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !allowPrivate {
			return errors.New("endpoint: must be https")
		}
	default:
		return errors.New("endpoint: must be https")
	}
	return checkURL(endpoint, allowPrivate)
}

// decodeKey decodes base64url, with or without padding.
func decodeKey(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// GenerateVAPIDKey makes a new VAPID key pair (P-256). The server makes
// one once and keeps it: browsers' subscriptions are bound to its public
// key, so a new key pair orphans every existing subscription.
func GenerateVAPIDKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

// VAPIDPublicKey encodes the public half of a VAPID key as browsers take
// it (PushManager.subscribe's applicationServerKey): the uncompressed
// P-256 point in base64url without padding.
func VAPIDPublicKey(k *ecdsa.PrivateKey) (string, error) {
	b, err := k.PublicKey.Bytes()
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// MarshalVAPIDKey encodes a VAPID key for keeping: a PKCS#8 PEM block.
func MarshalVAPIDKey(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParseVAPIDKey decodes a key written by MarshalVAPIDKey (PKCS#8 or SEC 1
// PEM) and checks that it is a P-256 key.
func ParseVAPIDKey(pemBytes []byte) (*ecdsa.PrivateKey, error) {
	k, err := jwt.ParseECPrivateKeyFromPEM(pemBytes)
	if err != nil {
		return nil, err
	}
	if k.Curve != elliptic.P256() {
		return nil, errors.New("push: VAPID key must be a P-256 key")
	}
	return k, nil
}

// Encrypt encrypts plaintext for a subscription's keys with the aes128gcm
// content coding of RFC 8291 (one record, no padding), with a fresh salt
// and a fresh sender key pair. uaPublic is the subscription's p256dh key
// (65 bytes), auth its 16-byte secret.
func Encrypt(plaintext, uaPublic, auth []byte) ([]byte, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	as, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	return encrypt(plaintext, uaPublic, auth, salt, as)
}

// encrypt is Encrypt with the salt and the sender's key pair given, so a
// test can reproduce a published example.
func encrypt(plaintext, uaPublic, auth, salt []byte, as *ecdh.PrivateKey) ([]byte, error) {
	if len(plaintext) > MaxWebPushPayload {
		return nil, fmt.Errorf("payload of %d bytes exceeds %d", len(plaintext), MaxWebPushPayload)
	}
	if len(salt) != 16 || len(auth) != 16 {
		return nil, errors.New("salt and auth secret must be 16 bytes")
	}
	ua, err := ecdh.P256().NewPublicKey(uaPublic)
	if err != nil {
		return nil, err
	}
	shared, err := as.ECDH(ua)
	if err != nil {
		return nil, err
	}
	asPublic := as.PublicKey().Bytes()
	// The input keying material combines the shared secret with the auth
	// secret, bound to both public keys (RFC 8291 section 3.3).
	info := make([]byte, 0, 14+65+65)
	info = append(info, "WebPush: info\x00"...)
	info = append(info, uaPublic...)
	info = append(info, asPublic...)
	ikm, err := hkdf.Key(sha256.New, shared, auth, string(info), 32)
	if err != nil {
		return nil, err
	}
	// Content encryption key and nonce from the salt (RFC 8188 section 2.2
	// and 2.3).
	prk, err := hkdf.Extract(sha256.New, ikm, salt)
	if err != nil {
		return nil, err
	}
	cek, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, err
	}
	nonce, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	out := make([]byte, headerSize, headerSize+len(plaintext)+1+gcm.Overhead())
	copy(out, salt)
	binary.BigEndian.PutUint32(out[16:20], recordSize)
	out[20] = byte(len(asPublic))
	copy(out[21:], asPublic)
	// The only record is the last: its plaintext ends with the delimiter 2.
	record := make([]byte, 0, len(plaintext)+1)
	record = append(record, plaintext...)
	record = append(record, 2)
	return gcm.Seal(out, nonce, record, nil), nil
}

// WebPushConfig configures a WebPushSender. VAPIDKey and Subject are
// required; every other field's zero value works.
type WebPushConfig struct {
	// VAPIDKey is the server's VAPID key pair (GenerateVAPIDKey; kept with
	// MarshalVAPIDKey). Browsers subscribed with its public key.
	VAPIDKey *ecdsa.PrivateKey
	// Subject is how a push service can reach the operator: a mailto: or
	// https: URL (the VAPID JWT's sub).
	Subject string
	// TTL is how long the push service keeps a notification for an
	// offline browser (the TTL header). Default 24 h.
	TTL time.Duration
	// Urgency is the Urgency header: very-low, low, normal or high.
	// Default normal.
	Urgency string
	// Network says how to reach endpoints; with AllowPrivate an endpoint
	// may also be plain http on a private address. Default: https to
	// public addresses, system TLS roots, 30 s per request.
	Network Network
	// Now is the clock (the VAPID JWT's exp). Default time.Now.
	Now func() time.Time
}

// WebPushSender delivers notifications to browsers' push services (RFC
// 8030), encrypted with aes128gcm (RFC 8291) and authorized with VAPID
// (RFC 8292). The plaintext is the JSON {"title", "body", "data"}, which
// the page's service worker shows.
type WebPushSender struct {
	cfg    WebPushConfig
	pub    string
	client *http.Client
}

// NewWebPush checks cfg and returns a sender. It starts no goroutines.
func NewWebPush(cfg WebPushConfig) (*WebPushSender, error) {
	if cfg.VAPIDKey == nil {
		return nil, errors.New("push: Web Push needs a VAPID key")
	}
	if cfg.VAPIDKey.Curve != elliptic.P256() {
		return nil, errors.New("push: VAPID key must be a P-256 key")
	}
	if !strings.HasPrefix(cfg.Subject, "mailto:") && !strings.HasPrefix(cfg.Subject, "https://") {
		return nil, errors.New("push: Web Push Subject must be a mailto: or https: URL")
	}
	pub, err := VAPIDPublicKey(cfg.VAPIDKey)
	if err != nil {
		return nil, err
	}
	if cfg.TTL <= 0 {
		cfg.TTL = 24 * time.Hour
	}
	switch cfg.Urgency {
	case "very-low", "low", "normal", "high":
	default:
		cfg.Urgency = "normal"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &WebPushSender{cfg: cfg, pub: pub, client: cfg.Network.client(false)}, nil
}

// PublicKey returns the VAPID public key in the form browsers take (see
// VAPIDPublicKey).
func (s *WebPushSender) PublicKey() string { return s.pub }

// vapid returns the Authorization header value for endpoint u.
func (s *WebPushSender) vapid(u *url.URL) (string, error) {
	t := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"aud": strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host),
		"exp": s.cfg.Now().Add(vapidLifetime).Unix(),
		"sub": s.cfg.Subject,
	})
	signed, err := t.SignedString(s.cfg.VAPIDKey)
	if err != nil {
		return "", err
	}
	return "vapid t=" + signed + ", k=" + s.pub, nil
}

// webPushPayload is the plaintext a service worker receives.
type webPushPayload struct {
	Title string            `json:"title"`
	Body  string            `json:"body"`
	Data  map[string]string `json:"data,omitempty"`
}

// Send encrypts n for the subscription in d.Token and posts it to its
// endpoint.
func (s *WebPushSender) Send(ctx context.Context, d Device, n Notification) error {
	sub, uaPublic, auth, err := ParseSubscription(d.Token, s.cfg.Network.AllowPrivate)
	if err != nil {
		// A subscription that does not parse never will; one whose endpoint
		// the address rules refuse may be allowed by another configuration.
		if blockedAddress(err) {
			return &Error{Kind: Permanent, Provider: WebPush, Err: err}
		}
		return &Error{Kind: Gone, Provider: WebPush, Reason: "invalid subscription", Err: err}
	}
	plain, err := json.Marshal(webPushPayload(n))
	if err != nil {
		return &Error{Kind: Permanent, Provider: WebPush, Err: err}
	}
	body, err := Encrypt(plain, uaPublic, auth)
	if err != nil {
		return &Error{Kind: Permanent, Provider: WebPush, Reason: "encryption", Err: err}
	}
	u, err := url.Parse(sub.Endpoint)
	if err != nil {
		return &Error{Kind: Gone, Provider: WebPush, Err: err}
	}
	authz, err := s.vapid(u)
	if err != nil {
		return &Error{Kind: Permanent, Provider: WebPush, Reason: "signing the VAPID token", Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.Endpoint, bytes.NewReader(body))
	if err != nil {
		return &Error{Kind: Gone, Provider: WebPush, Err: err}
	}
	h := req.Header
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Encoding", "aes128gcm")
	h.Set("TTL", strconv.Itoa(int(s.cfg.TTL/time.Second)))
	h.Set("Urgency", s.cfg.Urgency)
	h.Set("Authorization", authz)
	resp, err := s.client.Do(req)
	if err != nil {
		return transportError(WebPush, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	k := statusKind(resp.StatusCode)
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone {
		k = Gone
	}
	return &Error{Kind: k, Provider: WebPush, Status: resp.StatusCode, Reason: resp.Status,
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), s.cfg.Now())}
}

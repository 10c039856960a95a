package push

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/chatengine/chat/webhook"
)

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func unb64(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	require.NoError(tb, err)
	return b
}

// hmacSHA256 is one HMAC-SHA-256 step; the receiver below spells out
// RFC 8291's key derivation with it instead of calling an HKDF.
func hmacSHA256(key []byte, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// decryptAES128GCM is the receiving browser's side of RFC 8291, written
// from the RFC's steps independently of Encrypt: it reads the header,
// derives the keys with plain HMAC-SHA-256 and opens every record.
func decryptAES128GCM(body []byte, ua *ecdh.PrivateKey, auth []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("short header")
	}
	salt := body[:16]
	rs := int(binary.BigEndian.Uint32(body[16:20]))
	idlen := int(body[20])
	if len(body) < 21+idlen || rs < 18 {
		return nil, errors.New("bad header")
	}
	asPublic := body[21 : 21+idlen]
	records := body[21+idlen:]
	as, err := ecdh.P256().NewPublicKey(asPublic)
	if err != nil {
		return nil, err
	}
	secret, err := ua.ECDH(as)
	if err != nil {
		return nil, err
	}
	uaPublic := ua.PublicKey().Bytes()
	prkKey := hmacSHA256(auth, secret)
	keyInfo := append(append([]byte("WebPush: info\x00"), uaPublic...), asPublic...)
	ikm := hmacSHA256(prkKey, keyInfo, []byte{1})
	prk := hmacSHA256(salt, ikm)
	cek := hmacSHA256(prk, []byte("Content-Encoding: aes128gcm\x00"), []byte{1})[:16]
	nonce := hmacSHA256(prk, []byte("Content-Encoding: nonce\x00"), []byte{1})[:12]
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	var out []byte
	for seq := uint64(0); len(records) > 0; seq++ {
		n := min(rs, len(records))
		iv := append([]byte(nil), nonce...)
		for i := 0; i < 8; i++ {
			iv[11-i] ^= byte(seq >> (8 * i))
		}
		plain, err := gcm.Open(nil, iv, records[:n], nil)
		if err != nil {
			return nil, err
		}
		records = records[n:]
		i := len(plain) - 1
		for i >= 0 && plain[i] == 0 {
			i--
		}
		if i < 0 {
			return nil, errors.New("no delimiter")
		}
		last := len(records) == 0
		if (last && plain[i] != 2) || (!last && plain[i] != 1) {
			return nil, fmt.Errorf("delimiter %d in record %d", plain[i], seq)
		}
		out = append(out, plain[:i]...)
	}
	return out, nil
}

// RFC 8291, Appendix A.
const (
	rfcPlaintext = "When I grow up, I want to be a watermelon"
	rfcASPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
	rfcASPublic  = "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
	rfcUAPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
	rfcUAPublic  = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
	rfcSalt      = "DGv6ra1nlYgDCS1FRnbzlw"
	rfcAuth      = "BTBZMqHH6r4Tts7J_aSIgg"
	rfcBody      = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
)

func TestEncryptMatchesRFC8291Example(t *testing.T) {
	t.Parallel()
	as, err := ecdh.P256().NewPrivateKey(unb64(t, rfcASPrivate))
	require.NoError(t, err)
	require.Equal(t, rfcASPublic, b64(as.PublicKey().Bytes()))
	got, err := encrypt([]byte(rfcPlaintext), unb64(t, rfcUAPublic), unb64(t, rfcAuth), unb64(t, rfcSalt), as)
	require.NoError(t, err)
	require.Equal(t, rfcBody, b64(got))

	// The independent receiver opens the RFC's body too.
	ua, err := ecdh.P256().NewPrivateKey(unb64(t, rfcUAPrivate))
	require.NoError(t, err)
	require.Equal(t, rfcUAPublic, b64(ua.PublicKey().Bytes()))
	plain, err := decryptAES128GCM(unb64(t, rfcBody), ua, unb64(t, rfcAuth))
	require.NoError(t, err)
	require.Equal(t, rfcPlaintext, string(plain))
}

func TestEncryptFreshSaltAndKeyEachTime(t *testing.T) {
	t.Parallel()
	ua, err := ecdh.P256().GenerateKey(rand.Reader)
	require.NoError(t, err)
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	a, err := Encrypt([]byte("hi"), ua.PublicKey().Bytes(), auth)
	require.NoError(t, err)
	b, err := Encrypt([]byte("hi"), ua.PublicKey().Bytes(), auth)
	require.NoError(t, err)
	require.NotEqual(t, a[:16], b[:16], "salt")
	require.NotEqual(t, a[21:86], b[21:86], "sender key")
	for _, body := range [][]byte{a, b} {
		plain, err := decryptAES128GCM(body, ua, auth)
		require.NoError(t, err)
		require.Equal(t, "hi", string(plain))
	}
	_, err = Encrypt(make([]byte, MaxWebPushPayload+1), ua.PublicKey().Bytes(), auth)
	require.Error(t, err)
	max, err := Encrypt(make([]byte, MaxWebPushPayload), ua.PublicKey().Bytes(), auth)
	require.NoError(t, err)
	require.Len(t, max, 4096)
}

func TestVAPIDKey(t *testing.T) {
	t.Parallel()
	k, err := GenerateVAPIDKey()
	require.NoError(t, err)
	pub, err := VAPIDPublicKey(k)
	require.NoError(t, err)
	raw := unb64(t, pub)
	require.Len(t, raw, 65)
	require.Equal(t, byte(4), raw[0], "uncompressed point")
	require.NotContains(t, pub, "=")
	p, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
	require.NoError(t, err)
	require.True(t, p.Equal(&k.PublicKey))

	pemBytes, err := MarshalVAPIDKey(k)
	require.NoError(t, err)
	back, err := ParseVAPIDKey(pemBytes)
	require.NoError(t, err)
	require.True(t, back.Equal(k))
	_, err = ParseVAPIDKey([]byte("not a key"))
	require.Error(t, err)
}

// webPushReceiver plays a browser vendor's push service and the browser
// behind it: it checks the VAPID header (the JWT's ES256 signature with
// the k= key, which must be the key the subscription was made with, aud =
// its own origin, exp in the next 24 h, sub), the headers of RFC 8030, and
// decrypts the body with the subscription's private key.
type webPushReceiver struct {
	tb      testing.TB
	vapid   string // the application server key the browser subscribed with
	subject string
	ua      *ecdh.PrivateKey
	auth    []byte
	clock   *clock

	mu       sync.Mutex
	received [][]byte
	failures []string
}

func (p *webPushReceiver) fail(format string, args ...any) {
	p.mu.Lock()
	p.failures = append(p.failures, fmt.Sprintf(format, args...))
	p.mu.Unlock()
}

func (p *webPushReceiver) check() {
	p.tb.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	require.Empty(p.tb, p.failures)
}

func (p *webPushReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "vapid ")
	var t, k string
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if s, ok := strings.CutPrefix(part, "t="); ok {
			t = s
		} else if s, ok := strings.CutPrefix(part, "k="); ok {
			k = s
		}
	}
	if !ok || t == "" || k != p.vapid {
		p.fail("authorization %q", r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	raw, err := base64.RawURLEncoding.DecodeString(k)
	if err != nil {
		p.fail("k: %v", err)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
	if err != nil {
		p.fail("k: %v", err)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	now := p.clock.Now()
	tok, err := jwt.Parse(t, func(*jwt.Token) (any, error) { return pub, nil },
		jwt.WithValidMethods([]string{"ES256"}), jwt.WithAudience("https://"+r.Host),
		jwt.WithExpirationRequired(), jwt.WithTimeFunc(func() time.Time { return now }))
	if err != nil {
		p.fail("vapid jwt: %v", err)
		w.WriteHeader(http.StatusForbidden)
		return
	}
	claims := tok.Claims.(jwt.MapClaims)
	exp, _ := claims.GetExpirationTime()
	if exp.Sub(now) > 24*time.Hour || claims["sub"] != p.subject {
		p.fail("vapid claims %v", claims)
		w.WriteHeader(http.StatusForbidden)
		return
	}
	if r.Header.Get("Content-Encoding") != "aes128gcm" || r.Header.Get("TTL") != "86400" ||
		r.Header.Get("Urgency") != "normal" {
		p.fail("headers %v", r.Header)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 4097))
	if len(body) > 4096 {
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		return
	}
	plain, err := decryptAES128GCM(body, p.ua, p.auth)
	if err != nil {
		p.fail("decrypt: %v", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.received = append(p.received, plain)
	p.mu.Unlock()
	switch r.URL.Path {
	case "/gone":
		w.WriteHeader(http.StatusGone)
	case "/missing":
		w.WriteHeader(http.StatusNotFound)
	case "/busy":
		w.Header().Set("Retry-After", "12")
		w.WriteHeader(http.StatusServiceUnavailable)
	case "/toolarge":
		w.WriteHeader(http.StatusRequestEntityTooLarge)
	default:
		w.Header().Set("Location", "/m/1")
		w.WriteHeader(http.StatusCreated)
	}
}

// subscription returns the PushSubscription JSON for endpoint.
func (p *webPushReceiver) subscription(endpoint string) string {
	b, _ := json.Marshal(map[string]any{
		"endpoint": endpoint, "expirationTime": nil,
		"keys": map[string]string{"p256dh": b64(p.ua.PublicKey().Bytes()), "auth": b64(p.auth)},
	})
	return string(b)
}

func newWebPush(tb testing.TB) (*WebPushSender, *webPushReceiver, string) {
	tb.Helper()
	k, err := GenerateVAPIDKey()
	require.NoError(tb, err)
	pub, err := VAPIDPublicKey(k)
	require.NoError(tb, err)
	ua, err := ecdh.P256().GenerateKey(rand.Reader)
	require.NoError(tb, err)
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	c := newClock()
	p := &webPushReceiver{tb: tb, vapid: pub, subject: "mailto:ops@example.com", ua: ua, auth: auth, clock: c}
	srv := tlsServer(tb, p, true)
	s, err := NewWebPush(WebPushConfig{VAPIDKey: k, Subject: p.subject, Network: trusting(srv), Now: c.Now})
	require.NoError(tb, err)
	require.Equal(tb, pub, s.PublicKey())
	return s, p, srv.URL
}

func TestWebPushDelivers(t *testing.T) {
	t.Parallel()
	s, p, base := newWebPush(t)
	d := Device{Provider: WebPush, Token: p.subscription(base + "/push/abc")}
	n := ForMessage("General", "Ada", "héllo wörld", "ch1", "m1")
	require.NoError(t, s.Send(context.Background(), d, n))
	p.check()
	require.Len(t, p.received, 1)
	require.JSONEq(t, `{"title":"General","body":"Ada: héllo wörld","data":{"channelId":"ch1","messageId":"m1"}}`,
		string(p.received[0]))
}

func TestWebPushResponses(t *testing.T) {
	t.Parallel()
	s, p, base := newWebPush(t)
	cases := []struct {
		path  string
		kind  Kind
		after time.Duration
	}{
		{"/gone", Gone, 0},
		{"/missing", Gone, 0},
		{"/busy", Retry, 12 * time.Second},
		{"/toolarge", Permanent, 0},
	}
	for _, tc := range cases {
		err := s.Send(context.Background(), Device{Provider: WebPush, Token: p.subscription(base + tc.path)},
			ForMessage("c", "s", "t", "ch", "m"))
		var pe *Error
		require.ErrorAs(t, err, &pe, tc.path)
		require.Equal(t, tc.kind, pe.Kind, tc.path)
		require.Equal(t, tc.after, pe.RetryAfter, tc.path)
	}
	p.check()
	require.Len(t, p.received, len(cases), "every request was decrypted")

	err := s.Send(context.Background(), Device{Provider: WebPush, Token: `{"endpoint":"` + base + `"}`}, Notification{})
	require.ErrorIs(t, err, ErrGone, "a subscription without keys never works")
	err = s.Send(context.Background(), Device{Provider: WebPush, Token: p.subscription(base)},
		Notification{Title: strings.Repeat("x", MaxWebPushPayload)})
	require.ErrorIs(t, err, ErrPermanent, "too large")
}

func TestWebPushEndpointFollowsAddressRules(t *testing.T) {
	t.Parallel()
	s, p, base := newWebPush(t)
	strict, err := NewWebPush(WebPushConfig{VAPIDKey: s.cfg.VAPIDKey, Subject: p.subject,
		Network: Network{TLSConfig: s.cfg.Network.TLSConfig}})
	require.NoError(t, err)
	err = strict.Send(context.Background(), Device{Provider: WebPush, Token: p.subscription(base)}, Notification{})
	require.ErrorIs(t, err, ErrPermanent)
	require.ErrorIs(t, err, webhook.ErrBlockedAddress)
	require.Empty(t, p.received)
}

func TestWebPushConfig(t *testing.T) {
	t.Parallel()
	k, err := GenerateVAPIDKey()
	require.NoError(t, err)
	_, err = NewWebPush(WebPushConfig{Subject: "mailto:a@b.c"})
	require.Error(t, err)
	_, err = NewWebPush(WebPushConfig{VAPIDKey: k, Subject: "a@b.c"})
	require.Error(t, err)
	s, err := NewWebPush(WebPushConfig{VAPIDKey: k, Subject: "https://chat.example.com/contact"})
	require.NoError(t, err)
	require.Equal(t, 24*time.Hour, s.cfg.TTL)
	require.Equal(t, "normal", s.cfg.Urgency)
}

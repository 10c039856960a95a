package webhook

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of the Standard Webhooks scheme (https://www.standardwebhooks.com).
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// DefaultSignatureHeader is the header that carries the spec's SHA-1
// signature unless Config.SignatureHeader names another.
const DefaultSignatureHeader = "X-Service-Signature"

// DefaultTolerance is the largest difference between a delivery's
// webhook-timestamp and the receiver's clock that VerifyStandard accepts
// when given a zero tolerance.
const DefaultTolerance = 5 * time.Minute

// Errors returned by VerifyStandard.
var (
	ErrMissingSignature = errors.New("webhook: missing signature headers")
	ErrTimestamp        = errors.New("webhook: timestamp missing, malformed or outside the tolerance")
	ErrSignature        = errors.New("webhook: signature mismatch")
)

// Sign returns the value of the spec's signature header for body:
// "sha1=" followed by the lowercase hex HMAC-SHA1 of the exact body bytes,
// keyed with secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha1.New, secret)
	m.Write(body)
	return "sha1=" + hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether header (the value of the spec's signature header,
// "sha1=<hex>") is the signature of body under secret. The comparison is in
// constant time; upper-case hex digits are accepted.
func Verify(secret, body []byte, header string) bool {
	header = strings.TrimSpace(header)
	if len(header) < 5 || !strings.EqualFold(header[:5], "sha1=") {
		return false
	}
	got, err := hex.DecodeString(header[5:])
	if err != nil {
		return false
	}
	m := hmac.New(sha1.New, secret)
	m.Write(body)
	return hmac.Equal(got, m.Sum(nil))
}

// SignStandard returns the value of the webhook-signature header of the
// Standard Webhooks scheme: "v1," followed by the base64 HMAC-SHA256 of
// "<id>.<unix seconds of ts>.<body>". The key is StandardKey(secret): for a
// secret of the form "whsec_<base64>" (what the Service generates) the
// decoded bytes, as Standard Webhooks libraries expect, so a receiver can
// pass the secret to such a library unchanged; for any other secret its
// bytes as they are.
func SignStandard(secret []byte, id string, ts time.Time, body []byte) string {
	return "v1," + base64.StdEncoding.EncodeToString(standardMAC(StandardKey(secret), id, strconv.FormatInt(ts.Unix(), 10), body))
}

// StandardKey returns the HMAC-SHA256 key of the Standard Webhooks
// signature for a webhook secret: the base64-decoded remainder of a
// "whsec_" secret, or the secret's own bytes when it has no such prefix or
// the remainder is not base64.
func StandardKey(secret []byte) []byte {
	const prefix = "whsec_"
	if len(secret) > len(prefix) && string(secret[:len(prefix)]) == prefix {
		if k, err := base64.StdEncoding.DecodeString(string(secret[len(prefix):])); err == nil && len(k) > 0 {
			return k
		}
	}
	return secret
}

func standardMAC(secret []byte, id, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// VerifyStandard checks the Standard Webhooks headers of a delivery
// (webhook-id, webhook-timestamp, webhook-signature) against body and
// secret (keyed as SignStandard says). The timestamp must be within tolerance of now (DefaultTolerance
// when tolerance is 0), which protects against replays. The signature header
// may hold several space-separated "v1,<base64>" values; one match
// suffices. It returns nil, ErrMissingSignature, ErrTimestamp or
// ErrSignature.
func VerifyStandard(secret []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	id, ts, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" || ts == "" || sigs == "" {
		return ErrMissingSignature
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrTimestamp
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrTimestamp
	}
	want := standardMAC(StandardKey(secret), id, ts, body)
	for _, s := range strings.Fields(sigs) {
		v, b64, ok := strings.Cut(s, ",")
		if !ok || v != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(b64)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrSignature
}

package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The test vector of docs/api.md section 10.
func TestSignVector(t *testing.T) {
	t.Parallel()
	secret, body := []byte("It's a Secret to Everybody"), []byte("Hello, World!")
	const want = "sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59"
	require.Equal(t, want, Sign(secret, body))
	require.True(t, Verify(secret, body, want))
}

func TestVerify(t *testing.T) {
	t.Parallel()
	secret, body := []byte("It's a Secret to Everybody"), []byte("Hello, World!")
	good := "sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59"
	for _, tc := range []struct {
		name   string
		secret string
		body   string
		header string
		want   bool
	}{
		{"exact", string(secret), string(body), good, true},
		{"upper-case hex and prefix", string(secret), string(body), "SHA1=" + strings.ToUpper(good[5:]), true},
		{"surrounding spaces", string(secret), string(body), " " + good + " ", true},
		{"other body", string(secret), "Hello, World?", good, false},
		{"other secret", "It's a secret to everybody", string(body), good, false},
		{"no prefix", string(secret), string(body), good[5:], false},
		{"sha256 prefix", string(secret), string(body), "sha256=" + good[5:], false},
		{"truncated", string(secret), string(body), good[:len(good)-2], false},
		{"not hex", string(secret), string(body), "sha1=zz" + good[7:], false},
		{"empty", string(secret), string(body), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Verify([]byte(tc.secret), []byte(tc.body), tc.header))
		})
	}
}

func TestSignStandard(t *testing.T) {
	t.Parallel()
	secret, body := []byte("s3cret"), []byte(`{"requestId":"r1"}`)
	ts := time.Unix(1700000000, 0)
	sig := SignStandard(secret, "r1", ts, body)

	// Independent computation of the Standard Webhooks signature.
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("r1.1700000000." + string(body)))
	require.Equal(t, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)), sig)

	h := http.Header{}
	h.Set(HeaderID, "r1")
	h.Set(HeaderTimestamp, "1700000000")
	h.Set(HeaderSignature, sig)
	require.NoError(t, VerifyStandard(secret, h, body, ts.Add(time.Minute), 0))

	for _, tc := range []struct {
		name string
		edit func(h http.Header)
		body string
		now  time.Time
		want error
	}{
		{"too old", nil, string(body), ts.Add(DefaultTolerance + time.Second), ErrTimestamp},
		{"from the future", nil, string(body), ts.Add(-DefaultTolerance - time.Second), ErrTimestamp},
		{"other body", nil, `{"requestId":"r2"}`, ts, ErrSignature},
		{"other id", func(h http.Header) { h.Set(HeaderID, "r2") }, string(body), ts, ErrSignature},
		{"other timestamp", func(h http.Header) { h.Set(HeaderTimestamp, "1700000001") }, string(body), ts, ErrSignature},
		{"bad timestamp", func(h http.Header) { h.Set(HeaderTimestamp, "soon") }, string(body), ts, ErrTimestamp},
		{"missing signature", func(h http.Header) { h.Del(HeaderSignature) }, string(body), ts, ErrMissingSignature},
		{"several signatures, one good", func(h http.Header) { h.Set(HeaderSignature, "v1,AAAA "+sig) }, string(body), ts, nil},
		{"wrong version", func(h http.Header) { h.Set(HeaderSignature, "v2,"+sig[3:]) }, string(body), ts, ErrSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := h.Clone()
			if tc.edit != nil {
				tc.edit(h)
			}
			err := VerifyStandard(secret, h, []byte(tc.body), tc.now, 0)
			if tc.want == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.want)
			}
		})
	}
	require.NoError(t, VerifyStandard(secret, h, body, ts.Add(time.Hour), 2*time.Hour), "custom tolerance")
}

// The published Standard Webhooks test vector: a "whsec_" secret is keyed
// with its base64-decoded bytes, so receivers' Standard Webhooks libraries
// accept what the dispatcher sends.
func TestStandardWebhooksVector(t *testing.T) {
	t.Parallel()
	secret := []byte("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	body := []byte(`{"test": 2432232314}`)
	ts := time.Unix(1614265330, 0)
	const want = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	require.Equal(t, want, SignStandard(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", ts, body))
	h := http.Header{}
	h.Set(HeaderID, "msg_p5jXN8AQM9LWM0D4loKWxJek")
	h.Set(HeaderTimestamp, "1614265330")
	h.Set(HeaderSignature, want)
	require.NoError(t, VerifyStandard(secret, h, body, ts, 0))

	key, _ := base64.StdEncoding.DecodeString("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	require.Equal(t, key, StandardKey(secret))
	require.Equal(t, []byte("plain"), StandardKey([]byte("plain")))
	require.Equal(t, []byte("whsec_not base64!"), StandardKey([]byte("whsec_not base64!")))
}

package push

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

const (
	fcmProject = "chat-test-1"
	fcmEmail   = "push@chat-test-1.iam.gserviceaccount.com"
	fcmKeyID   = "0123456789abcdef"
)

// fcmStandIn plays Google's token endpoint and the FCM v1 send endpoint.
// The token endpoint verifies the JWT assertion (RS256 with the service
// account's public key, its kid, iss, scope, aud and lifetime) and issues
// access tokens; the send endpoint requires the last issued token as the
// bearer, the project's path and a well-formed message.
type fcmStandIn struct {
	tb       testing.TB
	pub      *rsa.PublicKey
	tokenURL string

	mu        sync.Mutex
	issued    []string
	revoked   map[string]bool
	messages  []map[string]any
	answers   map[string]func(w http.ResponseWriter) // by registration token
	failures  []string
	exchanges int
}

func (f *fcmStandIn) fail(format string, args ...any) {
	f.mu.Lock()
	f.failures = append(f.failures, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}

func (f *fcmStandIn) check() {
	f.tb.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Empty(f.tb, f.failures)
}

// rpcError writes a google.rpc.Status error body with an FCM error code
// and, optionally, a field violation.
func rpcError(w http.ResponseWriter, code int, status, fcmCode, field string) {
	var details []map[string]any
	if fcmCode != "" {
		details = append(details, map[string]any{
			"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": fcmCode})
	}
	if field != "" {
		details = append(details, map[string]any{
			"@type":           "type.googleapis.com/google.rpc.BadRequest",
			"fieldViolations": []map[string]string{{"field": field, "description": "Invalid registration token"}}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code": code, "message": status, "status": status, "details": details}})
}

func (f *fcmStandIn) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
		http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
		return
	}
	if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		f.fail("grant_type %q", r.PostForm.Get("grant_type"))
		http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	pub := f.pub
	f.mu.Unlock()
	tok, err := jwt.Parse(r.PostForm.Get("assertion"), func(t *jwt.Token) (any, error) { return pub, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithAudience(f.tokenURL), jwt.WithIssuer(fcmEmail),
		jwt.WithIssuedAt(), jwt.WithExpirationRequired())
	if err != nil {
		f.fail("assertion: %v", err)
		http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
		return
	}
	claims := tok.Claims.(jwt.MapClaims)
	iat, _ := claims.GetIssuedAt()
	exp, _ := claims.GetExpirationTime()
	if tok.Header["kid"] != fcmKeyID || claims["scope"] != "https://www.googleapis.com/auth/firebase.messaging" ||
		exp.Sub(iat.Time) > time.Hour {
		f.fail("assertion header %v claims %v", tok.Header, claims)
		http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.exchanges++
	access := fmt.Sprintf("ya29.access-%d", f.exchanges)
	f.issued = append(f.issued, access)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": 3599})
}

func (f *fcmStandIn) send(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/projects/"+fcmProject+"/messages:send" {
		rpcError(w, http.StatusForbidden, "PERMISSION_DENIED", "", "")
		return
	}
	bearer, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	f.mu.Lock()
	valid := len(f.issued) > 0 && bearer == f.issued[len(f.issued)-1] && !f.revoked[bearer]
	f.mu.Unlock()
	if !valid {
		rpcError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "", "")
		return
	}
	var body struct {
		Message struct {
			Token        string            `json:"token"`
			Notification map[string]string `json:"notification"`
			Data         map[string]string `json:"data"`
		} `json:"message"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Message.Token == "" {
		f.fail("message: %v %+v", err, body)
		rpcError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "")
		return
	}
	m := body.Message
	f.mu.Lock()
	f.messages = append(f.messages, map[string]any{"token": m.Token, "notification": m.Notification, "data": m.Data})
	answer := f.answers[m.Token]
	f.mu.Unlock()
	if answer != nil {
		answer(w)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"name": "projects/" + fcmProject + "/messages/0:1"})
}

// newFCM starts a stand-in and a sender configured for it through a
// service account key file, as downloaded from the Firebase console.
func newFCM(tb testing.TB) (*FCMSender, *fcmStandIn) {
	tb.Helper()
	key := testRSAKey(tb)
	f := &fcmStandIn{tb: tb, pub: &key.PublicKey, revoked: map[string]bool{}, answers: map[string]func(http.ResponseWriter){}}
	mux := http.NewServeMux()
	mux.HandleFunc("/token", f.token)
	mux.HandleFunc("/", f.send)
	srv := tlsServer(tb, mux, true)
	f.tokenURL = srv.URL + "/token"
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(tb, err)
	creds, err := json.Marshal(map[string]string{
		"type":           "service_account",
		"project_id":     fcmProject,
		"private_key_id": fcmKeyID,
		"private_key":    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":   fcmEmail,
		"token_uri":      f.tokenURL,
	})
	require.NoError(tb, err)
	s, err := NewFCM(FCMConfig{Credentials: creds, Endpoint: srv.URL, Network: trusting(srv)})
	require.NoError(tb, err)
	return s, f
}

var (
	rsaOnce sync.Once
	rsaKey  *rsa.PrivateKey
	rsaErr  error
)

// testRSAKey returns one RSA key for all tests (generating one is slow).
func testRSAKey(tb testing.TB) *rsa.PrivateKey {
	rsaOnce.Do(func() { rsaKey, rsaErr = rsa.GenerateKey(rand.Reader, 2048) })
	require.NoError(tb, rsaErr)
	return rsaKey
}

func TestFCMSendsWithServiceAccountToken(t *testing.T) {
	t.Parallel()
	s, f := newFCM(t)
	ctx := context.Background()
	d := Device{Provider: FCM, Token: "fcm-token-1"}
	require.NoError(t, s.Send(ctx, d, ForMessage("General", "Ada", "hello", "ch1", "m1")))
	require.NoError(t, s.Send(ctx, d, ForMessage("General", "Bob", "again", "ch1", "m2")))
	f.check()
	require.Equal(t, 1, f.exchanges, "the access token is reused")
	require.Len(t, f.messages, 2)
	require.Equal(t, map[string]any{
		"token":        "fcm-token-1",
		"notification": map[string]string{"title": "General", "body": "Ada: hello"},
		"data":         map[string]string{"channelId": "ch1", "messageId": "m1"},
	}, f.messages[0])
}

func TestFCMResponses(t *testing.T) {
	t.Parallel()
	s, f := newFCM(t)
	cases := []struct {
		name       string
		answer     func(w http.ResponseWriter)
		kind       Kind
		reason     string
		retryAfter time.Duration
	}{
		{"unregistered", func(w http.ResponseWriter) {
			rpcError(w, http.StatusNotFound, "NOT_FOUND", "UNREGISTERED", "")
		}, Gone, "UNREGISTERED", 0},
		{"invalid token", func(w http.ResponseWriter) {
			rpcError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "message.token")
		}, Gone, "invalid registration token", 0},
		{"sender mismatch", func(w http.ResponseWriter) {
			rpcError(w, http.StatusForbidden, "PERMISSION_DENIED", "SENDER_ID_MISMATCH", "")
		}, Gone, "SENDER_ID_MISMATCH", 0},
		{"bad payload", func(w http.ResponseWriter) {
			rpcError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "message.data")
		}, Permanent, "INVALID_ARGUMENT", 0},
		{"third party auth", func(w http.ResponseWriter) {
			rpcError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR", "")
		}, Permanent, "THIRD_PARTY_AUTH_ERROR", 0},
		{"unavailable", func(w http.ResponseWriter) {
			rpcError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "UNAVAILABLE", "")
		}, Retry, "UNAVAILABLE", 0},
		{"quota", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "30")
			rpcError(w, http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", "")
		}, Retry, "QUOTA_EXCEEDED", 30 * time.Second},
		{"internal", func(w http.ResponseWriter) {
			rpcError(w, http.StatusInternalServerError, "INTERNAL", "INTERNAL", "")
		}, Retry, "INTERNAL", 0},
	}
	for _, tc := range cases {
		f.mu.Lock()
		f.answers[tc.name] = tc.answer
		f.mu.Unlock()
		err := s.Send(context.Background(), Device{Provider: FCM, Token: tc.name}, ForMessage("c", "s", "t", "ch", "m"))
		var pe *Error
		require.ErrorAs(t, err, &pe, tc.name)
		require.Equal(t, tc.kind, pe.Kind, tc.name)
		require.Equal(t, tc.reason, pe.Reason, tc.name)
		require.Equal(t, tc.retryAfter, pe.RetryAfter, tc.name)
	}
	f.check()
}

func TestFCMRefusedBearerIsRenewed(t *testing.T) {
	t.Parallel()
	s, f := newFCM(t)
	ctx := context.Background()
	d := Device{Provider: FCM, Token: "fcm-token-1"}
	require.NoError(t, s.Send(ctx, d, ForMessage("c", "s", "t", "ch", "m")))
	f.mu.Lock()
	f.revoked[f.issued[0]] = true
	f.mu.Unlock()
	err := s.Send(ctx, d, ForMessage("c", "s", "t", "ch", "m"))
	require.ErrorIs(t, err, ErrRetry)
	require.NoError(t, s.Send(ctx, d, ForMessage("c", "s", "t", "ch", "m")))
	f.check()
	require.Equal(t, 2, f.exchanges)
	require.Len(t, f.messages, 2)
}

func TestFCMTokenExchangeRefusedIsPermanent(t *testing.T) {
	t.Parallel()
	s, f := newFCM(t)
	// A key the token endpoint does not know: the assertion fails its check.
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	f.mu.Lock()
	f.pub = &other.PublicKey
	f.mu.Unlock()
	err = s.Send(context.Background(), Device{Provider: FCM, Token: "x"}, ForMessage("c", "s", "t", "ch", "m"))
	require.ErrorIs(t, err, ErrPermanent)
	require.Contains(t, err.Error(), "token exchange")
	require.Empty(t, f.messages)
}

func TestFCMConfig(t *testing.T) {
	t.Parallel()
	_, err := NewFCM(FCMConfig{Credentials: []byte("{")})
	require.Error(t, err)
	_, err = NewFCM(FCMConfig{Credentials: []byte(`{"type":"authorized_user","client_email":"a","private_key":"b","project_id":"p"}`)})
	require.Error(t, err)
	_, err = NewFCM(FCMConfig{Credentials: []byte(`{"client_email":"a","private_key":"b"}`)})
	require.ErrorContains(t, err, "project")
	s, err := NewFCM(FCMConfig{Credentials: []byte(`{"client_email":"a","private_key":"b","project_id":"p"}`)})
	require.NoError(t, err)
	require.Equal(t, "https://fcm.googleapis.com/v1/projects/p/messages:send", s.url)
	require.Equal(t, GoogleTokenURL, s.jwt.TokenURL)
}

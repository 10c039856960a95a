package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/push"
	"github.com/chatengine/chat/store/memory"
)

// The push flags: APNs needs all four of its flags; each flag reads its
// variable.
func TestPushFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-apns-key-file", "k.p8"},
		{"-apns-key-file", "k.p8", "-apns-key-id", "ABC", "-apns-team-id", "T"},
		{"-apns-topic", "com.example.app"},
	} {
		_, err := parseConfig(t, args, nil)
		require.Error(t, err, "%v", args)
	}
	c, err := parseConfig(t, nil, map[string]string{"CHAT_APNS_KEY_FILE": "k.p8", "CHAT_APNS_KEY_ID": "ABC",
		"CHAT_APNS_TEAM_ID": "T", "CHAT_APNS_TOPIC": "com.example.app", "CHAT_APNS_ENDPOINT": push.APNsSandbox,
		"CHAT_FCM_CREDENTIALS_FILE": "sa.json", "CHAT_FCM_TOKEN_URL": "https://127.0.0.1:9/token",
		"CHAT_WEBPUSH_SUBJECT": "mailto:ops@example.com", "CHAT_PUSH_WITHOUT_TEXT": "true"})
	require.NoError(t, err)
	require.Equal(t, "k.p8", c.apnsKeyFile)
	require.Equal(t, push.APNsSandbox, c.apnsEndpoint)
	require.Equal(t, "sa.json", c.fcmCredentials)
	require.Equal(t, "https://127.0.0.1:9/token", c.fcmTokenURL)
	require.Equal(t, "mailto:ops@example.com", c.webPushSubject)
	require.True(t, c.pushWithoutText)
	c, err = parseConfig(t, nil, nil)
	require.NoError(t, err)
	require.Equal(t, push.APNsProduction, c.apnsEndpoint)
	require.Equal(t, push.FCMEndpoint, c.fcmEndpoint)
	require.False(t, c.pushWithoutText)
}

// The senders the flags turn on, and a key file that cannot be read.
func TestPushSenders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, err := chat.New(ctx, memory.New(), chat.Config{})
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	p8 := filepath.Join(t.TempDir(), "key.p8")
	require.NoError(t, os.WriteFile(p8, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))

	m, err := pushSenders(&config{}, svc, log)
	require.NoError(t, err)
	require.Empty(t, m, "no flags, no sender")
	cfg := &config{apnsKeyFile: p8, apnsKeyID: "ABC123DEFG", apnsTeamID: "DEF123GHIJ", apnsTopic: "com.example.app",
		apnsEndpoint: push.APNsSandbox, webPushSubject: "mailto:ops@example.com"}
	m, err = pushSenders(cfg, svc, log)
	require.NoError(t, err)
	require.NotNil(t, m[push.APNs])
	require.NotNil(t, m[push.WebPush])
	require.Nil(t, m[push.FCM])
	wp := m[push.WebPush].(*push.WebPushSender)
	k, err := svc.PushVAPIDKey()
	require.NoError(t, err)
	require.Equal(t, k.PublicKey, wp.PublicKey(), "Web Push signs with the key GET /push/vapid publishes")

	cfg.apnsKeyFile = filepath.Join(t.TempDir(), "missing.p8")
	_, err = pushSenders(cfg, svc, log)
	require.ErrorContains(t, err, "-apns-key-file")
	_, err = pushSenders(&config{fcmCredentials: filepath.Join(t.TempDir(), "missing.json")}, svc, log)
	require.ErrorContains(t, err, "-fcm-credentials-file")
}

// The whole server: with -fcm-credentials-file and -fcm-endpoint naming
// a local FCM stand-in (allowed on loopback by -allow-private-webhooks),
// a message to a channel reaches the device of the member who is away,
// with the channel's name, the sender and the text, and the message's ids.
func TestServerPushesThroughFCM(t *testing.T) {
	t.Parallel()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(rsaKey)
	require.NoError(t, err)
	type sent struct {
		bearer string
		body   map[string]any
	}
	got := make(chan sent, 4)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		// The assertion is the service account's RS256 JWT.
		if r.ParseForm() != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		_, err := jwt.Parse(r.PostForm.Get("assertion"), func(*jwt.Token) (any, error) { return &rsaKey.PublicKey, nil },
			jwt.WithValidMethods([]string{"RS256"}))
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"at-1","token_type":"Bearer","expires_in":3600}`)
	})
	mux.HandleFunc("POST /v1/projects/proj-1/messages:send", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		got <- sent{r.Header.Get("Authorization"), body}
		_, _ = io.WriteString(w, `{"name":"projects/proj-1/messages/1"}`)
	})
	fcm := httptest.NewServer(mux)
	defer fcm.Close()
	sa, err := json.Marshal(map[string]string{"type": "service_account", "project_id": "proj-1", "private_key_id": "k1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "push@proj-1.iam.gserviceaccount.com", "token_uri": fcm.URL + "/token"})
	require.NoError(t, err)
	saFile := filepath.Join(t.TempDir(), "sa.json")
	require.NoError(t, os.WriteFile(saFile, sa, 0o600))

	s := start(t, "-store", "memory", "-allow-private-webhooks", "-fcm-credentials-file", saFile, "-fcm-endpoint", fcm.URL)
	admin := s.token(t)
	code, _ := s.call(t, admin, "POST", "/api/v2/channel", map[string]any{"channelId": "lobby", "type": "standard",
		"displayName": "Lobby", "userIds": []string{"ann", "bob"}})
	require.Equal(t, http.StatusOK, code)
	code, _ = s.call(t, admin, "POST", "/api/v2/users/bob/devices", map[string]any{"provider": "firebase", "token": "bob-phone"})
	require.Equal(t, http.StatusOK, code)
	code, minted := s.call(t, admin, "POST", "/api/v2/users/ann/token", map[string]any{"ttl": 3600})
	require.Equal(t, http.StatusOK, code)
	code, posted := s.call(t, minted["token"].(string), "POST", "/api/v2/message", map[string]any{"channelId": "lobby",
		"type": "text", "data": map[string]any{"text": "hello bob"}})
	require.Equal(t, http.StatusOK, code)
	messageID := posted["messages"].([]any)[0].(map[string]any)["messageId"].(string)

	select {
	case p := <-got:
		require.Equal(t, "Bearer at-1", p.bearer)
		m := p.body["message"].(map[string]any)
		require.Equal(t, "bob-phone", m["token"])
		require.Equal(t, map[string]any{"title": "Lobby", "body": "ann: hello bob"}, m["notification"])
		require.Equal(t, map[string]any{"channelId": "lobby", "messageId": messageID}, m["data"])
	case <-time.After(30 * time.Second):
		t.Fatalf("no push reached the stand-in\n%s", s.stderr.String())
	}
	code, vapid := s.call(t, admin, "GET", "/api/v2/push/vapid", nil)
	require.Equal(t, http.StatusOK, code)
	require.NotEmpty(t, vapid["publicKey"])
}

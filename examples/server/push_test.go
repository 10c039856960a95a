package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

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

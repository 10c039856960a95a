package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/sqlite"
	"github.com/chatengine/chat/webhook"
)

// TestDrain stops the server while a request body is still being sent.
// During the drain delay /readyz answers 503 while the listener still
// accepts connections (/livez answers 200 on a new one); run does not
// return while the request is in flight; the request then completes and
// run returns nil (exit status 0); afterwards connections are refused.
func TestDrain(t *testing.T) {
	t.Parallel()
	s := start(t, "-store", "memory", "-drain-delay", "10s")
	tok := s.token(t)
	code, _ := s.call(t, tok, "POST", "/api/v2/channel", map[string]any{"channelId": "c", "type": "standard"})
	require.Equal(t, 200, code)
	code, _ = s.call(t, "", "GET", "/readyz", nil)
	require.Equal(t, 200, code)

	pr, pw := io.Pipe()
	req, err := http.NewRequest("POST", s.base+"/api/v2/message", pr)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	// With Expect: 100-continue the client sends the body only once the
	// handler reads it, so when the first write below returns the request
	// is in the handler. Its own transport keeps it off the connections
	// that the shutdown closes while idle.
	req.Header.Set("Expect", "100-continue")
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
	defer client.CloseIdleConnections()
	type result struct {
		code int
		body string
		err  error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := client.Do(req)
		if err != nil {
			res <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		res <- result{code: resp.StatusCode, body: string(b)}
	}()
	_, err = pw.Write([]byte(`{"channelId":"c","type":"text",`))
	require.NoError(t, err)

	stopped := make(chan error, 1)
	go func() { stopped <- s.stop(t) }()
	// /readyz flips as soon as the shutdown begins; wait for that (the
	// cancellation reaches the server asynchronously), well inside the
	// 10 s drain delay.
	deadline := time.Now().Add(8 * time.Second)
	for {
		code, body := s.call(t, "", "GET", "/readyz", nil)
		if code == 503 {
			require.Equal(t, "shutting down", body["status"])
			break
		}
		require.Equal(t, 200, code)
		require.True(t, time.Now().Before(deadline), "/readyz never answered 503")
		time.Sleep(10 * time.Millisecond)
	}
	// The listener is still open: a new connection is served.
	code, _ = s.call(t, "", "GET", "/livez", nil)
	require.Equal(t, 200, code, "listener closed during the drain delay")
	select {
	case err := <-stopped:
		t.Fatalf("run returned (%v) during the drain delay", err)
	default:
	}

	_, err = pw.Write([]byte(`"data":{"text":"drained"}}`))
	require.NoError(t, err)
	require.NoError(t, pw.Close())
	r := <-res
	require.NoError(t, r.err, s.stderr.String())
	require.Equal(t, 200, r.code, r.body)
	require.Contains(t, r.body, "drained")

	require.NoError(t, <-stopped, "exit status 0")
	_, err = http.Get(s.base + "/livez")
	require.Error(t, err, "connections accepted after the shutdown")
	require.Contains(t, s.stderr.String(), "shutdown complete")
}

// TestDrainFinishesWebhookDelivery stops the server while a webhook
// delivery is in flight: the receiver holds the request until the drain
// delay is over and the listener refuses connections. /readyz answers 503
// during the delay; run does not return while the delivery is held; once
// released, the attempt is recorded: run returns nil (exit status 0), the
// receiver saw exactly one request, and the store holds the delivery as
// delivered after one attempt, with no lease left that would make another
// process send it again.
func TestDrainFinishesWebhookDelivery(t *testing.T) {
	t.Parallel()
	requireSQLite(t)
	secret := "drain secret"
	arrived := make(chan string, 16)
	release := make(chan struct{})
	var mu sync.Mutex
	var seen []string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(webhook.HeaderID)
		mu.Lock()
		seen = append(seen, id)
		mu.Unlock()
		arrived <- id
		select {
		case <-release:
			w.WriteHeader(http.StatusNoContent)
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(recv.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})

	path := filepath.Join(t.TempDir(), "chat.db")
	s := start(t, "-store", "sqlite:"+path, "-drain-delay", "1s",
		"-webhook-url", recv.URL+"/hook", "-webhook-secret", secret, "-allow-private-webhooks")
	tok := s.token(t)
	code, body := s.call(t, tok, "POST", "/api/v2/channel", map[string]any{"channelId": "c", "type": "standard"})
	require.Equal(t, 200, code, "%v", body)
	var requestID string
	select {
	case requestID = <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("no webhook delivery arrived")
	}
	require.NotEmpty(t, requestID)

	stopped := make(chan error, 1)
	go func() { stopped <- s.stop(t) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _ := s.call(t, "", "GET", "/readyz", nil)
		if code == 503 {
			break
		}
		require.Equal(t, 200, code)
		require.True(t, time.Now().Before(deadline), "/readyz never answered 503")
		time.Sleep(10 * time.Millisecond)
	}
	// Past the drain delay the listener closes; the delivery is still held.
	for {
		c, err := net.DialTimeout("tcp", strings.TrimPrefix(s.base, "http://"), time.Second)
		if err != nil {
			break
		}
		c.Close()
		require.True(t, time.Now().Before(deadline), "the listener never closed")
		time.Sleep(10 * time.Millisecond)
	}
	require.Contains(t, s.stderr.String(), "drain delay over")
	select {
	case err := <-stopped:
		t.Fatalf("run returned (%v) while a webhook delivery was in flight", err)
	default:
	}

	close(release)
	require.NoError(t, <-stopped, "exit status 0\n%s", s.stderr.String())
	require.Contains(t, s.stderr.String(), "shutdown complete")
	mu.Lock()
	require.Equal(t, []string{requestID}, seen, "the receiver saw exactly one request")
	mu.Unlock()

	st, err := sqlite.Open(context.Background(), path, nil)
	require.NoError(t, err)
	defer st.Close()
	require.NoError(t, st.View(context.Background(), func(tx chat.Tx) error {
		d, err := tx.GetDelivery(context.Background(), requestID)
		require.NoError(t, err)
		require.Equal(t, chat.DeliveryDelivered, d.State)
		require.Equal(t, 1, d.Attempts)
		require.Empty(t, d.LeaseOwner)
		require.Nil(t, d.LeaseUntil)
		as, err := tx.ListAttempts(context.Background(), requestID)
		require.NoError(t, err)
		require.Len(t, as, 1)
		require.Equal(t, http.StatusNoContent, as[0].StatusCode)
		ds, err := tx.ListDeliveries(context.Background(), d.WebhookID, "", 10)
		require.NoError(t, err)
		require.Len(t, ds, 1, "one event, one delivery")
		return nil
	}))
}

package main

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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

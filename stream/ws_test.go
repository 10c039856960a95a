package stream_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/stream"
)

// wsServer serves hub.ServeEvents for an admin caller.
func wsServer(t *testing.T, e *env) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := e.hub.ServeEvents(w, r, stream.Caller{UserID: e.admin, Admin: true}); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

// TestWebSocketIdleGoroutines: an idle WebSocket stream holds one
// goroutine on the server (the one that reads the connection); a writer
// runs only while there is something to send. Connections counts the
// open streams and falls back to zero when they close.
func TestWebSocketIdleGoroutines(t *testing.T) {
	e := newEnv(t, memory.New(), stream.Config{MaxStreamsPerCaller: -1}) // many connections of one caller
	e.channel("c", "alice")
	url := wsServer(t, e)
	const n = 40
	runtime.GC()
	base := runtime.NumGoroutine()
	var conns []*websocket.Conn
	for range n {
		c, _, err := websocket.Dial(e.ctx, url, nil)
		require.NoError(t, err)
		t.Cleanup(func() { c.CloseNow() })
		_, _, err = c.Read(e.ctx) // stream.didConnect
		require.NoError(t, err)
		conns = append(conns, c)
	}
	require.Equal(t, n, e.hub.Connections())
	// The clients read nothing now (no goroutine on their side); each
	// server connection settles at its reader once the handler returned.
	require.Eventually(t, func() bool { return runtime.NumGoroutine()-base <= n+2 }, 10*time.Second, 5*time.Millisecond,
		"goroutines: %d more than before %d connections", runtime.NumGoroutine()-base, n)

	// An event wakes a writer per connection: every client receives it,
	// and the writers exit again.
	e.post("alice", "c", "hello")
	for _, c := range conns {
		_, b, err := c.Read(e.ctx)
		require.NoError(t, err)
		require.Contains(t, string(b), `"text":"hello"`)
	}
	require.Eventually(t, func() bool { return runtime.NumGoroutine()-base <= n+2 }, 10*time.Second, 5*time.Millisecond)

	for _, c := range conns {
		c.Close(websocket.StatusNormalClosure, "")
	}
	require.Eventually(t, func() bool { return e.hub.Connections() == 0 }, 10*time.Second, 5*time.Millisecond)
}

// TestWebSocketPing: an idle WebSocket stream is pinged every
// PingInterval, and frames queued meanwhile still arrive in order.
func TestWebSocketPing(t *testing.T) {
	e := newEnv(t, memory.New(), stream.Config{PingInterval: 5 * time.Millisecond})
	e.channel("c", "alice")
	url := wsServer(t, e)
	var pings atomic.Int64
	c, _, err := websocket.Dial(e.ctx, url, &websocket.DialOptions{OnPingReceived: func(context.Context, []byte) bool {
		pings.Add(1)
		return true
	}})
	require.NoError(t, err)
	defer c.CloseNow()
	_, _, err = c.Read(e.ctx)
	require.NoError(t, err)
	for i := range 20 {
		e.post("alice", "c", strings.Repeat("x", i+1))
	}
	for i := range 20 {
		_, b, err := c.Read(e.ctx) // pings are answered inside Read
		require.NoError(t, err)
		require.Contains(t, string(b), `"text":"`+strings.Repeat("x", i+1)+`"`)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	go func() {
		for {
			if _, _, err := c.Read(ctx); err != nil {
				return
			}
		}
	}()
	require.Eventually(t, func() bool { return pings.Load() >= 3 }, 10*time.Second, time.Millisecond)
}

// TestWebSocketStopCloses: Stop closes every WebSocket stream with 1001
// (going away).
func TestWebSocketStopCloses(t *testing.T) {
	e := newEnv(t, memory.New(), stream.Config{})
	url := wsServer(t, e)
	c, _, err := websocket.Dial(e.ctx, url, nil)
	require.NoError(t, err)
	defer c.CloseNow()
	_, _, err = c.Read(e.ctx)
	require.NoError(t, err)
	require.NoError(t, e.hub.Stop(e.ctx))
	_, _, err = c.Read(e.ctx)
	require.Equal(t, websocket.StatusGoingAway, websocket.CloseStatus(err), "err %v", err)
}

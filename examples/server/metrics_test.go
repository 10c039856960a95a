package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/internal/pgtest"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/store/postgres"
)

func scrape(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestMetrics: /metrics answers without a token beside /livez, labels
// requests with the chi route pattern (never the raw path) and exports
// the store, webhook, stream, Go runtime and process metrics.
func TestMetrics(t *testing.T) {
	t.Parallel()
	s := start(t, "-store", "memory")
	tok := s.token(t)
	code, _ := s.call(t, tok, "POST", "/api/v2/channel", map[string]any{"channelId": "secret-room", "type": "standard"})
	require.Equal(t, 200, code)
	code, _ = s.call(t, tok, "GET", "/api/v2/channel/secret-room", nil)
	require.Equal(t, 200, code)
	code, _ = s.call(t, tok, "GET", "/api/v2/channel/nope", nil)
	require.Equal(t, 404, code)

	code, text := scrape(t, s.base+"/metrics")
	require.Equal(t, 200, code)
	for _, want := range []string{
		`chat_http_requests_total{code="200",method="POST",route="/api/v2/channel"} 1`,
		`chat_http_requests_total{code="200",method="GET",route="/api/v2/channel/{channelId}"} 1`,
		`chat_http_requests_total{code="404",method="GET",route="/api/v2/channel/{channelId}"} 1`,
		`chat_http_request_duration_seconds_count{method="GET",route="/api/v2/channel/{channelId}"} 2`,
		`chat_webhook_deliveries_total{result="delivered"} 0`,
		`chat_webhook_deliveries_total{result="failed"} 0`,
		"chat_webhook_backlog 0",
		"chat_stream_connections 0",
		`chat_store_operation_duration_seconds_count{op="update"}`,
		`chat_store_operation_duration_seconds_count{op="view"}`,
		"go_goroutines ",
		"process_cpu_seconds_total ",
	} {
		require.Contains(t, text, want)
	}
	require.NotContains(t, text, "secret-room", "a raw path in a label")
	require.NotContains(t, text, "nope", "a raw path in a label")
}

// TestMetricsAddr: -metrics-addr moves /metrics to its own listener.
func TestMetricsAddr(t *testing.T) {
	t.Parallel()
	maddr := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	c := &cli{env: envOf(nil), stdout: io.Discard, stderr: &syncBuffer{},
		ready: func(a string) { ready <- a }, metricsReady: func(a string) { maddr <- a }}
	done := make(chan error, 1)
	go func() {
		done <- c.run(ctx, []string{"-store", "memory", "-addr", "127.0.0.1:0", "-drain-delay", "0s",
			"-metrics-addr", "127.0.0.1:0"})
	}()
	var base, mbase string
	for base == "" || mbase == "" {
		select {
		case a := <-ready:
			base = "http://" + a
		case a := <-maddr:
			mbase = "http://" + a
		case err := <-done:
			cancel()
			t.Fatalf("server stopped: %v", err)
		case <-time.After(30 * time.Second):
			cancel()
			t.Fatal("server did not start")
		}
	}
	code, text := scrape(t, mbase+"/metrics")
	require.Equal(t, 200, code)
	require.True(t, strings.Contains(text, "chat_http_requests_total") || strings.Contains(text, "chat_stream_connections 0"))
	code, _ = scrape(t, base+"/metrics")
	require.Equal(t, 404, code, "/metrics still on the API address")
	code, text = scrape(t, mbase+"/metrics")
	require.Equal(t, 200, code)
	require.Contains(t, text, `chat_http_requests_total{code="404",method="GET",route="unmatched"} 1`)
	cancel()
	require.NoError(t, <-done)
}

// TestMetricsStreamConnections: chat_stream_connections counts the open
// event streams of the process, WebSocket and SSE, and falls back when
// they close.
func TestMetricsStreamConnections(t *testing.T) {
	t.Parallel()
	s := start(t, "-store", "memory")
	tok := s.token(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	auth := http.Header{"Authorization": {"Bearer " + tok}}
	var conns []*websocket.Conn
	for range 2 {
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.base, "http")+"/api/v2/events", &websocket.DialOptions{HTTPHeader: auth})
		require.NoError(t, err)
		defer c.CloseNow()
		_, _, err = c.Read(ctx) // stream.didConnect: the stream is open
		require.NoError(t, err)
		conns = append(conns, c)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/api/v2/events", nil)
	req.Header = auth.Clone()
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	line, err := bufio.NewReader(res.Body).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "event: stream.didConnect\n", line)

	_, text := scrape(t, s.base+"/metrics")
	require.Contains(t, text, "\nchat_stream_connections 3\n")
	conns[0].Close(websocket.StatusNormalClosure, "")
	res.Body.Close()
	require.Eventually(t, func() bool {
		_, text := scrape(t, s.base+"/metrics")
		return strings.Contains(text, "\nchat_stream_connections 1\n")
	}, 20*time.Second, 10*time.Millisecond)
}

// TestTimedStoreKeepsInterfaces: the timing wrapper still signals commits
// (chat.OutboxWatcher), so that the stream hub wakes at once instead of
// polling, and stays an EphemeralBroker over Postgres (typing across
// processes) and only there.
func TestTimedStoreKeepsInterfaces(t *testing.T) {
	t.Parallel()
	m := newMetrics(func() int { return 0 }, func() int { return 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st := m.timeStore(memory.New())
	_, isBroker := st.(chat.EphemeralBroker)
	require.False(t, isBroker, "the memory store delivers typing in process")
	w, ok := st.(chat.OutboxWatcher)
	require.True(t, ok)
	ch, err := w.WatchOutbox(ctx)
	require.NoError(t, err)
	require.NoError(t, st.Update(ctx, func(tx chat.Tx) error {
		return tx.AppendEvents(ctx, []*chat.Event{{Name: chat.EventMessageDidCreate, Data: []byte(`{}`), CreatedAt: chat.NewTime(time.Now())}})
	}))
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatal("no signal after a commit that appended an event")
	}

	dsn := pgtest.URL(t)
	schema := pgtest.SchemaName()
	pg, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: schema, MaxOpenConns: 2})
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = pg.DB().Exec("DROP SCHEMA " + schema + " CASCADE")
		pg.Close()
	})
	_, isBroker = m.timeStore(pg).(chat.EphemeralBroker)
	require.True(t, isBroker)
}

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/internal/pgtest"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/store/postgres"
	"github.com/chatengine/chat/store/sqlite"
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
		"chat_webhook_backlog_due 0",
		"chat_webhook_in_flight 0",
		"chat_stream_connections 0",
		`chat_store_operation_duration_seconds_count{kind="update",op="CreateChannel"} 1`,
		`chat_store_operation_duration_seconds_count{kind="view",op="GetChannel"} `,
		"go_goroutines ",
		"process_cpu_seconds_total ",
	} {
		require.Contains(t, text, want)
	}
	require.NotContains(t, text, "secret-room", "a raw path in a label")
	require.NotContains(t, text, "nope", "a raw path in a label")
	// Every operation label is a name from the code: a Go identifier, or
	// a dotted name of the dispatcher, the push worker or the metrics.
	for _, m := range regexp.MustCompile(`chat_store_operation_duration_seconds_count\{kind="(\w+)",op="([^"]*)"\}`).FindAllStringSubmatch(text, -1) {
		require.Contains(t, []string{"view", "update"}, m[1])
		require.Regexp(t, `^([A-Za-z]+|webhook\.claim|webhook\.finish|push\.claim|push\.finish|push\.prune|metrics\.backlog|presence\.[a-z]+|other)$`, m[2])
	}
}

// TestTimedStoreKeepsWatcher: the timing wrapper keeps the store's commit
// signals visible, so the dispatcher and the event stream hub that get it
// wake on commits instead of polling.
func TestTimedStoreKeepsWatcher(t *testing.T) {
	m := newMetrics(func() int { return 0 }, func() int { return 0 })
	_, ok := m.timeStore(memory.New()).(chat.OutboxWatcher)
	require.True(t, ok)
	_, ok = m.timeStore(struct{ chat.Store }{memory.New()}).(chat.OutboxWatcher)
	require.False(t, ok, "a store without signals stays without")
}

// TestMetricsWebhookBacklog: chat_webhook_backlog counts the deliveries
// pending in the store, whoever enqueued them, not only this process's
// claims. A receiver answers 503 with Retry-After: 3600, so each delivery
// stays pending, due in an hour, claimed by nobody; deliveries enqueued
// through a second handle on the same database (as another process would)
// count too. The dispatcher's transactions are timed under their names.
func TestMetricsWebhookBacklog(t *testing.T) {
	t.Parallel()
	requireSQLite(t)
	var hits atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(recv.Close)
	path := filepath.Join(t.TempDir(), "chat.db")
	s := start(t, "-store", "sqlite:"+path, "-webhook-url", recv.URL, "-webhook-secret", "k", "-allow-private-webhooks")
	tok := s.token(t)
	for _, id := range []string{"a", "b", "c"} {
		code, body := s.call(t, tok, "POST", "/api/v2/channel", map[string]any{"channelId": id, "type": "standard"})
		require.Equal(t, 200, code, "%v", body)
	}
	waitMetric(t, s.base, `chat_webhook_deliveries_total{result="pending"} 3`)
	// The backlog is read again at most once a second. A delivery sent
	// at once by the process that enqueued it is in the outbox (SQLite)
	// from the moment its attempt is recorded.
	waitMetric(t, s.base, "chat_webhook_backlog 3\n")
	_, text := scrape(t, s.base+"/metrics")
	require.Contains(t, text, "chat_webhook_backlog_due 0\n", "each pending, due in an hour")
	require.Contains(t, text, "chat_webhook_in_flight 0\n")
	require.Contains(t, text, `chat_store_operation_duration_seconds_count{kind="update",op="webhook.claim"} `)
	require.Contains(t, text, `chat_store_operation_duration_seconds_count{kind="update",op="webhook.finish"} `)
	require.EqualValues(t, 3, hits.Load())

	// Another handle on the database enqueues two deliveries, one due now
	// and one in an hour, each already leased by another owner.
	other, err := sqlite.Open(context.Background(), path, nil)
	require.NoError(t, err)
	defer other.Close()
	now := time.Now()
	leased := chat.NewTime(now.Add(time.Hour))
	require.NoError(t, other.Update(context.Background(), func(tx chat.Tx) error {
		ws, err := tx.ListWebhooks(context.Background())
		if err != nil {
			return err
		}
		require.Len(t, ws, 1)
		var ds []*chat.Delivery
		for i, at := range []time.Time{now, now.Add(time.Hour)} {
			ds = append(ds, &chat.Delivery{RequestID: fmt.Sprintf("elsewhere-%d", i), WebhookID: ws[0].WebhookID,
				Event: chat.EventChannelDidCreate, Body: []byte(`{}`), State: chat.DeliveryPending,
				NextAttemptAt: chat.NewTime(at), LeaseOwner: "another-process", LeaseUntil: &leased,
				CreatedAt: chat.NewTime(now), UpdatedAt: chat.NewTime(now)})
		}
		return tx.EnqueueDeliveries(context.Background(), ds)
	}))
	waitMetric(t, s.base, "chat_webhook_backlog 5\n")
	_, text = scrape(t, s.base+"/metrics")
	require.Contains(t, text, "chat_webhook_backlog_due 1\n", "the one due now, leased elsewhere")
	require.Contains(t, text, "chat_webhook_in_flight 0\n", "this process claimed none of them")
}

// waitMetric scrapes base's /metrics until it contains want.
func waitMetric(t *testing.T, base, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, text := scrape(t, base+"/metrics")
		if strings.Contains(text, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q in /metrics within 30 s; chat_webhook lines:\n%s", want, webhookLines(text))
		}
		time.Sleep(50 * time.Millisecond)
	}
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
// polling, passes SQLite's recent events through (chat.RecentEventReader),
// and stays an EphemeralBroker over Postgres (typing across processes)
// and only there.
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
	// The memory store keeps no recent events: the log is read.
	r, ok := st.(chat.RecentEventReader)
	require.True(t, ok)
	require.Nil(t, r.RecentEvents(0, 10))

	// SQLite's recent events stay readable through the wrapper (the
	// SQLite store needs cgo; .ci/run also tests this package without).
	if cgoEnabled {
		checkRecentEvents(t, m)
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

// checkRecentEvents: the wrapper of a SQLite store serves the events the
// store committed last (chat.RecentEventReader).
func checkRecentEvents(t *testing.T, m *metrics) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sq, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "chat.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { sq.Close() })
	sst := m.timeStore(sq)
	require.NoError(t, sst.Update(ctx, func(tx chat.Tx) error {
		return tx.AppendEvents(ctx, []*chat.Event{{Name: chat.EventMessageDidCreate, Data: []byte(`{}`), CreatedAt: chat.NewTime(time.Now())}})
	}))
	r, ok := sst.(chat.RecentEventReader)
	require.True(t, ok)
	es := r.RecentEvents(0, 10)
	require.Len(t, es, 1)
	require.Equal(t, chat.EventMessageDidCreate, es[0].Name)
}

func webhookLines(text string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "chat_webhook") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
	"github.com/stretchr/testify/require"
)

// backend makes stores of one adapter for the dispatcher tests.
type backend struct {
	name string
	// open returns a fresh, empty store, closed at cleanup.
	open func(t testing.TB) chat.Store
	// pair returns two stores over the same fresh data (two processes
	// sharing a database); for memory it is one store twice.
	pair func(t testing.TB) (chat.Store, chat.Store)
}

var memoryBackend = backend{
	name: "memory",
	open: func(t testing.TB) chat.Store {
		s := memory.New()
		t.Cleanup(func() { _ = s.Close() })
		return s
	},
	pair: func(t testing.TB) (chat.Store, chat.Store) {
		s := memory.New()
		t.Cleanup(func() { _ = s.Close() })
		return s, s
	},
}

// extraBackends is filled by the files of the SQL adapters' tests.
var extraBackends []backend

func backends() []backend { return append([]backend{memoryBackend}, extraBackends...) }

// testLogger discards logs unless WEBHOOK_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("WEBHOOK_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// patience is how long a test waits for something that must happen (a
// delivery recorded, an event received). Only a broken mechanism reaches
// it: it is far beyond the slowest run on a loaded machine, and no test
// depends on how fast anything happens.
const patience = 2 * time.Minute

// testConfig is a Config with a millisecond retry schedule for tests. The
// request Timeout and the Lease keep their defaults (10 s, 1 min), so that
// a loaded machine never turns a slow answer into a failed attempt; the
// tests that need a timeout or an expired lease set their own.
func testConfig(mod ...func(*Config)) Config {
	c := Config{
		Schedule:     []time.Duration{0, 10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond, 40 * time.Millisecond},
		PollInterval: 100 * time.Millisecond,
		Workers:      16,
		AllowPrivate: true, // receivers are on 127.0.0.1
		Logger:       testLogger(),
	}
	for _, m := range mod {
		m(&c)
	}
	return c
}

// newDispatcher returns a dispatcher over s, with a Service over s.
func newDispatcher(tb testing.TB, s chat.Store, cfg Config) *Dispatcher {
	tb.Helper()
	svc, err := chat.New(context.Background(), s, chat.Config{Logger: testLogger()})
	require.NoError(tb, err)
	return New(svc, s, cfg)
}

// start starts a dispatcher and stops it at cleanup.
func start(t testing.TB, s chat.Store, cfg Config) *Dispatcher {
	t.Helper()
	d := newDispatcher(t, s, cfg)
	require.NoError(t, d.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		require.NoError(t, d.Stop(ctx))
	})
	return d
}

// createHook registers a webhook.
func createHook(t testing.TB, s chat.Store, url, secret string) *chat.Webhook {
	t.Helper()
	now := chat.NewTime(time.Now())
	w := &chat.Webhook{WebhookID: chat.NewID(), URL: url, Secret: secret, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.Update(context.Background(), func(tx chat.Tx) error {
		return tx.CreateWebhook(context.Background(), w)
	}))
	return w
}

// newDeliveries builds n deliveries as the Service does: one envelope
// each, with a fresh requestId.
func newDeliveries(t testing.TB, hookID string, n int) []*chat.Delivery {
	t.Helper()
	now := chat.NewTime(time.Now())
	ds := make([]*chat.Delivery, n)
	for i := range ds {
		id := chat.NewID()
		data, err := json.Marshal(chat.MessageEventData{
			Messages: []chat.Message{{MessageID: fmt.Sprintf("m%d", i), ChannelID: "c1", UserID: "u1", Type: "text",
				Data: map[string]any{"text": fmt.Sprintf("hello %d", i)}, CreatedAt: now, UpdatedAt: now}},
			Users: []chat.User{{UserID: "u1", DisplayName: "U1", CreatedAt: now, UpdatedAt: now}},
		})
		require.NoError(t, err)
		body, err := json.Marshal(chat.Envelope{RequestID: id, WebhookID: hookID, Event: chat.EventMessageDidCreate, Data: data})
		require.NoError(t, err)
		ds[i] = &chat.Delivery{RequestID: id, WebhookID: hookID, Event: chat.EventMessageDidCreate, Body: body,
			State: chat.DeliveryPending, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}
	}
	return ds
}

// enqueue commits deliveries in one transaction and returns their ids.
func enqueue(t testing.TB, s chat.Store, ds []*chat.Delivery) []string {
	t.Helper()
	require.NoError(t, s.Update(context.Background(), func(tx chat.Tx) error {
		return tx.EnqueueDeliveries(context.Background(), ds)
	}))
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.RequestID
	}
	return ids
}

// hit is one request seen by a testReceiver.
type hit struct {
	id      string
	attempt int // per requestId, from 1
	at      time.Time
	header  http.Header
	body    []byte
}

// testReceiver is a webhook receiver on 127.0.0.1. Every request is first
// offered to inject (failure injection by attempt number); requests it does
// not answer go to NewReceiver, which verifies both signatures.
type testReceiver struct {
	*httptest.Server
	secret []byte
	inject func(w http.ResponseWriter, r *http.Request, id string, attempt int) bool

	mu        sync.Mutex
	hits      []hit
	attempts  map[string]int
	inflight  map[string]int
	delivered map[string]int // requestId -> times verified and accepted
	overlaps  atomic.Int32   // a requestId in flight twice at once
	total     atomic.Int64   // accepted deliveries
	notify    chan string    // receives each accepted requestId, when not nil
}

func newReceiver(t testing.TB, secret string, inject func(w http.ResponseWriter, r *http.Request, id string, attempt int) bool) *testReceiver {
	rc := &testReceiver{secret: []byte(secret), inject: inject,
		attempts: map[string]int{}, inflight: map[string]int{}, delivered: map[string]int{}}
	verified := NewReceiver(rc.secret, func(ctx context.Context, ev *Event) error {
		rc.mu.Lock()
		rc.delivered[ev.RequestID]++
		rc.mu.Unlock()
		rc.total.Add(1)
		if rc.notify != nil {
			rc.notify <- ev.RequestID
		}
		return nil
	}, WithStandardSignature(time.Minute))
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		id := r.Header.Get(HeaderID)
		rc.mu.Lock()
		rc.attempts[id]++
		n := rc.attempts[id]
		rc.inflight[id]++
		if rc.inflight[id] > 1 {
			rc.overlaps.Add(1)
		}
		rc.hits = append(rc.hits, hit{id: id, attempt: n, at: time.Now(), header: r.Header.Clone(), body: body})
		rc.mu.Unlock()
		defer func() {
			rc.mu.Lock()
			rc.inflight[id]--
			rc.mu.Unlock()
		}()
		if rc.inject != nil && rc.inject(w, r, id, n) {
			return
		}
		verified.ServeHTTP(w, r)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *testReceiver) hitsOf(id string) []hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []hit
	for _, h := range rc.hits {
		if h.id == id {
			out = append(out, h)
		}
	}
	return out
}

func (rc *testReceiver) deliveredCount(id string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.delivered[id]
}

func (rc *testReceiver) hitCount() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.hits)
}

// getDelivery reads one delivery and its attempts.
func getDelivery(t testing.TB, s chat.Store, id string) (*chat.Delivery, []*chat.DeliveryAttempt) {
	t.Helper()
	var d *chat.Delivery
	var as []*chat.DeliveryAttempt
	require.NoError(t, s.View(context.Background(), func(tx chat.Tx) error {
		var err error
		if d, err = tx.GetDelivery(context.Background(), id); err != nil {
			return err
		}
		as, err = tx.ListAttempts(context.Background(), id)
		return err
	}))
	return d, as
}

// waitStates waits until every delivery has left the pending state and
// returns them. It fails the test after patience.
func waitStates(t testing.TB, s chat.Store, ids []string) map[string]*chat.Delivery {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		out := map[string]*chat.Delivery{}
		pending := 0
		require.NoError(t, s.View(context.Background(), func(tx chat.Tx) error {
			for _, id := range ids {
				d, err := tx.GetDelivery(context.Background(), id)
				if err != nil {
					return err
				}
				out[id] = d
				if d.State == chat.DeliveryPending {
					pending++
				}
			}
			return nil
		}))
		if pending == 0 {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d deliveries still pending after %v", pending, len(ids), patience)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// gate holds the requests a receiver passes to it until release is
// closed (or the request ends) and counts how many it holds at once.
type gate struct {
	release    chan struct{}
	mu         sync.Mutex
	held, most int
}

func newGate() *gate { return &gate{release: make(chan struct{})} }

// hold holds r until the gate is released or r ends.
func (g *gate) hold(r *http.Request) {
	g.mu.Lock()
	g.held++
	g.most = max(g.most, g.held)
	g.mu.Unlock()
	select {
	case <-g.release:
	case <-r.Context().Done():
	}
	g.mu.Lock()
	g.held--
	g.mu.Unlock()
}

// counts returns the requests held now and the most held at once.
func (g *gate) counts() (held, most int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held, g.most
}

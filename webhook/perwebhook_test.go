package webhook

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/stretchr/testify/require"
)

// TestHangingReceiverDelaysNoOther puts a receiver that accepts requests
// and never answers beside a healthy one. The hanging webhook's deliveries
// are enqueued first and outnumber the workers; the request timeout is far
// beyond the test's patience, so the healthy webhook's deliveries can only
// arrive if the dispatcher claims and sends them while the hanging
// requests are still in flight. Meanwhile the hanging receiver never sees
// more than PerWebhook requests at once.
func TestHangingReceiverDelaysNoOther(t *testing.T) {
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			s := be.open(t)
			g := newGate()
			stuck := newReceiver(t, "s1", func(w http.ResponseWriter, r *http.Request, id string, attempt int) bool {
				g.hold(r)
				w.WriteHeader(http.StatusServiceUnavailable)
				return true
			})
			healthy := newReceiver(t, "s2", nil)
			healthy.notify = make(chan string, 64)
			stuckHook := createHook(t, s, stuck.URL, "s1")
			okHook := createHook(t, s, healthy.URL, "s2")
			stuckIDs := enqueue(t, s, newDeliveries(t, stuckHook.WebhookID, 12))
			okIDs := enqueue(t, s, newDeliveries(t, okHook.WebhookID, 6))

			start(t, s, testConfig(func(c *Config) {
				c.Workers, c.PerWebhook, c.BatchSize = 4, 2, 4
				c.Timeout, c.Lease = 10*time.Minute, 20*time.Minute
			}))
			t.Cleanup(func() { close(g.release) }) // before Stop, which runs later
			for range okIDs {
				select {
				case <-healthy.notify:
				case <-time.After(patience):
					t.Fatalf("healthy webhook starved: %d of %d delivered while the other hangs",
						healthy.total.Load(), len(okIDs))
				}
			}
			states := waitStates(t, s, okIDs)
			for _, id := range okIDs {
				require.Equal(t, chat.DeliveryDelivered, states[id].State)
			}
			// The two hanging requests were sent first; wait until both
			// reach the receiver, then check no third one ever did.
			deadline := time.Now().Add(patience)
			for {
				n, most := g.counts()
				require.LessOrEqual(t, most, 2, "hanging receiver saw more than PerWebhook requests at once")
				if n == 2 {
					break
				}
				require.True(t, time.Now().Before(deadline), "hanging requests never arrived")
				time.Sleep(5 * time.Millisecond)
			}
			// The hanging webhook's deliveries are untouched apart from
			// the two in flight: none was attempted, none failed.
			for _, id := range stuckIDs {
				dl, as := getDelivery(t, s, id)
				require.Equal(t, chat.DeliveryPending, dl.State)
				require.Empty(t, as)
			}
		})
	}
}

// TestAtLimitPassedOver: while a webhook is at its PerWebhook limit, claims
// pass over its due deliveries instead of taking and putting them back:
// they keep their nextAttemptAt and stay unleased, and the healthy
// webhook's deliveries behind them are sent. A claim may take four
// deliveries (BatchSize 4), twice the limit: the claim itself takes no more
// of a webhook than its free slots. Without Prefetch, so that those are
// PerWebhook (TestPrefetchBounded covers it).
func TestAtLimitPassedOver(t *testing.T) {
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			s := be.open(t)
			release := make(chan struct{})
			var mu sync.Mutex
			seen := map[string]int{}
			stuck := newReceiver(t, "s1", func(w http.ResponseWriter, r *http.Request, id string, attempt int) bool {
				mu.Lock()
				seen[id]++
				mu.Unlock()
				select {
				case <-release:
				case <-r.Context().Done():
				}
				w.WriteHeader(http.StatusServiceUnavailable)
				return true
			})
			healthy := newReceiver(t, "s2", nil)
			stuckHook := createHook(t, s, stuck.URL, "s1")
			okHook := createHook(t, s, healthy.URL, "s2")
			stuckDs := newDeliveries(t, stuckHook.WebhookID, 6)
			enqueue(t, s, stuckDs)
			okIDs := enqueue(t, s, newDeliveries(t, okHook.WebhookID, 4))

			start(t, s, testConfig(func(c *Config) {
				c.Workers, c.PerWebhook, c.BatchSize, c.Prefetch = 4, 2, 4, -1
				c.Timeout, c.Lease = 10*time.Minute, 20*time.Minute
			}))
			t.Cleanup(func() { close(release) }) // before Stop, which runs later
			states := waitStates(t, s, okIDs)
			for _, id := range okIDs {
				require.Equal(t, chat.DeliveryDelivered, states[id].State)
			}
			deadline := time.Now().Add(patience)
			for {
				mu.Lock()
				n := len(seen)
				mu.Unlock()
				if n == 2 {
					break
				}
				require.True(t, time.Now().Before(deadline), "the two hanging requests never arrived")
				time.Sleep(5 * time.Millisecond)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, want := range stuckDs {
				dl, as := getDelivery(t, s, want.RequestID)
				require.Equal(t, chat.DeliveryPending, dl.State)
				require.Empty(t, as, "no attempt recorded")
				if seen[want.RequestID] > 0 {
					require.Equal(t, 1, seen[want.RequestID])
					require.NotEmpty(t, dl.LeaseOwner, "in flight")
					continue
				}
				require.True(t, want.NextAttemptAt.Equal(dl.NextAttemptAt.Time), "passed over, not put back: %v -> %v", want.NextAttemptAt, dl.NextAttemptAt)
				require.Empty(t, dl.LeaseOwner)
				require.Nil(t, dl.LeaseUntil)
			}
		})
	}
}

// BenchmarkBesideHanging measures how long events take to reach a healthy
// webhook when every event also goes to a receiver that accepts requests
// and never answers (each attempt ends at the 10 s Timeout). b.N events are
// committed at 20 per second, each with one delivery per webhook; the
// metrics are the healthy receiver's commit-to-receipt p50 and maximum.
// "limit=workers" sets PerWebhook to Workers, the dispatcher without a
// per-webhook limit; "ceiling" has no hanging webhook at all.
//
//	go test -run '^$' -bench BesideHanging -benchtime 200x ./webhook/
func BenchmarkBesideHanging(b *testing.B) {
	for _, be := range backends() {
		for _, mode := range []string{"ceiling", "limit=default", "limit=workers"} {
			b.Run(be.name+"/"+mode, func(b *testing.B) {
				s := be.open(b)
				release := make(chan struct{})
				stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					select {
					case <-release:
					case <-r.Context().Done():
					}
				}))
				defer stuck.Close()
				defer close(release)
				var commits sync.Map // requestId -> commit time
				var lmu sync.Mutex
				var lat []time.Duration
				all := make(chan struct{})
				okSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					at := time.Now()
					w.WriteHeader(http.StatusNoContent)
					c, ok := commits.Load(r.Header.Get(HeaderID))
					if !ok {
						return
					}
					lmu.Lock()
					defer lmu.Unlock()
					lat = append(lat, at.Sub(c.(time.Time)))
					if len(lat) == b.N {
						close(all)
					}
				}))
				defer okSrv.Close()
				okHook := createHook(b, s, okSrv.URL, "k")
				var stuckHook *chat.Webhook
				if mode != "ceiling" {
					stuckHook = createHook(b, s, stuck.URL, "k")
				}
				cfg := Config{AllowPrivate: true, Logger: testLogger()}
				if mode == "limit=workers" {
					cfg.Workers, cfg.PerWebhook = 32, 32
				}
				d := newDispatcher(b, s, cfg)
				require.NoError(b, d.Start(context.Background()))
				_, watches := s.(chat.OutboxWatcher)
				b.ResetTimer()
				tick := time.NewTicker(50 * time.Millisecond)
				for range b.N {
					<-tick.C
					ds := newDeliveries(b, okHook.WebhookID, 1)
					if stuckHook != nil {
						ds = append(ds, newDeliveries(b, stuckHook.WebhookID, 1)...)
					}
					commits.Store(ds[0].RequestID, time.Now()) // in case it arrives first
					enqueue(b, s, ds)
					commits.Store(ds[0].RequestID, time.Now())
					if !watches {
						d.Wake()
					}
				}
				tick.Stop()
				select {
				case <-all:
				case <-time.After(patience):
				}
				b.StopTimer()
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_ = d.Stop(ctx) // abandons the hanging attempts
				cancel()
				lmu.Lock()
				defer lmu.Unlock()
				require.Len(b, lat, b.N, "healthy deliveries missing")
				slices.Sort(lat)
				b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
			})
		}
	}
}

// TestOnRecorded: the hook sees every recorded attempt with the state it
// led to.
func TestOnRecorded(t *testing.T) {
	s := memoryBackend.open(t)
	bad := newReceiver(t, "k", func(w http.ResponseWriter, _ *http.Request, _ string, _ int) bool {
		w.WriteHeader(http.StatusInternalServerError)
		return true
	})
	good := newReceiver(t, "k", nil)
	var mu sync.Mutex
	got := map[string]int{}
	badIDs := enqueue(t, s, newDeliveries(t, createHook(t, s, bad.URL, "k").WebhookID, 1))
	okIDs := enqueue(t, s, newDeliveries(t, createHook(t, s, good.URL, "k").WebhookID, 2))
	start(t, s, testConfig(func(c *Config) {
		c.OnRecorded = func(state string) { mu.Lock(); got[state]++; mu.Unlock() }
	}))
	waitStates(t, s, append(badIDs, okIDs...))
	// The hook runs just after each commit: wait for the last call.
	deadline := time.Now().Add(patience)
	for {
		mu.Lock()
		n := got[chat.DeliveryDelivered] + got[chat.DeliveryPending] + got[chat.DeliveryFailed]
		mu.Unlock()
		if n >= 7 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	// testConfig's schedule has five attempts: four retries, then failed.
	require.Equal(t, map[string]int{chat.DeliveryDelivered: 2, chat.DeliveryPending: 4, chat.DeliveryFailed: 1}, got)
}

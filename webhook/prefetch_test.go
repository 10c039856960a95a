package webhook

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/stretchr/testify/require"
)

// leasedBy counts the deliveries of ids leased by owner and still pending.
func leasedBy(t testing.TB, s chat.Store, owner string, ids []string) int {
	n := 0
	for _, id := range ids {
		dl, _ := getDelivery(t, s, id)
		if dl.State == chat.DeliveryPending && dl.LeaseOwner == owner {
			n++
		}
	}
	return n
}

// TestPrefetchBounded: a webhook whose receiver holds every request gets
// PerWebhook requests at once, and the dispatcher leases Prefetch more of
// its deliveries, no others; they wait, unsent, and are sent once the
// held requests end. Every delivery reaches the receiver exactly once.
func TestPrefetchBounded(t *testing.T) {
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			s := be.open(t)
			g := newGate()
			rc := newReceiver(t, "k", func(w http.ResponseWriter, r *http.Request, id string, attempt int) bool {
				g.hold(r)
				return false // verified and accepted
			})
			hook := createHook(t, s, rc.URL, "k")
			ids := enqueue(t, s, newDeliveries(t, hook.WebhookID, 12))
			cs := &countingStore{Store: s, counts: map[string]int{}}
			d := start(t, cs, testConfig(func(c *Config) {
				c.Workers, c.PerWebhook, c.Prefetch, c.BatchSize = 4, 2, 3, 10
				c.Timeout, c.Lease = patience, 2*patience
			}))
			answer := sync.OnceFunc(func() { close(g.release) })
			t.Cleanup(answer)

			// The claims fill the webhook's two slots and its Prefetch.
			deadline := time.Now().Add(patience)
			for leasedBy(t, s, d.Owner(), ids) < 5 || rc.hitCount() < 2 {
				require.True(t, time.Now().Before(deadline), "%d leased, %d sent", leasedBy(t, s, d.Owner(), ids), rc.hitCount())
				time.Sleep(5 * time.Millisecond)
			}
			// It claims no more while the webhook is at its limit: wait
			// for two more claims (polls), then count again.
			claims := func() int { return cs.snapshot()["lazy update "+OpClaim] }
			polls := claims()
			for claims() < polls+2 {
				require.True(t, time.Now().Before(deadline), "no claim after %d", polls)
				time.Sleep(5 * time.Millisecond)
			}
			require.Equal(t, 5, leasedBy(t, s, d.Owner(), ids), "PerWebhook sent + Prefetch waiting")
			require.Equal(t, 2, rc.hitCount(), "the waiting ones are not sent")

			answer()
			states := waitStates(t, s, ids)
			_, most := g.counts()
			require.LessOrEqual(t, most, 2, "more than PerWebhook requests at once")
			require.Zero(t, rc.overlaps.Load())
			for _, id := range ids {
				require.Equal(t, chat.DeliveryDelivered, states[id].State)
				require.Len(t, rc.hitsOf(id), 1, id)
				require.Equal(t, 1, states[id].Attempts)
			}
		})
	}
}

// offsetClock is a Config.Now that a test can move forward.
type offsetClock struct{ off atomic.Int64 }

func (c *offsetClock) now() time.Time             { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *offsetClock) advance(d time.Duration)    { c.off.Add(int64(d)) }
func (c *offsetClock) config(cfg *Config) *Config { cfg.Now = c.now; return cfg }

// TestPrefetchedPastLeaseNotSent: a prefetched delivery that waited until
// its attempt could no longer end within its lease (Lease less Timeout
// after the claim) is not sent; once the lease has run out it is claimed
// again and sent once.
func TestPrefetchedPastLeaseNotSent(t *testing.T) {
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			s := be.open(t)
			release := make(chan struct{})
			var first atomic.Value
			rc := newReceiver(t, "k", func(w http.ResponseWriter, r *http.Request, id string, attempt int) bool {
				if first.CompareAndSwap(nil, id) {
					select {
					case <-release:
					case <-r.Context().Done():
					}
				}
				// Accepted unverified: the signature's timestamp follows
				// the test's clock.
				w.WriteHeader(http.StatusNoContent)
				return true
			})
			hook := createHook(t, s, rc.URL, "k")
			ids := enqueue(t, s, newDeliveries(t, hook.WebhookID, 2))
			var clock offsetClock
			d := start(t, s, testConfig(func(c *Config) {
				c.Workers, c.PerWebhook, c.Prefetch = 2, 1, 1
				c.Timeout, c.Lease = time.Minute, 2*time.Minute
				clock.config(c)
			}))
			answer := sync.OnceFunc(func() { close(release) })
			t.Cleanup(answer)

			deadline := time.Now().Add(patience)
			for leasedBy(t, s, d.Owner(), ids) < 2 || rc.hitCount() < 1 {
				require.True(t, time.Now().Before(deadline), "both not leased")
				time.Sleep(5 * time.Millisecond)
			}
			held := first.Load().(string)
			waiting := ids[0]
			if waiting == held {
				waiting = ids[1]
			}
			// 90 s after the claim the waiting delivery could not end
			// within its 2 min lease: it is dropped when the held
			// request ends.
			clock.advance(90 * time.Second)
			answer()
			for d.InFlight() > 0 {
				require.True(t, time.Now().Before(deadline), "the held attempt never ended")
				time.Sleep(5 * time.Millisecond)
			}
			require.Empty(t, rc.hitsOf(waiting), "sent after its lease could end")
			dl, as := getDelivery(t, s, waiting)
			require.Equal(t, chat.DeliveryPending, dl.State)
			require.Equal(t, d.Owner(), dl.LeaseOwner, "left leased until the lease runs out")
			require.Empty(t, as)

			// Past the lease, the next poll claims it again.
			clock.advance(time.Minute)
			states := waitStates(t, s, ids)
			for _, id := range ids {
				require.Equal(t, chat.DeliveryDelivered, states[id].State)
				require.Len(t, rc.hitsOf(id), 1, id)
				require.Equal(t, 1, states[id].Attempts)
			}
		})
	}
}

// TestConnectionsReused: with PerWebhook requests at most at once, the
// default transport keeps enough idle connections per host that a
// receiver answering 204 sees about PerWebhook TCP connections however
// many deliveries it gets (a few more at most: the transport drops a
// connection whose request write it has not yet seen completed when the
// response is in, which a loaded machine can cause), not one per few
// deliveries as with two idle connections per host.
func TestConnectionsReused(t *testing.T) {
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			s := be.open(t)
			var conns, got atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got.Add(1)
				w.WriteHeader(http.StatusNoContent)
			}))
			srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
				if st == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			t.Cleanup(srv.Close)
			hook := createHook(t, s, srv.URL, "k")
			const n = 1000
			for left := n; left > 0; left -= 250 {
				enqueue(t, s, newDeliveries(t, hook.WebhookID, 250))
			}
			cfg := Config{AllowPrivate: true, Logger: testLogger()}
			start(t, s, cfg)
			waitReceived(t, &got, n, patience)
			waitDrained(t, s, patience)
			require.EqualValues(t, n, got.Load())
			require.LessOrEqual(t, conns.Load(), int64(2*cfg.withDefaults().PerWebhook))
			require.Positive(t, conns.Load())
		})
	}
}

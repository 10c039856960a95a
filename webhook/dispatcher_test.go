package webhook

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/stretchr/testify/require"
)

// The main delivery test, over every available store: each event reaches a
// real receiver once, with the exact body and verifiable signatures.
func TestDeliver(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t)
			rc := newReceiver(t, "s3cret", nil)
			hook := createHook(t, s, rc.URL+"/hook", "s3cret")
			start(t, s, testConfig())
			ds := newDeliveries(t, hook.WebhookID, 50)
			ids := enqueue(t, s, ds)
			states := waitStates(t, s, ids)
			require.Zero(t, rc.overlaps.Load())
			for _, dl := range ds {
				got := states[dl.RequestID]
				require.Equal(t, chat.DeliveryDelivered, got.State, dl.RequestID)
				require.Equal(t, 1, got.Attempts)
				require.Equal(t, http.StatusNoContent, got.LastStatus)
				require.Equal(t, 1, rc.deliveredCount(dl.RequestID), "verified by the receiver once")
				hits := rc.hitsOf(dl.RequestID)
				require.Len(t, hits, 1)
				h := hits[0]
				require.Equal(t, dl.Body, h.body, "body is the outbox bytes, unchanged")
				require.Equal(t, "application/json", h.header.Get("Content-Type"))
				require.Equal(t, Sign([]byte("s3cret"), dl.Body), h.header.Get("X-Service-Signature"))
				require.Equal(t, dl.RequestID, h.header.Get("webhook-id"))
				ts, err := strconv.ParseInt(h.header.Get("webhook-timestamp"), 10, 64)
				require.NoError(t, err)
				require.InDelta(t, time.Now().Unix(), ts, 60)
				require.True(t, strings.HasPrefix(h.header.Get("webhook-signature"), "v1,"))
				require.Equal(t, "chatengine-webhook/1", h.header.Get("User-Agent"))
				_, as := getDelivery(t, s, dl.RequestID)
				require.Len(t, as, 1)
				require.Equal(t, http.StatusNoContent, as[0].StatusCode)
				require.Equal(t, 1, as[0].Attempt)
				require.Empty(t, as[0].Error)
				require.Equal(t, hook.WebhookID, as[0].WebhookID)
				require.Equal(t, chat.EventMessageDidCreate, as[0].Event)
			}
		})
	}
}

// Failure injection: each scenario ends with the event delivered (but for
// 410), every attempt recorded with its status or error, and every attempt
// carrying the same requestId. The injected stalls last until the client
// gives up, so the request timeout only has to be long enough for the
// answers that are not stalled to arrive on a loaded machine.
func TestFailures(t *testing.T) {
	const timeout = 2 * time.Second
	type injectFn = func(w http.ResponseWriter, r *http.Request, id string, attempt int) bool
	failFirst := func(n int, f func(w http.ResponseWriter, r *http.Request)) injectFn {
		return func(w http.ResponseWriter, r *http.Request, _ string, attempt int) bool {
			if attempt > n {
				return false
			}
			f(w, r)
			return true
		}
	}
	status := func(code int) func(w http.ResponseWriter, r *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) { http.Error(w, "injected failure", code) }
	}
	cases := []struct {
		name   string
		inject injectFn
		check  func(t *testing.T, as []*chat.DeliveryAttempt, hits []hit)
		final  string // state, default delivered
		ok     bool   // the injected answer itself is a success
	}{
		{
			name:   "500 twice",
			inject: failFirst(2, status(500)),
			check: func(t *testing.T, as []*chat.DeliveryAttempt, _ []hit) {
				require.Len(t, as, 3)
				require.Equal(t, []int{500, 500, 204}, codes(as))
				require.Equal(t, "HTTP 500: injected failure", as[0].Error)
			},
		},
		{
			name: "timeout",
			inject: failFirst(1, func(w http.ResponseWriter, r *http.Request) {
				<-r.Context().Done() // no answer: only the client's timeout ends this
			}),
			check: func(t *testing.T, as []*chat.DeliveryAttempt, _ []hit) {
				require.Len(t, as, 2)
				require.Equal(t, []int{0, 204}, codes(as))
				require.Contains(t, as[0].Error, "timeout")
				require.GreaterOrEqual(t, as[0].LatencyMs, timeout.Milliseconds()-5, "the client waited for the timeout")
			},
		},
		{
			name: "connection reset",
			inject: failFirst(2, func(w http.ResponseWriter, r *http.Request) {
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					_ = conn.Close()
				}
			}),
			check: func(t *testing.T, as []*chat.DeliveryAttempt, _ []hit) {
				require.Len(t, as, 3)
				require.Equal(t, []int{0, 0, 204}, codes(as))
				require.NotEmpty(t, as[0].Error)
				require.NotEmpty(t, as[1].Error)
			},
		},
		{
			name: "slow body after 200",
			inject: failFirst(1, func(w http.ResponseWriter, r *http.Request) {
				// The status arrives at once; the body trickles until the
				// client hangs up (at the timeout). The status decides:
				// delivered.
				w.WriteHeader(http.StatusOK)
				rc := http.NewResponseController(w)
				for {
					if _, err := w.Write([]byte("x")); err != nil {
						return
					}
					_ = rc.Flush()
					select {
					case <-r.Context().Done():
						return
					case <-time.After(timeout / 10):
					}
				}
			}),
			ok: true,
			check: func(t *testing.T, as []*chat.DeliveryAttempt, _ []hit) {
				require.Len(t, as, 1)
				require.Equal(t, []int{200}, codes(as))
				// Latency is the time to the status (which, having come
				// at all, came within the timeout), not to the body's end.
				require.Less(t, as[0].LatencyMs, timeout.Milliseconds())
			},
		},
		{
			name: "slow headers",
			inject: failFirst(1, func(w http.ResponseWriter, r *http.Request) {
				// Headers dribble and never end (no blank line): only the
				// client's timeout ends the attempt.
				conn, bw, err := http.NewResponseController(w).Hijack()
				if err != nil {
					return
				}
				defer conn.Close()
				gone := make(chan struct{})
				go func() { // the client hangs up when it times out
					_, _ = conn.Read(make([]byte, 1))
					close(gone)
				}()
				for _, part := range []string{"HTTP/1.1 2", "00 OK\r\n", "Content-Length: 0\r\n"} {
					_, _ = bw.WriteString(part)
					_ = bw.Flush()
					select {
					case <-gone:
						return
					case <-time.After(timeout / 4):
					}
				}
				<-gone
			}),
			check: func(t *testing.T, as []*chat.DeliveryAttempt, _ []hit) {
				require.Len(t, as, 2)
				require.Equal(t, []int{0, 204}, codes(as))
				require.Contains(t, as[0].Error, "timeout")
			},
		},
		{
			name: "huge error body",
			inject: failFirst(1, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusBadGateway)
				bw := bufio.NewWriter(w)
				for i := 0; i < 10<<20/64 && r.Context().Err() == nil; i++ {
					if _, err := bw.WriteString(strings.Repeat("y", 63) + "\n"); err != nil {
						return
					}
				}
				_ = bw.Flush()
			}),
			check: func(t *testing.T, as []*chat.DeliveryAttempt, _ []hit) {
				require.Equal(t, []int{502, 204}, codes(as))
				require.LessOrEqual(t, len(as[0].Error), maxErrorLen+3)
				require.True(t, strings.HasPrefix(as[0].Error, "HTTP 502: yyy"))
			},
		},
		{
			name: "429 with Retry-After",
			inject: failFirst(1, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "1")
				http.Error(w, "slow down", http.StatusTooManyRequests)
			}),
			check: func(t *testing.T, as []*chat.DeliveryAttempt, hits []hit) {
				require.Equal(t, []int{429, 204}, codes(as))
				require.GreaterOrEqual(t, hits[1].at.Sub(hits[0].at), 900*time.Millisecond,
					"the retry waited for Retry-After, not the 10 ms schedule")
			},
		},
		{
			name: "503 with Retry-After date",
			inject: failFirst(1, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat))
				http.Error(w, "maintenance", http.StatusServiceUnavailable)
			}),
			check: func(t *testing.T, as []*chat.DeliveryAttempt, hits []hit) {
				require.Equal(t, []int{503, 204}, codes(as))
				require.GreaterOrEqual(t, hits[1].at.Sub(hits[0].at), 900*time.Millisecond)
			},
		},
		{
			name:   "redirect is not followed",
			inject: failFirst(1, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", http.StatusFound) }),
			check: func(t *testing.T, as []*chat.DeliveryAttempt, hits []hit) {
				require.Equal(t, []int{302, 204}, codes(as))
				require.Len(t, hits, 2)
			},
		},
		{
			name:   "always failing gives up after the schedule",
			inject: failFirst(1000, status(500)),
			final:  chat.DeliveryFailed,
			check: func(t *testing.T, as []*chat.DeliveryAttempt, hits []hit) {
				require.Len(t, as, 5, "len(Schedule) attempts")
				require.Len(t, hits, 5)
				for i, a := range as {
					require.Equal(t, i+1, a.Attempt)
					require.Equal(t, 500, a.StatusCode)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := memoryBackend.open(t)
			rc := newReceiver(t, "k", tc.inject)
			hook := createHook(t, s, rc.URL, "k")
			start(t, s, testConfig(func(c *Config) { c.Timeout = timeout }))
			ids := enqueue(t, s, newDeliveries(t, hook.WebhookID, 3))
			states := waitStates(t, s, ids)
			for _, id := range ids {
				want := tc.final
				if want == "" {
					want = chat.DeliveryDelivered
					if !tc.ok {
						require.Equal(t, 1, rc.deliveredCount(id), "verified and delivered once")
					}
				}
				require.Equal(t, want, states[id].State)
				d, as := getDelivery(t, s, id)
				require.Equal(t, len(as), d.Attempts)
				for _, a := range as {
					require.Equal(t, id, a.RequestID, "same requestId on every attempt")
				}
				hits := rc.hitsOf(id)
				for _, h := range hits {
					require.Equal(t, id, h.header.Get(HeaderID))
				}
				tc.check(t, as, hits)
			}
		})
	}
}

func codes(as []*chat.DeliveryAttempt) []int {
	out := make([]int, len(as))
	for i, a := range as {
		out[i] = a.StatusCode
	}
	return out
}

// 410 Gone disables the webhook, with a webhook.disable audit entry by the
// server; the delivery fails, and no later delivery is POSTed to it.
func TestGoneDisablesWebhook(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			goneDisablesWebhook(t, b.open(t))
		})
	}
}

func goneDisablesWebhook(t *testing.T, s chat.Store) {
	rc := newReceiver(t, "k", func(w http.ResponseWriter, r *http.Request, _ string, _ int) bool {
		http.Error(w, "gone", http.StatusGone)
		return true
	})
	hook := createHook(t, s, rc.URL, "k")
	start(t, s, testConfig(func(c *Config) { c.Workers = 1 }))
	ids := enqueue(t, s, newDeliveries(t, hook.WebhookID, 3))
	states := waitStates(t, s, ids)
	require.Equal(t, 1, rc.hitCount(), "one POST, then the webhook is disabled")
	for _, id := range ids {
		require.Equal(t, chat.DeliveryFailed, states[id].State)
	}
	d, as := getDelivery(t, s, rc.hits[0].id)
	require.Equal(t, 410, d.LastStatus)
	require.Len(t, as, 1)
	var w *chat.Webhook
	require.NoError(t, s.View(context.Background(), func(tx chat.Tx) (err error) {
		w, err = tx.GetWebhook(context.Background(), hook.WebhookID)
		return err
	}))
	require.True(t, w.IsDisabled)
	require.Contains(t, w.DisabledReason, "410")
	var es []*chat.AuditEntry
	require.NoError(t, s.View(context.Background(), func(tx chat.Tx) (err error) {
		es, err = tx.QueryAudit(context.Background(), chat.AuditFilter{TargetID: hook.WebhookID, Limit: 10})
		return err
	}))
	require.Len(t, es, 1, "one entry: the webhook was disabled once")
	require.Equal(t, chat.AuditWebhookDisable, es[0].Action)
	require.Equal(t, chat.AuditTargetWebhook, es[0].TargetType)
	require.Empty(t, es[0].ActorID, "the server's own action")
	require.Equal(t, w.DisabledReason, es[0].Details["reason"])

	// Later deliveries fail without a request.
	more := enqueue(t, s, newDeliveries(t, hook.WebhookID, 2))
	states = waitStates(t, s, more)
	for _, id := range more {
		require.Equal(t, chat.DeliveryFailed, states[id].State)
		_, as := getDelivery(t, s, id)
		require.Len(t, as, 1)
		require.Zero(t, as[0].StatusCode)
		require.Contains(t, as[0].Error, "webhook disabled")
	}
	require.Equal(t, 1, rc.hitCount())
}

// A delivery whose webhook was deleted while it was queued fails without a
// request. (The store deletes a webhook's pending deliveries with it; this
// covers deliveries claimed before the delete and stores that keep them.)
func TestDeletedWebhook(t *testing.T) {
	t.Parallel()
	s := memoryBackend.open(t)
	ds := newDeliveries(t, "no-such-webhook", 1)
	ids := enqueue(t, s, ds)
	start(t, s, testConfig())
	states := waitStates(t, s, ids)
	require.Equal(t, chat.DeliveryFailed, states[ids[0]].State)
	_, as := getDelivery(t, s, ids[0])
	require.Len(t, as, 1)
	require.Equal(t, "webhook deleted", as[0].Error)
}

// Without AllowPrivate a webhook pointing at 127.0.0.1 is refused at dial
// time: the attempt records the refusal and the receiver sees nothing.
func TestPrivateAddressRefused(t *testing.T) {
	t.Parallel()
	s := memoryBackend.open(t)
	rc := newReceiver(t, "k", nil)
	hook := createHook(t, s, rc.URL, "k")
	start(t, s, testConfig(func(c *Config) {
		c.AllowPrivate = false
		c.Schedule = []time.Duration{0, time.Millisecond}
	}))
	ids := enqueue(t, s, newDeliveries(t, hook.WebhookID, 1))
	states := waitStates(t, s, ids)
	require.Equal(t, chat.DeliveryFailed, states[ids[0]].State)
	_, as := getDelivery(t, s, ids[0])
	require.Len(t, as, 2)
	require.Contains(t, as[0].Error, "refused")
	require.Contains(t, as[0].Error, "loopback")
	require.Zero(t, rc.hitCount())

	// The same through a host name resolving to a private address, and
	// through the dial-time check alone (a custom HTTP client is not
	// involved: the default transport dials through the Guard).
	s2 := memoryBackend.open(t)
	hook2 := createHook(t, s2, "http://internal.example:"+rc.URL[strings.LastIndex(rc.URL, ":")+1:]+"/", "k")
	res := &fakeResolver{answers: map[string][]string{"internal.example": {"10.0.0.1"}}}
	start(t, s2, testConfig(func(c *Config) {
		c.AllowPrivate = false
		c.Resolver = res
		c.Schedule = []time.Duration{0}
	}))
	ids = enqueue(t, s2, newDeliveries(t, hook2.WebhookID, 1))
	waitStates(t, s2, ids)
	_, as = getDelivery(t, s2, ids[0])
	require.Len(t, as, 1)
	require.Contains(t, as[0].Error, "refused")
	require.Contains(t, as[0].Error, "10.0.0.1")
	require.Zero(t, rc.hitCount())
}

// hideWatcher hides a store's OutboxWatcher, as a store without commit
// signals would.
type hideWatcher struct{ chat.Store }

// With a watcher, a commit is delivered at once though the poll interval is
// an hour; without one, Wake does the same.
func TestWakeOnCommit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		wrap func(chat.Store) chat.Store
		wake bool
	}{
		{"watcher", func(s chat.Store) chat.Store { return s }, false},
		{"wake", func(s chat.Store) chat.Store { return hideWatcher{s} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := tc.wrap(memoryBackend.open(t))
			rc := newReceiver(t, "k", nil)
			hook := createHook(t, s, rc.URL, "k")
			d := start(t, s, testConfig(func(c *Config) { c.PollInterval = time.Hour }))
			time.Sleep(50 * time.Millisecond) // let the first (empty) claim pass
			for i := 0; i < 3; i++ {
				ids := enqueue(t, s, newDeliveries(t, hook.WebhookID, 1))
				if tc.wake {
					d.Wake()
				}
				waitStates(t, s, ids)
			}
			require.EqualValues(t, 3, rc.total.Load())
		})
	}
}

// A retry due in the future is claimed when it is due, without a signal or
// a poll: the dispatcher sleeps until the next attempt time.
func TestSleepsUntilNextAttempt(t *testing.T) {
	t.Parallel()
	s := hideWatcher{memoryBackend.open(t)}
	rc := newReceiver(t, "k", func(w http.ResponseWriter, r *http.Request, _ string, attempt int) bool {
		if attempt == 1 {
			http.Error(w, "later", 500)
			return true
		}
		return false
	})
	hook := createHook(t, s, rc.URL, "k")
	d := start(t, s, testConfig(func(c *Config) {
		c.PollInterval = time.Hour
		c.Schedule = []time.Duration{0, 200 * time.Millisecond}
		c.Jitter = -1
	}))
	ids := enqueue(t, s, newDeliveries(t, hook.WebhookID, 1))
	d.Wake()
	// With an hour's poll interval, the retry arriving at all within the
	// wait proves the dispatcher slept until it was due.
	waitStates(t, s, ids)
	hits := rc.hitsOf(ids[0])
	require.Len(t, hits, 2)
	gap := hits[1].at.Sub(hits[0].at)
	require.GreaterOrEqual(t, gap, 190*time.Millisecond, "the retry came before it was due")
}

// Stop waits for deliveries in flight and records them; it is idempotent.
// The receiver holds both requests until the test releases them, so Stop
// cannot return before that unless it does not wait.
func TestStopWaitsForInFlight(t *testing.T) {
	t.Parallel()
	s := memoryBackend.open(t)
	entered := make(chan struct{}, 10)
	release := make(chan struct{})
	rc := newReceiver(t, "k", func(w http.ResponseWriter, r *http.Request, _ string, _ int) bool {
		entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return false
	})
	hook := createHook(t, s, rc.URL, "k")
	d := newDispatcher(t, s, testConfig(func(c *Config) { c.Timeout, c.Lease = patience, 2*patience }))
	require.NoError(t, d.Start(context.Background()))
	require.Error(t, d.Start(context.Background()), "Start twice")
	ids := enqueue(t, s, newDeliveries(t, hook.WebhookID, 2))
	<-entered
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- d.Stop(context.Background()) }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) with two deliveries in flight", err)
	case <-time.After(100 * time.Millisecond): // Stop is waiting (or has not begun)
	}
	for _, id := range ids {
		dl, _ := getDelivery(t, s, id)
		require.Equal(t, chat.DeliveryPending, dl.State, "not recorded while in flight")
	}
	close(release)
	require.NoError(t, <-stopped)
	for _, id := range ids {
		dl, _ := getDelivery(t, s, id)
		require.Equal(t, chat.DeliveryDelivered, dl.State, "recorded before Stop returned")
	}
	require.NoError(t, d.Stop(context.Background()), "idempotent")
	<-d.Done()
	require.Error(t, d.Start(context.Background()), "no restart")

	never := newDispatcher(t, s, testConfig())
	require.NoError(t, never.Stop(context.Background()), "Stop before Start")
	require.Error(t, never.Start(context.Background()))
}

// When Stop's context ends first, deliveries in flight are abandoned: no
// attempt is recorded, and once the lease expires another dispatcher
// delivers them.
func TestHardStopLeavesLease(t *testing.T) {
	t.Parallel()
	s := memoryBackend.open(t)
	var block atomic.Bool
	block.Store(true)
	entered := make(chan struct{}, 10)
	rc := newReceiver(t, "k", func(w http.ResponseWriter, r *http.Request, _ string, _ int) bool {
		if block.Load() {
			entered <- struct{}{}
			<-r.Context().Done()
			return true
		}
		return false
	})
	hook := createHook(t, s, rc.URL, "k")
	cfg := testConfig(func(c *Config) { c.Timeout = 5 * time.Second; c.Lease = 6 * time.Second })
	a := newDispatcher(t, s, cfg)
	require.NoError(t, a.Start(context.Background()))
	ids := enqueue(t, s, newDeliveries(t, hook.WebhookID, 1))
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, a.Stop(ctx), context.DeadlineExceeded)
	<-a.Done()
	dl, as := getDelivery(t, s, ids[0])
	require.Equal(t, chat.DeliveryPending, dl.State)
	require.Empty(t, as, "nothing recorded for an abandoned attempt")
	require.Equal(t, a.Owner(), dl.LeaseOwner)

	// A second dispatcher with a clock 6 s ahead sees the lease expired.
	block.Store(false)
	start(t, s, testConfig(func(c *Config) {
		c.Now = func() time.Time { return time.Now().Add(7 * time.Second) }
	}))
	states := waitStates(t, s, ids)
	require.Equal(t, chat.DeliveryDelivered, states[ids[0]].State)
	require.Equal(t, 1, rc.deliveredCount(ids[0]))
}

// Several dispatchers on one store share its deliveries through leases: no
// delivery is in flight twice at once, no attempt is sent twice, every
// request is recorded as one attempt, numbered in order, and every delivery
// ends delivered with exactly one successful attempt, its last (after the
// injected failure where there is one). Delivery is at least once: a
// request that failed on its own on a loaded machine is retried, so the
// receiver may see more than the injected attempts, never fewer. How the
// work falls between the dispatchers is the scheduler's business and is
// only logged; TestConcurrentDispatchersLeaseExcludes makes the second one
// work.
func TestConcurrentDispatchers(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s1, s2 := b.pair(t)
			failsFirst := func(id string) bool { return id[len(id)-1]%4 == 0 }
			rc := newReceiver(t, "k", func(w http.ResponseWriter, r *http.Request, id string, attempt int) bool {
				time.Sleep(time.Millisecond) // widen the window for overlaps
				if attempt == 1 && failsFirst(id) {
					http.Error(w, "retry me", 500) // some retries interleave too
					return true
				}
				return false
			})
			hook := createHook(t, s1, rc.URL, "k")
			start(t, s1, ownerConfig("d1", 8))
			start(t, s2, ownerConfig("d2", 8))
			var ids []string
			for i := 0; i < 6; i++ {
				ids = append(ids, enqueue(t, s1, newDeliveries(t, hook.WebhookID, 50))...)
			}
			states := waitStates(t, s1, ids)
			require.Zero(t, rc.overlaps.Load(), "a requestId was in flight twice at once")
			for _, id := range ids {
				require.Equal(t, chat.DeliveryDelivered, states[id].State)
				requireOneSuccess(t, s1, rc, id, failsFirst(id))
			}
			rc.mu.Lock()
			defer rc.mu.Unlock()
			seen := map[[2]any]bool{}
			owners := map[string]int{}
			for _, h := range rc.hits {
				owners[h.header.Get("X-Test-Owner")]++
				k := [2]any{h.id, h.attempt}
				require.False(t, seen[k], "attempt %d of %s sent twice", h.attempt, h.id)
				seen[k] = true
			}
			require.Equal(t, len(rc.hits), owners["d1"]+owners["d2"], "every request came from d1 or d2")
			t.Logf("requests per dispatcher: %v", owners)
		})
	}
}

// A delivery leased by one dispatcher is not claimed by another, which
// goes on with the rest. The receiver holds d1's requests, so d1 has all
// its workers busy and its leases outstanding; d2 must then deliver every
// other delivery, and never send one that d1 holds. Released, d1's
// requests are accepted and recorded by d1. Nothing here depends on
// scheduling: which deliveries d1 holds is read from the receiver.
func TestConcurrentDispatchersLeaseExcludes(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s1, s2 := b.pair(t)
			const workers = 4
			held := make(chan string, workers)
			release := make(chan struct{})
			rc := newReceiver(t, "k", func(w http.ResponseWriter, r *http.Request, id string, _ int) bool {
				if r.Header.Get("X-Test-Owner") == "d1" {
					select {
					case held <- id:
					default: // only after the release: d1 claims no more before it
					}
					select {
					case <-release:
					case <-r.Context().Done():
					}
				}
				return false // verified and accepted
			})
			hook := createHook(t, s1, rc.URL, "k")
			ids := enqueue(t, s1, newDeliveries(t, hook.WebhookID, 40))
			// The held requests must not time out, nor their leases expire.
			// d1 leases no more than it sends (no Prefetch), so that
			// every delivery it does not hold is left to d2.
			start(t, s1, ownerConfig("d1", workers, func(c *Config) { c.Timeout, c.Lease, c.Prefetch = patience, 2*patience, -1 }))
			heldIDs := map[string]bool{}
			for range workers {
				heldIDs[<-held] = true
			}
			answer := sync.OnceFunc(func() { close(release) })
			t.Cleanup(answer) // runs first: a failed test does not leave requests hanging

			start(t, s2, ownerConfig("d2", workers))
			var rest []string
			for _, id := range ids {
				if !heldIDs[id] {
					rest = append(rest, id)
				}
			}
			require.Len(t, rest, len(ids)-workers)
			states := waitStates(t, s2, rest)
			for _, id := range rest {
				require.Equal(t, chat.DeliveryDelivered, states[id].State)
				for _, h := range rc.hitsOf(id) {
					require.Equal(t, "d2", h.header.Get("X-Test-Owner"), "d1's workers were all busy")
				}
			}
			for id := range heldIDs {
				dl, as := getDelivery(t, s2, id)
				require.Equal(t, chat.DeliveryPending, dl.State, "held by d1")
				require.Equal(t, "d1", dl.LeaseOwner)
				require.Empty(t, as)
				hits := rc.hitsOf(id)
				require.Len(t, hits, 1, "d2 never sent a delivery leased by d1")
				require.Equal(t, "d1", hits[0].header.Get("X-Test-Owner"))
			}

			answer()
			states = waitStates(t, s1, ids)
			require.Zero(t, rc.overlaps.Load())
			for _, id := range ids {
				require.Equal(t, chat.DeliveryDelivered, states[id].State)
				requireOneSuccess(t, s1, rc, id, false)
			}
			for id := range heldIDs {
				require.Equal(t, 1, states[id].Attempts, "d1 recorded its held attempt")
			}
		})
	}
}

// requireOneSuccess checks the record of a delivered delivery: one attempt
// per request the receiver saw, numbered from 1, every one but the last a
// failure (the first one a 500 when failedFirst), the last a 204, and the
// receiver's verified acceptances between 1 and the number of attempts.
func requireOneSuccess(t *testing.T, s chat.Store, rc *testReceiver, id string, failedFirst bool) {
	t.Helper()
	d, as := getDelivery(t, s, id)
	errs := make([]string, len(as))
	for i, a := range as {
		errs[i] = fmt.Sprintf("%d:%d %s", a.Attempt, a.StatusCode, a.Error)
	}
	require.Len(t, as, d.Attempts, "%s: %v", id, errs)
	require.Len(t, rc.hitsOf(id), len(as), "%s: one request per recorded attempt: %v", id, errs)
	for i, a := range as {
		require.Equal(t, i+1, a.Attempt, "%s: %v", id, errs)
		if i < len(as)-1 {
			require.NotEqual(t, http.StatusNoContent, a.StatusCode, "%s: a success before the last attempt: %v", id, errs)
		}
	}
	require.Equal(t, http.StatusNoContent, as[len(as)-1].StatusCode, "%s: %v", id, errs)
	if failedFirst {
		require.Equal(t, http.StatusInternalServerError, as[0].StatusCode, "%s: %v", id, errs)
	}
	n := rc.deliveredCount(id)
	require.True(t, n >= 1 && n <= len(as), "%s: accepted %d times in %d attempts: %v", id, n, len(as), errs)
}

// ownerConfig is testConfig for one of several dispatchers sharing a store:
// its lease owner is owner, and each of its requests carries owner in the
// X-Test-Owner header. Its deliveries all go to one webhook, so the
// per-webhook limit is the worker count.
func ownerConfig(owner string, workers int, mod ...func(*Config)) Config {
	return testConfig(append(mod, func(c *Config) {
		c.Owner, c.Workers, c.BatchSize, c.PollInterval = owner, workers, 10, 20*time.Millisecond
		c.PerWebhook = workers
		def := c.withDefaults()
		client := def.newClient()
		client.Transport = ownerTag{client.Transport, owner}
		c.HTTPClient = client
	})...)
}

// ownerTag adds the sending dispatcher's name to each request.
type ownerTag struct {
	base  http.RoundTripper
	owner string
}

func (o ownerTag) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Test-Owner", o.owner)
	return o.base.RoundTrip(r)
}

// A webhook's new URL and secret apply from the next attempt: the cache of
// webhooks follows WebhooksVersion. The old receiver answers its request
// (500, retry) only after the change is committed, so the retry, which
// can only be claimed after that answer, must go to the new URL.
func TestWebhookChangesApply(t *testing.T) {
	t.Parallel()
	s := memoryBackend.open(t)
	first := make(chan struct{}, 1)
	moved := make(chan struct{})
	a := newReceiver(t, "old", func(w http.ResponseWriter, r *http.Request, _ string, _ int) bool {
		first <- struct{}{}
		select {
		case <-moved:
		case <-r.Context().Done():
		}
		http.Error(w, "moving", 500)
		return true
	})
	b := newReceiver(t, "new", nil)
	hook := createHook(t, s, a.URL, "old")
	start(t, s, testConfig(func(c *Config) {
		c.Schedule = []time.Duration{0, 10 * time.Millisecond}
		c.Timeout, c.Lease = patience, 2*patience
	}))
	ids := enqueue(t, s, newDeliveries(t, hook.WebhookID, 1))
	<-first
	answer := sync.OnceFunc(func() { close(moved) })
	t.Cleanup(answer) // runs first: a failed test does not leave the request hanging
	require.NoError(t, s.Update(context.Background(), func(tx chat.Tx) error {
		w, err := tx.GetWebhook(context.Background(), hook.WebhookID)
		if err != nil {
			return err
		}
		w.URL, w.Secret = b.URL, "new"
		return tx.UpdateWebhook(context.Background(), w)
	}))
	answer()
	states := waitStates(t, s, ids)
	require.Equal(t, chat.DeliveryDelivered, states[ids[0]].State)
	require.Equal(t, 1, a.hitCount())
	require.Equal(t, 1, b.deliveredCount(ids[0]), "verified with the new secret")
}

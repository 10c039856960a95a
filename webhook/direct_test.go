package webhook

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// hookedService is a Service over s with a channel "c" with member alice
// and a webhook to rc, registered after the channel: only the posts'
// events are delivered.
func hookedService(t *testing.T, s chat.Store, rc *testReceiver) *chat.Service {
	t.Helper()
	ctx := context.Background()
	svc, err := chat.New(ctx, s, chat.Config{Logger: testLogger()})
	require.NoError(t, err)
	admin, _, err := svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	_, err = svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice"}})
	require.NoError(t, err)
	createHook(t, s, rc.URL, "k")
	return svc
}

// directSetup is hookedService with a started dispatcher with
// Config.Direct over the same Service.
func directSetup(t *testing.T, s chat.Store, rc *testReceiver, cfg Config) (*chat.Service, *Dispatcher) {
	t.Helper()
	ctx := context.Background()
	svc := hookedService(t, s, rc)
	cfg.Direct = true
	d := New(svc, s, cfg)
	require.NoError(t, d.Start(ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		require.NoError(t, d.Stop(ctx))
	})
	return svc, d
}

func post(t *testing.T, svc *chat.Service, text string) error {
	t.Helper()
	_, err := svc.CreateMessage(context.Background(), "alice", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: chat.TextData(text)})
	return err
}

// TestDirectDeliveriesNeedNoClaim: with Config.Direct, once the
// dispatcher's first claim has caught up, the delivery of each of the
// Service's creates is stored leased to it and handed over after the
// commit, so that no claim transaction runs for it (polls an hour apart:
// only a commit signal could make one). Each create here waits until the
// delivery before it is recorded, so the webhook never reaches its limit
// and no sender holds the dispatcher's lock when LeaseNew runs (it leaves
// the delivery for a claim rather than wait for that lock).
func TestDirectDeliveriesNeedNoClaim(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			cs := &countingStore{Store: b.open(t), counts: map[string]int{}}
			rc := newReceiver(t, "k", nil)
			svc, d := directSetup(t, cs, rc, testConfig(func(c *Config) { c.PollInterval = time.Hour }))
			require.Eventually(t, d.direct.Load, patience, time.Millisecond, "the first claim caught up")
			before := cs.snapshot()
			const n = 20
			for i := range n {
				require.NoError(t, post(t, svc, "direct"))
				require.Eventually(t, func() bool { return rc.total.Load() == int64(i+1) && d.InFlight() == 0 }, patience, time.Millisecond)
			}
			after := cs.snapshot()
			t.Logf("%s: transactions of %d creates with direct deliveries: %v", b.name, n, diff(before, after))
			require.Zero(t, after["lazy update "+OpClaim]-before["lazy update "+OpClaim], "claims for %d direct deliveries", n)
			requireDeliveredOnce(t, cs, rc, d, n)
		})
	}
}

// TestDirectBurst: creates faster than the receiver answers push the
// webhook to its limit (PerWebhook+Prefetch), past which deliveries are
// stored unleased and claimed; each one, taken directly or claimed, is
// delivered once.
func TestDirectBurst(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			cs := &countingStore{Store: b.open(t), counts: map[string]int{}}
			rc := newReceiver(t, "k", func(w http.ResponseWriter, r *http.Request, id string, attempt int) bool {
				time.Sleep(2 * time.Millisecond) // slower than the creates
				return false
			})
			svc, d := directSetup(t, cs, rc, testConfig(func(c *Config) { c.Workers, c.PerWebhook, c.Prefetch = 4, 2, 2 }))
			require.Eventually(t, d.direct.Load, patience, time.Millisecond, "the first claim caught up")
			const n = 40
			for range n {
				require.NoError(t, post(t, svc, "burst"))
			}
			require.Eventually(t, func() bool { return rc.total.Load() >= n }, patience, time.Millisecond)
			requireDeliveredOnce(t, cs, rc, d, n)
			t.Logf("%s: claims for %d creates in a burst: %d", b.name, n, cs.snapshot()["lazy update "+OpClaim])
		})
	}
}

// requireDeliveredOnce waits until every attempt is recorded, then checks
// that the receiver accepted each of the n deliveries once, that the store
// holds them delivered and unleased, and that no slot stays reserved.
func requireDeliveredOnce(t *testing.T, s chat.Store, rc *testReceiver, d *Dispatcher, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		ds := listDeliveries(t, s)
		for _, dl := range ds {
			if dl.State != chat.DeliveryDelivered {
				return false
			}
		}
		return len(ds) == n
	}, patience, time.Millisecond, "every attempt recorded")
	for _, dl := range listDeliveries(t, s) {
		require.Empty(t, dl.LeaseOwner, dl.RequestID)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	require.Len(t, rc.delivered, n)
	for id, k := range rc.delivered {
		require.Equal(t, 1, k, id)
	}
	require.Zero(t, rc.overlaps.Load())
	require.Zero(t, d.nReserved.Load(), "no slot left reserved")
}

// defers reports whether s keeps the deliveries taken directly with their
// events (chat.DeliveryDeferrer).
func defers(t *testing.T, s chat.Store) bool {
	t.Helper()
	var ok bool
	require.NoError(t, s.Update(context.Background(), func(tx chat.Tx) error {
		dd, is := tx.(chat.DeliveryDeferrer)
		ok = is && dd.DefersDeliveries()
		return nil
	}))
	return ok
}

// listDeliveries returns the deliveries of every webhook of s.
func listDeliveries(t *testing.T, s chat.Store) []*chat.Delivery {
	t.Helper()
	var out []*chat.Delivery
	require.NoError(t, s.View(context.Background(), func(tx chat.Tx) error {
		hooks, err := tx.ListWebhooks(context.Background())
		if err != nil {
			return err
		}
		for _, h := range hooks {
			ds, err := tx.ListDeliveries(context.Background(), h.WebhookID, "", 0)
			if err != nil {
				return err
			}
			out = append(out, ds...)
		}
		return nil
	}))
	return out
}

// failingStore makes an Update fail after its function succeeded (the
// transaction rolls back) while fail is set.
type failingStore struct {
	chat.Store
	fail, panics atomic.Bool
}

var errInjected = errors.New("injected: the transaction does not commit")

func (f *failingStore) Update(ctx context.Context, fn func(chat.Tx) error) error {
	return f.Store.Update(ctx, func(tx chat.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		if f.fail.Load() && chat.Operation(ctx) == "CreateMessage" {
			if f.panics.Load() {
				panic(errInjected)
			}
			return errInjected
		}
		return nil
	})
}

func (f *failingStore) WatchDeliveries(ctx context.Context) (<-chan struct{}, error) {
	return f.Store.(chat.DeliveryWatcher).WatchDeliveries(ctx)
}

// TestDirectReleasedWhenNotCommitted: a create whose transaction does not
// commit (it fails, or its function panics) gives back the slot its
// delivery reserved, and nothing is sent
// or stored for it; the next create's delivery is taken and delivered.
func TestDirectReleasedWhenNotCommitted(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fs := &failingStore{Store: b.open(t)}
			rc := newReceiver(t, "k", nil)
			svc, d := directSetup(t, fs, rc, testConfig(func(c *Config) { c.PollInterval = time.Hour }))
			require.Eventually(t, d.direct.Load, patience, time.Millisecond, "the first claim caught up")
			fs.fail.Store(true)
			for range 5 {
				require.ErrorIs(t, post(t, svc, "rolled back"), errInjected)
			}
			require.Zero(t, d.nReserved.Load(), "the slots of the deliveries rolled back are free")
			fs.panics.Store(true)
			require.PanicsWithValue(t, errInjected, func() { _ = post(t, svc, "panicked") })
			require.Zero(t, d.nReserved.Load(), "the slot of a delivery whose transaction panicked is free")
			fs.panics.Store(false)
			require.Empty(t, listDeliveries(t, fs))
			fs.fail.Store(false)
			require.NoError(t, post(t, svc, "committed"))
			require.Eventually(t, func() bool { return rc.total.Load() == 1 }, patience, time.Millisecond)
			// Recorded once the receiver's answer is in (a deferred
			// delivery is in the outbox only from then).
			require.Eventually(t, func() bool { return len(listDeliveries(t, fs)) == 1 }, patience, time.Millisecond)
		})
	}
}

// deadTaker leases the deliveries offered to it and never sends them: a
// process that died between the commit and the POST.
type deadTaker struct{ lease time.Duration }

func (k deadTaker) LeaseNew(string) (string, time.Time, bool) {
	return "dead", time.Now().Add(k.lease), true
}
func (deadTaker) TakeNew([]*chat.Delivery, []*chat.Webhook) {}
func (deadTaker) ReleaseNew([]*chat.Delivery)               {}

// TestDirectLeaseRunsOut: a delivery stored leased to a taker that never
// sends it (its process died) is claimed by another dispatcher once the
// lease has run out, and delivered: at least once, as a claimed delivery
// whose dispatcher died. A store that defers such deliveries
// (chat.DeliveryDeferrer) writes it to the outbox only when the lease has
// run out, leased as it was.
func TestDirectLeaseRunsOut(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t)
			rc := newReceiver(t, "k", nil)
			svc := hookedService(t, s, rc)
			stop := svc.TakeDeliveries(deadTaker{lease: 300 * time.Millisecond})
			require.NoError(t, post(t, svc, "orphaned"))
			stop()
			require.Equal(t, b.name == "sqlite", defers(t, s), "the SQLite store alone defers deliveries")
			if defers(t, s) {
				require.Empty(t, listDeliveries(t, s), "kept with its event while leased")
				require.Eventually(t, func() bool { return len(listDeliveries(t, s)) == 1 }, patience, 10*time.Millisecond,
					"in the outbox once the lease has run out")
			}
			ds := listDeliveries(t, s)
			require.Len(t, ds, 1)
			require.Equal(t, "dead", ds[0].LeaseOwner, "stored leased to the taker")
			require.NotNil(t, ds[0].LeaseUntil)
			start(t, s, testConfig(func(c *Config) { c.PollInterval = 20 * time.Millisecond }))
			require.Eventually(t, func() bool { return rc.total.Load() == 1 }, patience, time.Millisecond)
			require.Eventually(t, func() bool {
				ds := listDeliveries(t, s)
				return len(ds) == 1 && ds[0].State == chat.DeliveryDelivered
			}, patience, time.Millisecond)
		})
	}
}

// TestDirectOnlyWhenCaughtUp checks when LeaseNew gives a slot: not
// before the first claim has caught up, not after a commit signal until a
// claim has caught up again, not beyond the free slots or a webhook's
// limit, and not once the dispatcher has stopped; TakeNew after the stop
// only frees the slots.
func TestDirectOnlyWhenCaughtUp(t *testing.T) {
	t.Parallel()
	s := memoryBackend.open(t)
	gs := &gatedStore{Store: s, entered: make(chan struct{}, 1)}
	svc, err := chat.New(context.Background(), s, chat.Config{Logger: testLogger()})
	require.NoError(t, err)
	d := New(svc, gs, testConfig(func(c *Config) {
		c.Direct, c.PollInterval, c.Workers, c.PerWebhook, c.Prefetch = true, time.Hour, 4, 2, 1
	}))
	_, _, ok := d.LeaseNew("w")
	require.False(t, ok, "not started")
	require.NoError(t, d.Start(context.Background()))
	require.Eventually(t, d.direct.Load, patience, time.Millisecond, "the first claim caught up")

	// A webhook's limit is PerWebhook+Prefetch = 3; all slots 4+1 = 5.
	var leased []*chat.Delivery
	for range 3 {
		owner, until, ok := d.LeaseNew("w")
		require.True(t, ok)
		require.Equal(t, d.Owner(), owner)
		require.True(t, until.After(time.Now()))
		leased = append(leased, &chat.Delivery{WebhookID: "w"})
	}
	_, _, ok = d.LeaseNew("w")
	require.False(t, ok, "webhook w at its limit")
	for range 2 {
		_, _, ok := d.LeaseNew("v")
		require.True(t, ok)
		leased = append(leased, &chat.Delivery{WebhookID: "v"})
	}
	_, _, ok = d.LeaseNew("x")
	require.False(t, ok, "every slot reserved")
	d.ReleaseNew(leased)
	require.Zero(t, d.nReserved.Load())

	// An unleased delivery's commit signal: its claim goes first, no slot
	// is given until that claim has caught up.
	gate := make(chan struct{})
	gs.gate.Store(&gate)
	enqueue(t, s, newDeliveries(t, "no-such-hook", 1))
	<-gs.entered
	_, _, ok = d.LeaseNew("w")
	require.False(t, ok, "a claim under way after a signal")
	close(gate)
	require.Eventually(t, func() bool { return d.direct.Load() && d.InFlight() == 0 }, patience, time.Millisecond,
		"caught up again after the claim, its delivery recorded (no sender holds the lock LeaseNew tries)")

	_, _, ok = d.LeaseNew("w")
	require.True(t, ok)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	require.NoError(t, d.Stop(ctx))
	_, _, ok = d.LeaseNew("w")
	require.False(t, ok, "stopped")
	d.TakeNew([]*chat.Delivery{{RequestID: "r", WebhookID: "w"}}, []*chat.Webhook{nil})
	require.Zero(t, d.nReserved.Load(), "taken after the stop: dropped, its slot freed")
	require.Zero(t, d.InFlight())
}

// gatedStore holds each claim transaction, once gate is set, until gate
// is closed; entered receives a value when a claim waits.
type gatedStore struct {
	chat.Store
	gate    atomic.Pointer[chan struct{}]
	entered chan struct{}
}

func (g *gatedStore) Update(ctx context.Context, fn func(chat.Tx) error) error {
	if ch := g.gate.Load(); ch != nil && chat.Operation(ctx) == OpClaim {
		select {
		case g.entered <- struct{}{}:
		default:
		}
		<-*ch
	}
	return g.Store.Update(ctx, fn)
}

func (g *gatedStore) WatchDeliveries(ctx context.Context) (<-chan struct{}, error) {
	return g.Store.(chat.DeliveryWatcher).WatchDeliveries(ctx)
}

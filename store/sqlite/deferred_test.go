package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// holdingTaker leases every delivery offered to it to owner for lease and
// keeps what it is handed; it sends nothing (a dispatcher that died, or
// one whose attempts the test records itself).
type holdingTaker struct {
	owner string
	lease time.Duration
	mu    sync.Mutex
	taken []*chat.Delivery
}

func (k *holdingTaker) LeaseNew(string) (string, time.Time, bool) {
	return k.owner, time.Now().Add(k.lease), true
}

func (k *holdingTaker) TakeNew(ds []*chat.Delivery, _ []*chat.Webhook) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.taken = append(k.taken, ds...)
}

func (k *holdingTaker) ReleaseNew([]*chat.Delivery) {}

func (k *holdingTaker) all() []*chat.Delivery {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]*chat.Delivery(nil), k.taken...)
}

// deferredSetup makes a Service over s with a channel, a webhook and a
// holdingTaker leasing for a minute, posts n messages and returns the
// Service, the admin and the deliveries handed to the taker.
func deferredSetup(t *testing.T, s *Store, n int) (*chat.Service, string, *chat.Webhook, []*chat.Delivery) {
	t.Helper()
	ctx := context.Background()
	svc, err := chat.New(ctx, s, chat.Config{})
	require.NoError(t, err)
	admin, _, err := svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	_, err = svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard})
	require.NoError(t, err)
	h, err := svc.CreateWebhook(ctx, admin.UserID, "https://example.com/hook", []string{chat.EventMessageDidCreate})
	require.NoError(t, err)
	k := &holdingTaker{owner: "p1", lease: time.Minute}
	svc.TakeDeliveries(k)
	for i := range n {
		_, err := svc.CreateMessage(ctx, admin.UserID, chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText,
			Data: chat.TextData(fmt.Sprint("m", i))})
		require.NoError(t, err)
	}
	taken := k.all()
	require.Len(t, taken, n)
	for _, d := range taken {
		require.True(t, d.Deferred)
		require.Equal(t, "p1", d.LeaseOwner)
	}
	return svc, admin.UserID, h, taken
}

func countDeliveries(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	require.NoError(t, s.rdb.QueryRow("SELECT count(*) FROM deliveries").Scan(&n))
	return n
}

func ownerRow(t *testing.T, s *Store, id string) (resolved int64, found bool) {
	t.Helper()
	err := s.rdb.QueryRow("SELECT resolved_through FROM deferred_owners WHERE store_id = ?", id).Scan(&resolved)
	if err != nil {
		return 0, false
	}
	return resolved, true
}

func getDelivery(t *testing.T, s *Store, id string) (*chat.Delivery, []*chat.DeliveryAttempt) {
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

func finishDeferred(s *Store, owner string, d *chat.Delivery, status int) error {
	a := &chat.DeliveryAttempt{RequestID: d.RequestID, WebhookID: d.WebhookID, Event: d.Event, Attempt: 1,
		StatusCode: status, LatencyMs: 3, At: chat.NewTime(time.Now())}
	return s.Update(context.Background(), func(tx chat.Tx) error {
		return tx.(chat.DeliveryDeferrer).FinishDeferred(context.Background(), owner, d, a, chat.DeliveryDelivered, time.Now())
	})
}

// TestDeferredDeliveries: deliveries leased to a taker are kept with their
// events, not in the outbox; the first attempt inserts the delivery in its
// final state with the attempt; one whose lease runs out is written to the
// outbox pending and leased as it was, and its owner can still record its
// attempt there; another owner cannot.
func TestDeferredDeliveries(t *testing.T) {
	s := newStore(t, nil)
	_, _, _, taken := deferredSetup(t, s, 3)
	require.Zero(t, countDeliveries(t, s), "kept with their events")
	var withDeferred int
	require.NoError(t, s.rdb.QueryRow("SELECT count(*) FROM events WHERE deferred IS NOT NULL").Scan(&withDeferred))
	require.Equal(t, 3, withDeferred)

	// The first attempt stores the delivery, delivered, with its attempt.
	require.NoError(t, finishDeferred(s, "p1", taken[0], 204))
	d, as := getDelivery(t, s, taken[0].RequestID)
	require.Equal(t, chat.DeliveryDelivered, d.State)
	require.Equal(t, 1, d.Attempts)
	require.Equal(t, 204, d.LastStatus)
	require.Empty(t, d.LeaseOwner)
	require.Equal(t, string(taken[0].Body), string(d.Body))
	require.Len(t, as, 1)
	require.Equal(t, 204, as[0].StatusCode)
	require.Equal(t, chat.CodeConflict, chat.ErrorCode(finishDeferred(s, "p1", taken[0], 204)), "recorded once")

	// Leases still running: nothing more is stored.
	now := time.Now()
	require.NoError(t, s.tendDeferred(context.Background(), now))
	require.Equal(t, 1, countDeliveries(t, s))
	r, ok := ownerRow(t, s, s.deferred.id)
	require.True(t, ok, "the store's owner row")
	var firstOpen int64
	require.NoError(t, s.rdb.QueryRow("SELECT min(id) FROM events WHERE deferred IS NOT NULL AND deferred LIKE ?",
		"%"+taken[1].RequestID+"%").Scan(&firstOpen))
	require.Equal(t, firstOpen-1, r, "resolved through the event before the first open delivery")

	// Leases run out: stored pending, leased as they were, same bodies.
	require.NoError(t, s.tendDeferred(context.Background(), now.Add(2*time.Minute)))
	require.Equal(t, 3, countDeliveries(t, s))
	for _, td := range taken[1:] {
		d, as := getDelivery(t, s, td.RequestID)
		require.Equal(t, chat.DeliveryPending, d.State)
		require.Equal(t, "p1", d.LeaseOwner)
		require.Zero(t, d.Attempts)
		require.Empty(t, as)
		require.Equal(t, string(td.Body), string(d.Body))
		require.Equal(t, td.CreatedAt.UnixMilli(), d.CreatedAt.UnixMilli())
	}
	s.deferred.mu.Lock()
	require.Empty(t, s.deferred.open)
	s.deferred.mu.Unlock()

	// Its owner records its attempt on the stored row; another cannot.
	require.NoError(t, finishDeferred(s, "p1", taken[1], 204))
	d, as = getDelivery(t, s, taken[1].RequestID)
	require.Equal(t, chat.DeliveryDelivered, d.State)
	require.Len(t, as, 1)
	require.Equal(t, chat.CodeConflict, chat.ErrorCode(finishDeferred(s, "p2", taken[2], 204)))
	d, _ = getDelivery(t, s, taken[2].RequestID)
	require.Equal(t, chat.DeliveryPending, d.State)

	// With nothing open, the row says so once.
	require.NoError(t, s.tendDeferred(context.Background(), time.Now()))
	r, _ = ownerRow(t, s, s.deferred.id)
	var last int64
	require.NoError(t, s.rdb.QueryRow("SELECT max(id) FROM events WHERE deferred IS NOT NULL").Scan(&last))
	require.Equal(t, last, r)
}

// TestDeferredWebhookGone: a deferred delivery of a webhook deleted
// meanwhile is not stored, by its attempt (CodeNotFound) or when its
// lease runs out.
func TestDeferredWebhookGone(t *testing.T) {
	s := newStore(t, nil)
	svc, admin, h, taken := deferredSetup(t, s, 2)
	require.NoError(t, svc.DeleteWebhook(context.Background(), admin, h.WebhookID))
	require.Equal(t, chat.CodeNotFound, chat.ErrorCode(finishDeferred(s, "p1", taken[0], 204)))
	require.NoError(t, s.tendDeferred(context.Background(), time.Now().Add(2*time.Minute)))
	require.Zero(t, countDeliveries(t, s))
	s.deferred.mu.Lock()
	require.Empty(t, s.deferred.open)
	s.deferred.mu.Unlock()
}

// TestDeferredClose: Close writes the deferred deliveries not yet recorded
// to the outbox, leased as they were, and deletes the store's row.
func TestDeferredClose(t *testing.T) {
	requireCgo(t)
	path := filepath.Join(t.TempDir(), "chat.db")
	s, err := Open(context.Background(), path, nil)
	require.NoError(t, err)
	_, _, _, taken := deferredSetup(t, s, 2)
	require.NoError(t, finishDeferred(s, "p1", taken[0], 204))
	require.NoError(t, s.Close())
	s = openPath(t, path)
	require.Equal(t, 2, countDeliveries(t, s))
	d, _ := getDelivery(t, s, taken[1].RequestID)
	require.Equal(t, chat.DeliveryPending, d.State)
	require.Equal(t, "p1", d.LeaseOwner)
	require.Equal(t, string(taken[1].Body), string(d.Body))
	var rows int
	require.NoError(t, s.rdb.QueryRow("SELECT count(*) FROM deferred_owners").Scan(&rows))
	require.Zero(t, rows)
}

func openPath(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// crash ends s as a killed process would: no deferred delivery is written
// to the outbox and its owner row stays.
func crash(t *testing.T, s *Store) {
	t.Helper()
	close(s.deferredStop)
	<-s.deferredDone
	s.deferred.mu.Lock()
	clear(s.deferred.open)
	s.deferred.rowUntil = 0
	s.deferred.mu.Unlock()
	s.deferredStop = make(chan struct{}) // closed again by Close
	s.deferredDone = make(chan struct{})
	close(s.deferredDone)
	require.NoError(t, s.Close())
}

// TestDeferredSweep: a store whose process ended without closing it
// leaves its deferred deliveries with its events and its owner row. Another
// store on the file keeps those events from retention, waits until the row
// has lapsed and the leases have run out, then stores the deliveries not
// recorded, once, pending and leased as they were, and deletes the row.
func TestDeferredSweep(t *testing.T) {
	requireCgo(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "chat.db")
	a, err := Open(ctx, path, nil)
	require.NoError(t, err)
	_, admin, _, taken := deferredSetup(t, a, 3)
	require.NoError(t, finishDeferred(a, "p1", taken[0], 204))
	dead := a.deferred.id
	crash(t, a)

	b := openPath(t, path)
	_, ok := ownerRow(t, b, dead)
	require.True(t, ok, "the dead store's row stays")

	// Retention keeps the events of the deliveries not recorded.
	require.NoError(t, b.Update(ctx, func(tx chat.Tx) error {
		_, err := tx.DeleteEventsBefore(ctx, time.Now().Add(time.Hour), 1000)
		return err
	}))
	for _, d := range taken[1:] {
		var n int
		require.NoError(t, b.rdb.QueryRow("SELECT count(*) FROM events WHERE deferred LIKE ?", "%"+d.RequestID+"%").Scan(&n))
		require.Equal(t, 1, n, "the event of %s is kept", d.RequestID)
	}

	now := time.Now()
	require.NoError(t, b.tendDeferred(ctx, now))
	require.Equal(t, 1, countDeliveries(t, b), "the row has not lapsed")
	require.NoError(t, b.tendDeferred(ctx, now.Add(deferredWindow+time.Second)))
	require.Equal(t, 1, countDeliveries(t, b), "the leases have not run out")
	_, ok = ownerRow(t, b, dead)
	require.True(t, ok)

	// The live store defers a delivery of its own: the sweep of the dead
	// one's row leaves it alone.
	svc, err := chat.New(ctx, b, chat.Config{})
	require.NoError(t, err)
	k := &holdingTaker{owner: "p2", lease: time.Minute}
	svc.TakeDeliveries(k)
	_, err = svc.CreateMessage(ctx, admin, chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: chat.TextData("live")})
	require.NoError(t, err)
	require.Len(t, k.all(), 1)

	require.NoError(t, b.sweepOwner(ctx, dead, now.Add(2*time.Minute).UnixMilli()))
	require.Equal(t, 3, countDeliveries(t, b))
	_, ok = ownerRow(t, b, dead)
	require.False(t, ok, "swept")
	d, as := getDelivery(t, b, taken[0].RequestID)
	require.Equal(t, chat.DeliveryDelivered, d.State, "recorded before the crash: unchanged")
	require.Len(t, as, 1)
	for _, td := range taken[1:] {
		d, _ := getDelivery(t, b, td.RequestID)
		require.Equal(t, chat.DeliveryPending, d.State)
		require.Equal(t, "p1", d.LeaseOwner)
		require.Equal(t, string(td.Body), string(d.Body), "the body sent before")
	}
	require.NoError(t, b.sweepOwner(ctx, dead, now.Add(3*time.Minute).UnixMilli()))
	require.Equal(t, 3, countDeliveries(t, b))
	require.NoError(t, finishDeferred(b, "p2", k.all()[0], 204))

	// With the dead store's row gone and the live one's up to date
	// (nothing open), retention deletes those events too.
	require.NoError(t, b.tendDeferred(ctx, time.Now()))
	require.NoError(t, b.Update(ctx, func(tx chat.Tx) error {
		_, err := tx.DeleteEventsBefore(ctx, time.Now().Add(time.Hour), 1000)
		return err
	}))
	var left int
	require.NoError(t, b.rdb.QueryRow("SELECT count(*) FROM events").Scan(&left))
	require.Zero(t, left)
}

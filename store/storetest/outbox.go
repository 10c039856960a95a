package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

var webhookCases = []tcase{
	{"CRUD", testWebhookCRUD},
	{"Version", testWebhooksVersion},
	{"DeleteRemovesPendingDeliveries", testDeleteWebhookDeliveries},
	{"Isolation", testWebhookIsolation},
}

var outboxCases = []tcase{
	{"EnqueueGet", testEnqueueGet},
	{"Claim", testClaim},
	{"LeaseExpiry", testLeaseExpiry},
	{"FinishDelivered", testFinishDelivered},
	{"FinishRetryThenFailed", testFinishRetry},
	{"FinishConflict", testFinishConflict},
	{"AttemptsListed", testAttemptsListed},
	{"FinishDeliveries", testFinishDeliveries},
	{"ListDeliveries", testListDeliveries},
	{"Reschedule", testReschedule},
	{"NextDeliveryAt", testNextDeliveryAt},
	{"CountDeliveries", testCountDeliveries},
	{"ClaimQuota", testClaimQuota},
	{"ClaimQuotaLimit", testClaimQuotaLimit},
	{"ConcurrentClaims", testConcurrentClaims},
}

func webhook(id string, ms int64, events ...string) *chat.Webhook {
	return &chat.Webhook{
		WebhookID: id, URL: "https://example.com/hooks/" + id, Events: events, Secret: "secret-" + id,
		CreatedAt: at(ms), UpdatedAt: at(ms),
	}
}

func (e *env) createWebhooks(ws ...*chat.Webhook) {
	e.t.Helper()
	e.update(func(tx chat.Tx) error {
		for _, w := range ws {
			if err := tx.CreateWebhook(e.ctx, w); err != nil {
				return err
			}
		}
		return nil
	})
}

func (e *env) webhook(id string) (*chat.Webhook, error) {
	return readErr(e, func(tx chat.Tx) (*chat.Webhook, error) { return tx.GetWebhook(e.ctx, id) })
}

func testWebhookCRUD(t *testing.T, e *env) {
	e.createWebhooks(webhook("w1", 2000, chat.EventMessageDidCreate, chat.EventChannelDidCreate), webhook("w0", 1000), webhook("w2", 2000))
	got, err := e.webhook("w1")
	require.NoError(t, err)
	require.Equal(t, cWebhook(t, webhook("w1", 2000, chat.EventMessageDidCreate, chat.EventChannelDidCreate)), cWebhook(t, got), "with its secret")
	_, err = e.webhook("missing")
	requireNotFound(t, err, "GetWebhook")
	err = e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.CreateWebhook(e.ctx, webhook("w1", 5)) })
	requireConflict(t, err, "duplicate webhook id")

	list := read(e, func(tx chat.Tx) ([]*chat.Webhook, error) { return tx.ListWebhooks(e.ctx) })
	var ids []string
	for _, w := range list {
		ids = append(ids, w.WebhookID)
	}
	require.Equal(t, []string{"w0", "w1", "w2"}, ids, "createdAt, then id")
	require.Equal(t, "secret-w0", list[0].Secret, "with secrets")

	upd := webhook("w1", 2000)
	upd.URL = "https://example.org/new"
	upd.Events = nil
	upd.Secret = "rotated"
	upd.IsDisabled = true
	upd.DisabledReason = "410 Gone"
	upd.UpdatedAt = at(9000)
	upd.CreatedAt = at(1) // not written
	e.update(func(tx chat.Tx) error { return tx.UpdateWebhook(e.ctx, upd) })
	got, err = e.webhook("w1")
	require.NoError(t, err)
	want := *upd
	want.CreatedAt = at(2000)
	require.Equal(t, cWebhook(t, &want), cWebhook(t, got))
	err = e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.UpdateWebhook(e.ctx, webhook("missing", 1)) })
	requireNotFound(t, err, "UpdateWebhook")

	e.update(func(tx chat.Tx) error { return tx.DeleteWebhook(e.ctx, "w1") })
	_, err = e.webhook("w1")
	requireNotFound(t, err, "deleted webhook")
	err = e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.DeleteWebhook(e.ctx, "w1") })
	requireNotFound(t, err, "DeleteWebhook twice")
	list = read(e, func(tx chat.Tx) ([]*chat.Webhook, error) { return tx.ListWebhooks(e.ctx) })
	require.Len(t, list, 2)
}

func testWebhooksVersion(t *testing.T, e *env) {
	version := func() int64 {
		t.Helper()
		return read(e, func(tx chat.Tx) (int64, error) { return tx.WebhooksVersion(e.ctx) })
	}
	v := version()
	require.Equal(t, v, version(), "stable without writes")
	step := func(name string, fn func(tx chat.Tx) error) {
		t.Helper()
		e.update(fn)
		nv := version()
		require.NotEqual(t, v, nv, "WebhooksVersion must change after %s", name)
		v = nv
	}
	step("CreateWebhook", func(tx chat.Tx) error { return tx.CreateWebhook(e.ctx, webhook("w", 1)) })
	step("UpdateWebhook", func(tx chat.Tx) error {
		w := webhook("w", 1)
		w.IsDisabled = true
		return tx.UpdateWebhook(e.ctx, w)
	})
	step("CreateWebhook again", func(tx chat.Tx) error { return tx.CreateWebhook(e.ctx, webhook("x", 1)) })
	step("DeleteWebhook", func(tx chat.Tx) error { return tx.DeleteWebhook(e.ctx, "w") })
}

func testWebhookIsolation(t *testing.T, e *env) {
	w := webhook("w", 1, "a", "b")
	e.createWebhooks(w)
	w.Events[0] = "changed"
	got, err := e.webhook("w")
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, got.Events)
	got.Events[1] = "changed"
	list := read(e, func(tx chat.Tx) ([]*chat.Webhook, error) { return tx.ListWebhooks(e.ctx) })
	require.Equal(t, []string{"a", "b"}, list[0].Events)
	list[0].Events[0] = "changed"
	got, err = e.webhook("w")
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, got.Events)
}

// ---- outbox ----

func (e *env) enqueue(ds ...*chat.Delivery) {
	e.t.Helper()
	e.update(func(tx chat.Tx) error { return tx.EnqueueDeliveries(e.ctx, ds) })
}

func (e *env) claim(owner string, now chat.Time, lease time.Duration, limit int) []*chat.Delivery {
	e.t.Helper()
	return write(e, func(tx chat.Tx) ([]*chat.Delivery, error) {
		return tx.ClaimDeliveries(e.ctx, owner, now.Time, lease, limit, chat.DeliveryQuota{})
	})
}

func (e *env) finish(owner string, a *chat.DeliveryAttempt, state string, next chat.Time) error {
	return e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.FinishDelivery(e.ctx, owner, a, state, next.Time) })
}

func (e *env) nextDeliveryAt() (chat.Time, bool) {
	e.t.Helper()
	type res struct {
		t  time.Time
		ok bool
	}
	r := read(e, func(tx chat.Tx) (res, error) {
		t, ok, err := tx.NextDeliveryAt(e.ctx)
		return res{t, ok}, err
	})
	if r.ok {
		require.Equal(e.t, time.UTC, r.t.Location(), "NextDeliveryAt in UTC")
	}
	return chat.Time{Time: r.t}, r.ok
}

func attempt(d string, n, status int, errText string, ms int64) *chat.DeliveryAttempt {
	return &chat.DeliveryAttempt{
		RequestID: d, WebhookID: "w", Event: chat.EventMessageDidCreate, Attempt: n,
		StatusCode: status, LatencyMs: int64(10 * n), Error: errText, At: at(ms),
	}
}

const lease = time.Minute

func testEnqueueGet(t *testing.T, e *env) {
	e.createWebhooks(webhook("w", 0))
	d := newDelivery("d1", "w", at(10), at(5))
	d.Body = append(d.Body, 0, 0xff, '\n') // exact bytes, not only valid JSON
	e.enqueue(d, newDelivery("d2", "w", at(20), at(5)))
	got := e.delivery("d1")
	require.Equal(t, cDelivery(t, d), cDelivery(t, got))
	require.Equal(t, d.Body, got.Body)
	require.Equal(t, chat.DeliveryPending, got.State)
	require.Zero(t, got.Attempts)
	require.Nil(t, got.LeaseUntil)
	require.Empty(t, got.LeaseOwner)

	err := e.s.Update(e.ctx, func(tx chat.Tx) error {
		return tx.EnqueueDeliveries(e.ctx, []*chat.Delivery{newDelivery("d3", "w", at(1), at(1)), newDelivery("d1", "w", at(1), at(1))})
	})
	requireConflict(t, err, "duplicate requestId")
	_, err = readErr(e, func(tx chat.Tx) (*chat.Delivery, error) { return tx.GetDelivery(e.ctx, "d3") })
	requireNotFound(t, err, "the rest of a failed batch")
	_, err = readErr(e, func(tx chat.Tx) (*chat.Delivery, error) { return tx.GetDelivery(e.ctx, "missing") })
	requireNotFound(t, err, "GetDelivery")

	// Isolation of Body.
	d.Body[0] = 'X'
	got.Body[1] = 'Y'
	require.Equal(t, newDelivery("d2", "w", at(20), at(5)).Body, e.delivery("d2").Body)
	require.Equal(t, byte('{'), e.delivery("d1").Body[0])
	require.Equal(t, byte('"'), e.delivery("d1").Body[1])
}

func testClaim(t *testing.T, e *env) {
	e.createWebhooks(webhook("w", 0))
	e.enqueue(
		newDelivery("a", "w", at(10_000), at(0)),
		newDelivery("b", "w", at(5_000), at(0)),
		newDelivery("c", "w", at(20_000), at(0)),
		newDelivery("d", "w", at(3_600_000), at(0)), // not due
	)
	now := at(25_000)
	got := e.claim("o1", now, lease, 2)
	require.Equal(t, []string{"b", "a"}, deliveryIDs(got), "due ones, ordered by nextAttemptAt, up to limit")
	for _, d := range got {
		require.Equal(t, "o1", d.LeaseOwner)
		require.NotNil(t, d.LeaseUntil)
		require.True(t, now.Add(lease).Equal(d.LeaseUntil.Time), "leaseUntil = now + lease")
		require.Equal(t, chat.DeliveryPending, d.State)
		stored := e.delivery(d.RequestID)
		require.Equal(t, cDelivery(t, d), cDelivery(t, stored), "the claim is stored")
	}
	require.Equal(t, []string{"c"}, deliveryIDs(e.claim("o2", now, lease, 10)), "leased ones are skipped")
	require.Empty(t, e.claim("o3", at(26_000), lease, 10), "a second claim while leased returns nothing")
	require.Empty(t, e.claim("o3", at(1_000), lease, 10), "nothing due earlier")
}

func testLeaseExpiry(t *testing.T, e *env) {
	e.createWebhooks(webhook("w", 0))
	e.enqueue(newDelivery("a", "w", at(0), at(0)), newDelivery("b", "w", at(1), at(0)))
	require.Equal(t, []string{"a", "b"}, deliveryIDs(e.claim("o1", at(100), lease, 10)))
	require.Empty(t, e.claim("o2", chat.NewTime(at(100).Add(lease-time.Millisecond)), lease, 10), "lease still running")
	later := chat.NewTime(at(100).Add(lease + time.Second))
	got := e.claim("o2", later, lease, 10)
	require.Equal(t, []string{"a", "b"}, deliveryIDs(got), "claimable again after lease expiry")
	require.Equal(t, "o2", got[0].LeaseOwner)
	err := e.finish("o1", attempt("a", 1, 200, "", 200), chat.DeliveryDelivered, chat.Time{})
	requireConflict(t, err, "the first owner's FinishDelivery after another owner took the delivery")
	d := e.delivery("a")
	require.Equal(t, chat.DeliveryPending, d.State, "a refused finish changes nothing")
	require.Zero(t, d.Attempts)
	require.Equal(t, "o2", d.LeaseOwner)
	require.NoError(t, e.finish("o2", attempt("a", 1, 200, "", 200), chat.DeliveryDelivered, chat.Time{}))
	require.Equal(t, chat.DeliveryDelivered, e.delivery("a").State)
	attempts := read(e, func(tx chat.Tx) ([]*chat.DeliveryAttempt, error) { return tx.ListAttempts(e.ctx, "a") })
	require.Len(t, attempts, 1, "only the accepted attempt is recorded")
}

func testFinishDelivered(t *testing.T, e *env) {
	e.createWebhooks(webhook("w", 0))
	e.enqueue(newDelivery("a", "w", at(0), at(0)))
	e.claim("o", at(10), lease, 1)
	a := attempt("a", 1, 204, "", 500)
	require.NoError(t, e.finish("o", a, chat.DeliveryDelivered, chat.Time{}))
	d := e.delivery("a")
	require.Equal(t, chat.DeliveryDelivered, d.State)
	require.Equal(t, 1, d.Attempts)
	require.Equal(t, 204, d.LastStatus)
	require.Empty(t, d.LastError)
	require.Empty(t, d.LeaseOwner, "lease cleared")
	require.Nil(t, d.LeaseUntil, "lease cleared")
	attempts := read(e, func(tx chat.Tx) ([]*chat.DeliveryAttempt, error) { return tx.ListAttempts(e.ctx, "a") })
	require.Len(t, attempts, 1)
	require.Equal(t, cAttempt(t, a), cAttempt(t, attempts[0]))
	require.Empty(t, e.claim("o", at(10_000_000), lease, 10), "a delivered delivery is never claimed")
	_, ok := e.nextDeliveryAt()
	require.False(t, ok)
}

func testFinishRetry(t *testing.T, e *env) {
	e.createWebhooks(webhook("w", 0))
	e.enqueue(newDelivery("a", "w", at(0), at(0)))
	e.claim("o", at(10), lease, 1)
	a1 := attempt("a", 1, 500, "server error", 20)
	require.NoError(t, e.finish("o", a1, chat.DeliveryPending, at(5_000)))
	d := e.delivery("a")
	require.Equal(t, chat.DeliveryPending, d.State)
	require.Equal(t, 1, d.Attempts)
	require.Equal(t, 500, d.LastStatus)
	require.Equal(t, "server error", d.LastError)
	require.True(t, at(5_000).Equal(d.NextAttemptAt.Time), "nextAttemptAt set")
	require.Nil(t, d.LeaseUntil)
	require.Empty(t, d.LeaseOwner)
	next, ok := e.nextDeliveryAt()
	require.True(t, ok)
	require.True(t, at(5_000).Equal(next.Time))

	require.Empty(t, e.claim("o", at(4_999), lease, 1), "not due before nextAttemptAt")
	require.Equal(t, []string{"a"}, deliveryIDs(e.claim("o2", at(5_000), lease, 1)))
	a2 := attempt("a", 2, 0, "dial tcp: timeout", 6_000)
	require.NoError(t, e.finish("o2", a2, chat.DeliveryFailed, chat.Time{}))
	d = e.delivery("a")
	require.Equal(t, chat.DeliveryFailed, d.State)
	require.Equal(t, 2, d.Attempts)
	require.Equal(t, 0, d.LastStatus)
	require.Equal(t, "dial tcp: timeout", d.LastError)
	attempts := read(e, func(tx chat.Tx) ([]*chat.DeliveryAttempt, error) { return tx.ListAttempts(e.ctx, "a") })
	require.Len(t, attempts, 2)
	require.Equal(t, cAttempt(t, a1), cAttempt(t, attempts[0]), "attempts in order")
	require.Equal(t, cAttempt(t, a2), cAttempt(t, attempts[1]))
	require.Empty(t, e.claim("o", at(10_000_000), lease, 10), "a failed delivery is never claimed")
	_, ok = e.nextDeliveryAt()
	require.False(t, ok)
}

func testFinishConflict(t *testing.T, e *env) {
	e.createWebhooks(webhook("w", 0))
	e.enqueue(newDelivery("a", "w", at(0), at(0)), newDelivery("b", "w", at(0), at(0)))
	requireConflict(t, e.finish("o", attempt("a", 1, 200, "", 1), chat.DeliveryDelivered, chat.Time{}), "never claimed")
	e.claim("o", at(1), lease, 10)
	requireConflict(t, e.finish("other", attempt("a", 1, 200, "", 1), chat.DeliveryDelivered, chat.Time{}), "claimed by another owner")
	require.NoError(t, e.finish("o", attempt("a", 1, 200, "", 1), chat.DeliveryDelivered, chat.Time{}))
	requireConflict(t, e.finish("o", attempt("a", 2, 200, "", 2), chat.DeliveryDelivered, chat.Time{}), "finished already")
	d := e.delivery("a")
	require.Equal(t, 1, d.Attempts)
	require.Len(t, read(e, func(tx chat.Tx) ([]*chat.DeliveryAttempt, error) { return tx.ListAttempts(e.ctx, "a") }), 1)
	require.Empty(t, read(e, func(tx chat.Tx) ([]*chat.DeliveryAttempt, error) { return tx.ListAttempts(e.ctx, "b") }))
}

// testAttemptsListed: every recorded attempt is listed, in order, whatever
// number its caller gave it; a number of 0 becomes the delivery's attempts
// with it, and an attempt without webhookId and event gets the delivery's.
func testAttemptsListed(t *testing.T, e *env) {
	e.createWebhooks(webhook("w", 0))
	e.enqueue(newDelivery("a", "w", at(0), at(0)))
	e.claim("o1", at(1), lease, 1)
	a1 := attempt("a", 1, 500, "first", 2)
	require.NoError(t, e.finish("o1", a1, chat.DeliveryPending, at(10)))
	e.claim("o2", at(10), lease, 1)
	a2 := attempt("a", 1, 502, "numbered 1 again", 11)
	require.NoError(t, e.finish("o2", a2, chat.DeliveryPending, at(20)))
	e.claim("o3", at(20), lease, 1)
	a3 := &chat.DeliveryAttempt{RequestID: "a", StatusCode: 204, LatencyMs: 7, At: at(21)}
	require.NoError(t, e.finish("o3", a3, chat.DeliveryDelivered, chat.Time{}))
	d := e.delivery("a")
	require.Equal(t, 3, d.Attempts)
	require.Equal(t, 204, d.LastStatus)
	require.Empty(t, d.LastError)
	got := read(e, func(tx chat.Tx) ([]*chat.DeliveryAttempt, error) { return tx.ListAttempts(e.ctx, "a") })
	require.Len(t, got, 3)
	require.Equal(t, cAttempt(t, a1), cAttempt(t, got[0]))
	require.Equal(t, cAttempt(t, a2), cAttempt(t, got[1]))
	want := *a3
	want.WebhookID, want.Event, want.Attempt = "w", chat.EventMessageDidCreate, 3
	require.Equal(t, cAttempt(t, &want), cAttempt(t, got[2]))
}

// chat.FinishDeliveries (the adapter's DeliveryFinisher when it has one)
// records a batch exactly as FinishDelivery one by one: per-item outcomes,
// attempts in order, retries, and nothing for the items it refuses.
func testFinishDeliveries(t *testing.T, e *env) {
	e.createWebhooks(webhook("w", 0))
	e.enqueue(newDelivery("a", "w", at(0), at(0)), newDelivery("b", "w", at(0), at(0)),
		newDelivery("c", "w", at(0), at(0)), newDelivery("x", "w", at(0), at(0)))
	require.Len(t, e.claim("o", at(10), lease, 3), 3) // a, b, c
	require.Len(t, e.claim("other", at(10), lease, 1), 1)
	aA := attempt("a", 1, 204, "", 500)
	aB := attempt("b", 1, 503, "bad \"gateway\", {retry}", 600)
	aC := attempt("c", 1, 0, "dial tcp: refused", 700)
	aC.WebhookID, aC.Event = "", "" // taken from the delivery
	fs := []chat.DeliveryFinish{
		{Attempt: aA, State: chat.DeliveryDelivered},
		{Attempt: attempt("missing", 1, 200, "", 1), State: chat.DeliveryDelivered},
		{Attempt: aB, State: chat.DeliveryPending, NextAttemptAt: at(9_000).Time},
		{Attempt: attempt("x", 1, 200, "", 1), State: chat.DeliveryDelivered}, // leased by another owner
		{Attempt: aC, State: chat.DeliveryFailed},
	}
	var errs []error
	e.update(func(tx chat.Tx) error {
		var err error
		errs, err = chat.FinishDeliveries(e.ctx, tx, "o", fs)
		return err
	})
	require.Len(t, errs, len(fs))
	require.NoError(t, errs[0])
	requireNotFound(t, errs[1], "missing delivery")
	require.NoError(t, errs[2])
	requireConflict(t, errs[3], "leased by another owner")
	require.NoError(t, errs[4])

	attempts := func(id string) []*chat.DeliveryAttempt {
		return read(e, func(tx chat.Tx) ([]*chat.DeliveryAttempt, error) { return tx.ListAttempts(e.ctx, id) })
	}
	d := e.delivery("a")
	require.Equal(t, chat.DeliveryDelivered, d.State)
	require.Equal(t, 1, d.Attempts)
	require.Equal(t, 204, d.LastStatus)
	require.Empty(t, d.LeaseOwner)
	require.Nil(t, d.LeaseUntil)
	require.Len(t, attempts("a"), 1)
	require.Equal(t, cAttempt(t, aA), cAttempt(t, attempts("a")[0]))

	d = e.delivery("b")
	require.Equal(t, chat.DeliveryPending, d.State)
	require.Equal(t, 503, d.LastStatus)
	require.Equal(t, aB.Error, d.LastError)
	require.True(t, at(9_000).Equal(d.NextAttemptAt.Time), "nextAttemptAt set")
	require.Len(t, attempts("b"), 1)
	require.Equal(t, cAttempt(t, aB), cAttempt(t, attempts("b")[0]))

	d = e.delivery("c")
	require.Equal(t, chat.DeliveryFailed, d.State)
	require.Equal(t, "dial tcp: refused", d.LastError)
	got := attempts("c")
	require.Len(t, got, 1)
	require.Equal(t, "w", got[0].WebhookID, "webhook id taken from the delivery")
	require.Equal(t, chat.EventMessageDidCreate, got[0].Event, "event taken from the delivery")

	d = e.delivery("x")
	require.Equal(t, chat.DeliveryPending, d.State)
	require.Equal(t, "other", d.LeaseOwner, "untouched")
	require.Zero(t, d.Attempts)
	require.Empty(t, attempts("x"))

	next, ok := e.nextDeliveryAt()
	require.True(t, ok)
	require.True(t, at(9_000).Equal(next.Time) || next.Before(at(9_000).Time))
	require.Equal(t, []string{"b"}, deliveryIDs(e.claim("o", at(9_000), lease, 10)), "b is due again")
}

func testListDeliveries(t *testing.T, e *env) {
	e.createWebhooks(webhook("w1", 0), webhook("w2", 0))
	e.enqueue(
		newDelivery("d1", "w1", at(0), at(1)),
		newDelivery("d2", "w1", at(0), at(2)),
		newDelivery("d3", "w1", at(0), at(2)),
		newDelivery("d4", "w1", at(0), at(3)),
		newDelivery("d5", "w2", at(0), at(4)),
	)
	list := func(hook, before string, limit int) []string {
		t.Helper()
		return nilIfEmpty(deliveryIDs(read(e, func(tx chat.Tx) ([]*chat.Delivery, error) {
			return tx.ListDeliveries(e.ctx, hook, before, limit)
		})))
	}
	require.Equal(t, []string{"d4", "d3", "d2", "d1"}, list("w1", "", 10), "newest first: createdAt, then requestId descending")
	require.Equal(t, []string{"d4", "d3"}, list("w1", "", 2))
	require.Equal(t, []string{"d2", "d1"}, list("w1", "d3", 2), "before the cursor delivery")
	require.Equal(t, []string{"d1"}, list("w1", "d2", 10))
	require.Nil(t, list("w1", "d1", 10))
	require.Equal(t, []string{"d5"}, list("w2", "", 10))
	require.Nil(t, list("none", "", 10))
	got := read(e, func(tx chat.Tx) ([]*chat.Delivery, error) { return tx.ListDeliveries(e.ctx, "w1", "", 1) })
	require.Equal(t, cDelivery(t, newDelivery("d4", "w1", at(0), at(3))), cDelivery(t, got[0]))
}

func testReschedule(t *testing.T, e *env) {
	e.createWebhooks(webhook("w", 0))
	e.enqueue(newDelivery("a", "w", at(0), at(0)), newDelivery("b", "w", at(1), at(0)))
	// Redeliver a delivered one.
	require.Equal(t, []string{"a"}, deliveryIDs(e.claim("o", at(1), lease, 1)))
	require.NoError(t, e.finish("o", attempt("a", 1, 200, "", 2), chat.DeliveryDelivered, chat.Time{}))
	e.update(func(tx chat.Tx) error { return tx.RescheduleDelivery(e.ctx, "a", at(100).Time) })
	d := e.delivery("a")
	require.Equal(t, chat.DeliveryPending, d.State)
	require.True(t, at(100).Equal(d.NextAttemptAt.Time))
	require.Nil(t, d.LeaseUntil)
	require.Equal(t, 1, d.Attempts, "attempts kept")
	require.Equal(t, []string{"b"}, deliveryIDs(e.claim("o", at(99), lease, 10)), "not due before its new nextAttemptAt")

	// Reschedule a leased one: the lease goes, another owner may claim it,
	// the first owner's finish is refused.
	require.Equal(t, []string{"a"}, deliveryIDs(e.claim("o1", at(100), lease, 10)))
	e.update(func(tx chat.Tx) error { return tx.RescheduleDelivery(e.ctx, "a", at(150).Time) })
	d = e.delivery("a")
	require.Nil(t, d.LeaseUntil)
	require.Empty(t, d.LeaseOwner)
	require.Equal(t, []string{"a"}, deliveryIDs(e.claim("o2", at(150), lease, 10)))
	requireConflict(t, e.finish("o1", attempt("a", 2, 200, "", 151), chat.DeliveryDelivered, chat.Time{}))
	require.NoError(t, e.finish("o2", attempt("a", 2, 200, "", 151), chat.DeliveryDelivered, chat.Time{}))
	attempts := read(e, func(tx chat.Tx) ([]*chat.DeliveryAttempt, error) { return tx.ListAttempts(e.ctx, "a") })
	require.Len(t, attempts, 2, "the attempt before the redelivery is kept")
	require.Equal(t, cAttempt(t, attempt("a", 1, 200, "", 2)), cAttempt(t, attempts[0]))
	require.Equal(t, cAttempt(t, attempt("a", 2, 200, "", 151)), cAttempt(t, attempts[1]))

	err := e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.RescheduleDelivery(e.ctx, "missing", base) })
	requireNotFound(t, err, "RescheduleDelivery")
}

func testNextDeliveryAt(t *testing.T, e *env) {
	_, ok := e.nextDeliveryAt()
	require.False(t, ok, "empty outbox")
	e.createWebhooks(webhook("w", 0))
	e.enqueue(newDelivery("a", "w", at(5_000), at(0)), newDelivery("b", "w", at(3_000), at(0)), newDelivery("c", "w", at(9_000), at(0)))
	next, ok := e.nextDeliveryAt()
	require.True(t, ok)
	require.True(t, at(3_000).Equal(next.Time), "earliest pending: %v", next.Time)
	e.claim("o", at(3_000), lease, 1)
	require.NoError(t, e.finish("o", attempt("b", 1, 200, "", 3_001), chat.DeliveryDelivered, chat.Time{}))
	next, ok = e.nextDeliveryAt()
	require.True(t, ok)
	require.True(t, at(5_000).Equal(next.Time), "delivered ones do not count: %v", next.Time)
	e.update(func(tx chat.Tx) error { return tx.RescheduleDelivery(e.ctx, "c", at(4_000).Time) })
	next, _ = e.nextDeliveryAt()
	require.True(t, at(4_000).Equal(next.Time), "rescheduled: %v", next.Time)
	e.claim("o", at(6_000), lease, 10)
	require.NoError(t, e.finish("o", attempt("c", 1, 500, "x", 6_001), chat.DeliveryFailed, chat.Time{}))
	require.NoError(t, e.finish("o", attempt("a", 1, 200, "", 6_001), chat.DeliveryDelivered, chat.Time{}))
	_, ok = e.nextDeliveryAt()
	require.False(t, ok, "no pending deliveries left")
}

func (e *env) countDeliveries(now chat.Time) chat.OutboxBacklog {
	e.t.Helper()
	return read(e, func(tx chat.Tx) (chat.OutboxBacklog, error) { return tx.CountDeliveries(e.ctx, now.Time) })
}

// CountDeliveries counts pending deliveries, and those due at a time
// (leased or not); delivered and failed ones are not counted.
func testCountDeliveries(t *testing.T, e *env) {
	require.Equal(t, chat.OutboxBacklog{}, e.countDeliveries(at(0)), "empty outbox")
	e.createWebhooks(webhook("w", 0), webhook("v", 0))
	e.enqueue(newDelivery("a", "w", at(5_000), at(0)), newDelivery("b", "w", at(3_000), at(0)),
		newDelivery("c", "v", at(9_000), at(0)), newDelivery("d", "v", at(3_000), at(0)))
	require.Equal(t, chat.OutboxBacklog{Pending: 4, Due: 0}, e.countDeliveries(at(2_999)))
	require.Equal(t, chat.OutboxBacklog{Pending: 4, Due: 2}, e.countDeliveries(at(3_000)), "due at its time")
	require.Equal(t, chat.OutboxBacklog{Pending: 4, Due: 3}, e.countDeliveries(at(8_000)))
	require.Len(t, e.claim("o", at(5_000), lease, 10), 3)
	require.Equal(t, chat.OutboxBacklog{Pending: 4, Due: 3}, e.countDeliveries(at(5_000)), "leased ones still count")
	require.NoError(t, e.finish("o", attempt("b", 1, 200, "", 5_001), chat.DeliveryDelivered, chat.Time{}))
	require.NoError(t, e.finish("o", attempt("d", 1, 500, "x", 5_001), chat.DeliveryFailed, chat.Time{}))
	require.NoError(t, e.finish("o", attempt("a", 1, 503, "busy", 5_001), chat.DeliveryPending, at(60_000)))
	require.Equal(t, chat.OutboxBacklog{Pending: 2, Due: 0}, e.countDeliveries(at(5_001)), "delivered and failed leave the backlog")
	require.Equal(t, chat.OutboxBacklog{Pending: 2, Due: 1}, e.countDeliveries(at(9_000)))
	require.Equal(t, chat.OutboxBacklog{Pending: 2, Due: 2}, e.countDeliveries(at(60_000)))
}

// ClaimDeliveries takes at most a webhook's free slots of its deliveries
// (PerWebhook minus Busy), the earliest ones; the rest stay due and
// unleased with their nextAttemptAt, and the limit is filled from the
// other webhooks, in nextAttemptAt order. Leased deliveries take no slot
// of the claim; a zero quota bounds nothing.
func testClaimQuota(t *testing.T, e *env) {
	e.createWebhooks(webhook("busy", 0), webhook("ok", 0), webhook("also", 0))
	e.enqueue(newDelivery("b1", "busy", at(1_000), at(0)), newDelivery("b2", "busy", at(2_000), at(0)),
		newDelivery("b3", "busy", at(2_500), at(0)), newDelivery("o1", "ok", at(3_000), at(0)),
		newDelivery("a1", "also", at(4_000), at(0)), newDelivery("o2", "ok", at(5_000), at(0)),
		newDelivery("o3", "ok", at(6_000), at(0)))
	claim := func(limit int, q chat.DeliveryQuota) []string {
		return deliveryIDs(write(e, func(tx chat.Tx) ([]*chat.Delivery, error) {
			return tx.ClaimDeliveries(e.ctx, "o", at(10_000).Time, lease, limit, q)
		}))
	}
	require.Equal(t, []string{"o1", "a1", "o2"}, claim(10, chat.DeliveryQuota{PerWebhook: 2, Busy: map[string]int{"busy": 5}}),
		"none of busy (over its limit), two of ok, the earliest")
	for _, id := range []string{"b1", "b2", "b3", "o3"} {
		d := e.delivery(id)
		require.Equal(t, chat.DeliveryPending, d.State)
		require.Empty(t, d.LeaseOwner, "%s passed over, not leased", id)
		require.Nil(t, d.LeaseUntil)
	}
	require.True(t, e.delivery("o3").NextAttemptAt.Equal(at(6_000).Time), "passed over, not rescheduled")
	require.Equal(t, []string{"b1"}, claim(10, chat.DeliveryQuota{PerWebhook: 2, Busy: map[string]int{"busy": 1, "ok": 2}}),
		"one slot of busy; ok at its limit")
	require.Equal(t, []string{"b2", "o3"}, claim(10, chat.DeliveryQuota{PerWebhook: 1}),
		"leased deliveries take no slot: one more of each")
	require.Equal(t, []string{"b3"}, claim(10, chat.DeliveryQuota{}), "no bound")
	require.Empty(t, claim(10, chat.DeliveryQuota{PerWebhook: 5}))
}

// The quota and the limit together: each claim takes the earliest due
// deliveries that fit both.
func testClaimQuotaLimit(t *testing.T, e *env) {
	e.createWebhooks(webhook("x", 0), webhook("y", 0))
	var ds []*chat.Delivery
	for i := range 6 {
		ds = append(ds, newDelivery(fmt.Sprintf("x%d", i), "x", at(int64(10*i)), at(0)),
			newDelivery(fmt.Sprintf("y%d", i), "y", at(int64(10*i+5)), at(0)))
	}
	e.enqueue(ds...)
	q := chat.DeliveryQuota{PerWebhook: 3}
	claim := func(limit int) []string {
		return deliveryIDs(write(e, func(tx chat.Tx) ([]*chat.Delivery, error) {
			return tx.ClaimDeliveries(e.ctx, "o", at(1_000).Time, lease, limit, q)
		}))
	}
	require.Equal(t, []string{"x0", "y0", "x1", "y1"}, claim(4))
	q.Busy = map[string]int{"x": 3, "y": 2}
	require.Equal(t, []string{"y2"}, claim(10))
	q.Busy = nil
	require.Equal(t, []string{"x2", "x3", "y3"}, claim(3))
	require.Equal(t, []string{"x4", "y4", "x5", "y5"}, claim(10))
	require.Empty(t, claim(10))
}

// DeleteWebhook removes the webhook's pending deliveries and only them.
func testDeleteWebhookDeliveries(t *testing.T, e *env) {
	e.createWebhooks(webhook("w1", 0), webhook("w2", 0))
	e.enqueue(newDelivery("p1", "w1", at(0), at(0)), newDelivery("p2", "w1", at(1), at(0)), newDelivery("x", "w2", at(2), at(0)))
	e.claim("o", at(0), lease, 1) // p1 leased
	e.update(func(tx chat.Tx) error { return tx.DeleteWebhook(e.ctx, "w1") })
	for _, id := range []string{"p1", "p2"} {
		_, err := readErr(e, func(tx chat.Tx) (*chat.Delivery, error) { return tx.GetDelivery(e.ctx, id) })
		requireNotFound(t, err, "pending delivery of a deleted webhook")
	}
	require.Equal(t, []string{"x"}, deliveryIDs(e.claim("o", at(1_000_000), lease, 10)))
	require.Equal(t, chat.DeliveryPending, e.delivery("x").State)
}

// Four dispatchers claiming concurrently, two of them with a quota, never
// get the same delivery.
func testConcurrentClaims(t *testing.T, e *env) {
	const total, owners, batch = 200, 4, 10
	e.createWebhooks(webhook("w", 0))
	var ds []*chat.Delivery
	for i := 0; i < total; i++ {
		ds = append(ds, newDelivery(fmt.Sprintf("d%03d", i), "w", at(int64(i%7)), at(0)))
	}
	e.enqueue(ds...)
	var mu sync.Mutex
	claimedBy := map[string][]string{}
	err := group(owners, func(i int) error {
		owner := fmt.Sprintf("owner-%d", i)
		var quota chat.DeliveryQuota
		if i%2 == 1 {
			quota.PerWebhook = 3 // the claim that numbers rows per webhook
		}
		for rounds := 0; ; rounds++ {
			if rounds > total {
				return fmt.Errorf("%s: claims do not run dry", owner)
			}
			var got []*chat.Delivery
			err := e.s.Update(e.ctx, func(tx chat.Tx) error {
				var err error
				got, err = tx.ClaimDeliveries(e.ctx, owner, at(1000).Time, time.Hour, batch, quota)
				return err
			})
			if err != nil {
				return err
			}
			if len(got) == 0 {
				return nil
			}
			mu.Lock()
			for _, d := range got {
				claimedBy[d.RequestID] = append(claimedBy[d.RequestID], owner)
			}
			mu.Unlock()
			err = e.s.Update(e.ctx, func(tx chat.Tx) error {
				for _, d := range got {
					if d.LeaseOwner != owner {
						return fmt.Errorf("claimed %s with lease owner %q", d.RequestID, d.LeaseOwner)
					}
					a := &chat.DeliveryAttempt{RequestID: d.RequestID, WebhookID: d.WebhookID, Event: d.Event, Attempt: 1, StatusCode: 200, At: at(1001)}
					if err := tx.FinishDelivery(e.ctx, owner, a, chat.DeliveryDelivered, time.Time{}); err != nil {
						return fmt.Errorf("finish %s by %s: %w", d.RequestID, owner, err)
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
	})
	require.NoError(t, err)
	require.Len(t, claimedBy, total, "every delivery claimed")
	for id, by := range claimedBy {
		require.Len(t, by, 1, "delivery %s handed to %v", id, by)
	}
	_, ok := e.nextDeliveryAt()
	require.False(t, ok)
}

// ---- watcher ----

// testOutboxWatcher checks chat.OutboxWatcher, when the store implements
// it: every watcher is signalled after a commit that enqueues or
// reschedules deliveries, and its channel closes when its context ends.
func testOutboxWatcher(t *testing.T, e *env) {
	w, ok := e.s.(chat.OutboxWatcher)
	if !ok {
		t.Skip("not applicable: the store does not implement chat.OutboxWatcher")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch1, err := w.WatchOutbox(ctx)
	require.NoError(t, err)
	ch2, err := w.WatchOutbox(ctx)
	require.NoError(t, err)
	drain := func(ch <-chan struct{}) {
		for {
			select {
			case <-ch:
			default:
				return
			}
		}
	}
	expect := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case _, ok := <-ch:
			require.True(t, ok, "channel closed early (%s)", what)
		case <-time.After(5 * time.Second):
			require.Fail(t, "no outbox signal within 5s", what)
		}
	}
	e.createWebhooks(webhook("w", 0))
	drain(ch1)
	drain(ch2)
	e.enqueue(newDelivery("a", "w", at(0), at(0)))
	expect(ch1, "after EnqueueDeliveries")
	expect(ch2, "after EnqueueDeliveries, second watcher")
	e.claim("o", at(1), lease, 1)
	require.NoError(t, e.finish("o", attempt("a", 1, 200, "", 2), chat.DeliveryDelivered, chat.Time{}))
	drain(ch1)
	e.update(func(tx chat.Tx) error { return tx.RescheduleDelivery(e.ctx, "a", at(5).Time) })
	expect(ch1, "after RescheduleDelivery")

	cancel()
	deadline := time.After(5 * time.Second)
	for _, ch := range []<-chan struct{}{ch1, ch2} {
	wait:
		for {
			select {
			case _, ok := <-ch:
				if !ok {
					break wait
				}
			case <-deadline:
				require.Fail(t, "watch channel not closed within 5s of its context ending")
			}
		}
	}
}

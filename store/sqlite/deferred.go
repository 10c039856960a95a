package sqlite

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	chat "github.com/chatengine/chat"
)

// Deferred deliveries (chat.DeliveryDeferrer).
//
// A delivery leased to a dispatcher of this process by the transaction
// that causes it is not inserted into deliveries there: it is written with
// its event (events.deferred) and inserted once, in its final state, when
// its attempt is recorded (FinishDeferred). That saves the outbox an insert
// into its due index and an update of the row per delivery.
//
// Nothing committed is lost on the way. The store remembers the deferred
// deliveries it committed and not yet recorded (deferredState.open); once
// a second (tendDeferred) it inserts those whose lease ran out, pending and
// still leased to their owner, so that any dispatcher claims them as it
// claims a delivery whose dispatcher died, and writes its row of
// deferred_owners: resolved_through, the event id up to which every
// deferred delivery it wrote is in deliveries, and until, the time up to
// which the row counts as live. A transaction that writes deferred
// deliveries makes sure first that the row is live for a while
// (ensureOwner). When a process ends without closing its store (a crash),
// its row lapses; a store sharing the file, the same program started
// again, then reads the events after resolved_through and inserts that
// owner's deferred deliveries that are not in deliveries, once their
// leases have run out, and deletes the row (sweepOwner). Event retention
// keeps the events such a sweep still needs. Close inserts the store's
// remaining deferred deliveries and deletes its row.

const (
	// deferredBeat is how often tendDeferred runs.
	deferredBeat = time.Second
	// deferredWindow is how long an owner row stays live after it was
	// written; a transaction that defers deliveries writes it again when
	// less than half of that is left.
	deferredWindow = 5 * time.Second
	// deferredSweepSpan is how many event ids one step of sweepOwner
	// reads.
	deferredSweepSpan = 4096
)

// deferredColumn is the JSON of events.deferred.
type deferredColumn struct {
	Store      string         `json:"store"`
	Deliveries []deferredJSON `json:"deliveries"`
}

type deferredJSON struct {
	RequestID  string `json:"requestId"`
	WebhookID  string `json:"webhookId"`
	LeaseOwner string `json:"leaseOwner"`
	LeaseUntil int64  `json:"leaseUntil"` // Unix ms
}

// openDeferred is a deferred delivery committed and not yet in deliveries.
type openDeferred struct {
	requestID, webhookID, owner string
	eventID                     int64
	until                       int64 // lease, Unix ms
}

// deferredState is a store's bookkeeping of its deferred deliveries.
type deferredState struct {
	id string // the store's row in deferred_owners
	mu sync.Mutex
	// open are the deferred deliveries committed and not yet in deliveries.
	open map[string]openDeferred
	// maxEvent is the greatest id of an event in which this store
	// committed deferred deliveries.
	maxEvent int64
	// rowUntil is the until of the owner row this store last committed
	// (0: none, or deleted).
	rowUntil int64
	// written is the resolved_through last committed.
	written int64
}

func newDeferredState() deferredState {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return deferredState{id: hex.EncodeToString(b[:]), open: map[string]openDeferred{}}
}

// resolvedLocked returns the greatest event id through which every
// deferred delivery this store committed is in deliveries: any delivery
// it defers later is written in an event of greater id. Caller holds mu.
func (st *deferredState) resolvedLocked() int64 {
	r := st.maxEvent
	for _, o := range st.open {
		r = min(r, o.eventID-1)
	}
	return r
}

// deferredTx is what a write transaction changed in its store's deferred
// deliveries, applied when it commits (committed).
type deferredTx struct {
	added    []openDeferred
	resolved []string // request ids now in deliveries (or gone with their webhook)
	rowUntil int64    // the owner row written live until then (-1: deleted)
	rowR     int64    // with this resolved_through
}

// committed applies what the committed transactions ts changed.
func (st *deferredState) committed(ts ...*tx) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, t := range ts {
		d := t.deferred
		if d == nil {
			continue
		}
		for _, o := range d.added {
			st.open[o.requestID] = o
			st.maxEvent = max(st.maxEvent, o.eventID)
		}
		for _, id := range d.resolved {
			delete(st.open, id)
		}
		switch {
		case d.rowUntil < 0:
			st.rowUntil, st.written = 0, 0
		case d.rowUntil > 0:
			st.rowUntil, st.written = max(st.rowUntil, d.rowUntil), d.rowR
		}
	}
}

// DefersDeliveries implements chat.DeliveryDeferrer.
func (t *tx) DefersDeliveries() bool { return t.write }

// deferredOf returns the JSON of e's deferred deliveries for
// events.deferred (nil when none) and notes them in t.
func (t *tx) deferredOf(ctx context.Context, e *chat.Event) (any, error) {
	if len(e.Deferred) == 0 {
		return nil, nil
	}
	if err := t.ensureOwner(ctx); err != nil {
		return nil, err
	}
	col := deferredColumn{Store: t.s.deferred.id, Deliveries: make([]deferredJSON, len(e.Deferred))}
	for i, d := range e.Deferred {
		until := ms(chat.NewTime(d.LeaseUntil))
		col.Deliveries[i] = deferredJSON{RequestID: d.RequestID, WebhookID: d.WebhookID, LeaseOwner: d.LeaseOwner, LeaseUntil: until}
	}
	b, err := json.Marshal(col)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// noteDeferred remembers the deferred deliveries of e, appended with id.
func (t *tx) noteDeferred(e *chat.Event, id int64) {
	if len(e.Deferred) == 0 {
		return
	}
	dt := t.deferredTx()
	for _, d := range e.Deferred {
		dt.added = append(dt.added, openDeferred{
			requestID: d.RequestID, webhookID: d.WebhookID, owner: d.LeaseOwner,
			eventID: id, until: ms(chat.NewTime(d.LeaseUntil))})
	}
}

func (t *tx) deferredTx() *deferredTx {
	if t.deferred == nil {
		t.deferred = &deferredTx{}
	}
	return t.deferred
}

const upsertOwner = `INSERT INTO deferred_owners (store_id, resolved_through, until) VALUES (?,?,?)
	ON CONFLICT (store_id) DO UPDATE SET resolved_through = excluded.resolved_through, until = excluded.until`

// ensureOwner writes the store's owner row, live for deferredWindow, when
// less than half of that is left of the one committed last: a store that
// sweeps lapsed rows never takes this store for gone while it defers.
func (t *tx) ensureOwner(ctx context.Context) error {
	if t.deferred != nil && t.deferred.rowUntil > 0 {
		return nil // written by this transaction
	}
	st := &t.s.deferred
	now := time.Now().UnixMilli()
	st.mu.Lock()
	fresh := st.rowUntil-now > deferredWindow.Milliseconds()/2
	var r int64
	if !fresh {
		r = st.resolvedLocked()
	}
	st.mu.Unlock()
	if fresh {
		return nil
	}
	return t.writeOwner(ctx, r, now+deferredWindow.Milliseconds())
}

func (t *tx) writeOwner(ctx context.Context, r, until int64) error {
	if _, err := t.exec(ctx, upsertOwner, t.s.deferred.id, r, until); err != nil {
		return err
	}
	d := t.deferredTx()
	d.rowUntil, d.rowR = until, r
	return nil
}

// FinishDeferred implements chat.DeliveryDeferrer: the delivery is
// inserted in its final state with its attempt, unless its webhook is gone
// or the row exists (stored when its lease ran out); then the attempt is
// recorded as FinishDelivery records it.
func (t *tx) FinishDeferred(ctx context.Context, owner string, d *chat.Delivery, a *chat.DeliveryAttempt, state string, nextAttemptAt time.Time) error {
	next := d.NextAttemptAt
	if state == chat.DeliveryPending {
		next = chat.NewTime(nextAttemptAt)
	}
	updated := d.UpdatedAt
	if !a.At.IsZero() {
		updated = a.At
	}
	n := a.Attempt
	if n <= 0 {
		n = 1
	}
	body := d.Body
	if body == nil {
		body = []byte{}
	}
	inserted, err := t.execN(ctx, `INSERT INTO deliveries (request_id, webhook_id, event, body, state, attempts,
	next_attempt_at, lease_owner, lease_until, last_error, last_status, created_at, updated_at, last_attempt,
	last_latency_ms, last_attempt_at)
	SELECT ?,?,?,?,?,1,?,'',NULL,?,?,?,?,?,?,? WHERE EXISTS (SELECT 1 FROM webhooks WHERE webhook_id = ?)
	ON CONFLICT (request_id) DO NOTHING`,
		d.RequestID, d.WebhookID, d.Event, body, state, ms(next), a.Error, a.StatusCode, ms(d.CreatedAt),
		ms(updated), n, a.LatencyMs, ms(a.At), d.WebhookID)
	if err != nil {
		return err
	}
	t.deferredTx().resolved = append(t.deferredTx().resolved, d.RequestID)
	if inserted > 0 {
		return nil
	}
	return t.FinishDelivery(ctx, owner, a, state, nextAttemptAt)
}

// storeDeferred inserts a deferred delivery of the event eventID as
// pending and leased as it was (due once its lease has run out), unless
// it is in deliveries already or its webhook is gone.
func (t *tx) storeDeferred(ctx context.Context, eventID int64, d deferredJSON) error {
	var (
		name    string
		data    []byte
		created int64
	)
	err := t.row(ctx, "SELECT name, data, created_at FROM events WHERE id = ?", []any{eventID}, &name, &data, &created)
	if chat.ErrorCode(err) == chat.CodeNotFound {
		return nil // its event is gone (retention keeps the events a sweep needs)
	}
	if err != nil {
		return err
	}
	body := chat.EnvelopeBody(d.RequestID, d.WebhookID, name, data)
	if _, err := t.exec(ctx, `INSERT INTO deliveries (request_id, webhook_id, event, body, state, attempts,
	next_attempt_at, lease_owner, lease_until, last_error, last_status, created_at, updated_at)
	SELECT ?,?,?,?,'pending',0,?,?,?,'',0,?,? WHERE EXISTS (SELECT 1 FROM webhooks WHERE webhook_id = ?)
	ON CONFLICT (request_id) DO NOTHING`,
		d.RequestID, d.WebhookID, name, body, created, d.LeaseOwner, d.LeaseUntil, created, created, d.WebhookID); err != nil {
		return err
	}
	t.signal |= sigDeliveries
	return nil
}

// deferredLoop runs tendDeferred every deferredBeat until the store
// closes.
func (s *Store) deferredLoop() {
	defer close(s.deferredDone)
	tick := time.NewTicker(deferredBeat)
	defer tick.Stop()
	for {
		select {
		case <-s.deferredStop:
			return
		case <-tick.C:
		}
		if err := s.tendDeferred(context.Background(), time.Now()); err != nil && chat.ErrorCode(err) != chat.CodeUnavailable {
			slog.Warn("sqlite: tending deferred deliveries", "err", err)
		}
	}
}

// tendDeferred stores this store's deferred deliveries whose lease ran out
// and writes its owner row while it has deferred deliveries open (or until
// the row says they are all resolved), then sweeps the lapsed rows of
// other stores.
func (s *Store) tendDeferred(ctx context.Context, now time.Time) error {
	st := &s.deferred
	st.mu.Lock()
	need := len(st.open) > 0 || (st.rowUntil > 0 && st.resolvedLocked() > st.written)
	st.mu.Unlock()
	if need {
		err := s.Update(chat.WithLazyCommit(ctx), func(v chat.Tx) error {
			return v.(*tx).tendOwn(ctx, now.UnixMilli())
		})
		if err != nil {
			return err
		}
	}
	var lapsed []string
	err := s.View(ctx, func(v chat.Tx) error {
		var err error
		lapsed, err = list(v.(*tx), ctx, func(sc scanner) (string, error) {
			var id string
			return id, sc.Scan(&id)
		}, "SELECT store_id FROM deferred_owners WHERE until < ? AND store_id != ?", now.UnixMilli(), st.id)
		return err
	})
	if err != nil {
		return err
	}
	for _, id := range lapsed {
		if err := s.sweepOwner(ctx, id, now.UnixMilli()); err != nil {
			return err
		}
	}
	return nil
}

// tendOwn is tendDeferred's transaction.
func (t *tx) tendOwn(ctx context.Context, now int64) error {
	r, due := t.s.deferred.due(now)
	if err := t.storeOpen(ctx, due); err != nil {
		return err
	}
	return t.writeOwner(ctx, r, now+deferredWindow.Milliseconds())
}

// due returns resolvedLocked and the open deferred deliveries whose lease
// ends by now (Unix ms), in event order.
func (st *deferredState) due(now int64) (int64, []openDeferred) {
	st.mu.Lock()
	r := st.resolvedLocked()
	var due []openDeferred
	for _, o := range st.open {
		if o.until <= now {
			due = append(due, o)
		}
	}
	st.mu.Unlock()
	slices.SortFunc(due, func(a, b openDeferred) int { return cmp.Compare(a.eventID, b.eventID) })
	return r, due
}

// storeOpen inserts the open deferred deliveries os (storeDeferred); once
// committed they are no longer open.
func (t *tx) storeOpen(ctx context.Context, os []openDeferred) error {
	for _, o := range os {
		if err := t.storeDeferred(ctx, o.eventID, deferredJSON{RequestID: o.requestID, WebhookID: o.webhookID,
			LeaseOwner: o.owner, LeaseUntil: o.until}); err != nil {
			return err
		}
		t.deferredTx().resolved = append(t.deferredTx().resolved, o.requestID)
	}
	return nil
}

// sweepOwner stores the deferred deliveries of the lapsed owner row id
// that are not in deliveries, once their leases have run out, reading the
// events after its resolved_through in spans of deferredSweepSpan ids, one
// transaction each, and deletes the row at the end of the log. It stops
// when the row is gone or live again, or at a delivery whose lease has not
// run out (a later sweep goes on from there). Each step reads and writes
// in one write transaction: an owner that comes back writes its row again
// before deferring more, and the step sees either that or every event the
// owner committed.
func (s *Store) sweepOwner(ctx context.Context, id string, now int64) error {
	for {
		stop := false
		err := s.Update(chat.WithLazyCommit(ctx), func(v chat.Tx) error {
			t := v.(*tx)
			stop = true
			var from, until, last int64
			if err := t.row(ctx, "SELECT resolved_through, until FROM deferred_owners WHERE store_id = ?",
				[]any{id}, &from, &until); err != nil {
				return err
			}
			if until >= now {
				return nil // live again
			}
			if err := t.row(ctx, "SELECT coalesce(max(id), 0) FROM events", nil, &last); err != nil {
				return err
			}
			to := min(from+deferredSweepSpan, last)
			rows, err := list(t, ctx, func(sc scanner) (sweptEvent, error) {
				var e sweptEvent
				var col string
				if err := sc.Scan(&e.id, &col); err != nil {
					return e, err
				}
				var c deferredColumn
				if err := json.Unmarshal([]byte(col), &c); err != nil {
					return e, err
				}
				if c.Store == id {
					e.ds = c.Deliveries
				}
				return e, nil
			}, "SELECT id, deferred FROM events WHERE id > ? AND id <= ? AND deferred IS NOT NULL ORDER BY id", from, to)
			if err != nil {
				return err
			}
			through := to
			for _, e := range rows {
				if slices.ContainsFunc(e.ds, func(d deferredJSON) bool { return d.LeaseUntil > now }) {
					through = e.id - 1 // not before its lease has run out
					break
				}
				for _, d := range e.ds {
					if err := t.storeDeferred(ctx, e.id, d); err != nil {
						return err
					}
				}
			}
			if through >= last {
				_, err := t.exec(ctx, "DELETE FROM deferred_owners WHERE store_id = ?", id)
				return err
			}
			if _, err := t.exec(ctx, "UPDATE deferred_owners SET resolved_through = ? WHERE store_id = ?", through, id); err != nil {
				return err
			}
			stop = through < to
			return nil
		})
		if chat.ErrorCode(err) == chat.CodeNotFound {
			return nil // swept by another store
		}
		if err != nil || stop {
			return err
		}
	}
}

// sweptEvent is an event read by sweepOwner with the deferred deliveries
// of the owner swept (none when they are another owner's).
type sweptEvent struct {
	id int64
	ds []deferredJSON
}

// closeDeferred inserts this store's deferred deliveries not yet in
// deliveries, leased as they are, and deletes its owner row. Close runs it
// before the writer stops.
func (s *Store) closeDeferred(ctx context.Context) error {
	st := &s.deferred
	st.mu.Lock()
	idle := len(st.open) == 0 && st.rowUntil == 0
	st.mu.Unlock()
	if idle {
		return nil
	}
	return s.Update(ctx, func(v chat.Tx) error {
		t := v.(*tx)
		_, open := st.due(math.MaxInt64)
		if err := t.storeOpen(ctx, open); err != nil {
			return err
		}
		if _, err := t.exec(ctx, "DELETE FROM deferred_owners WHERE store_id = ?", st.id); err != nil {
			return err
		}
		t.deferredTx().rowUntil = -1
		return nil
	})
}

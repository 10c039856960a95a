package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/lib/pq"
)

// ---- webhooks ----

const webhookCols = `webhook_id, url, events, secret, is_disabled, disabled_reason, created_at, updated_at`

// bumpHooks is appended to webhook writes: it increments the webhooks
// version in the writing transaction when the write changed a row.
const bumpHooks = `, bump AS (UPDATE {s}versions SET value = value + 1 WHERE name = 'webhooks' AND EXISTS (SELECT 1 FROM w))`

func (t *tx) webhooks(ctx context.Context, tmpl string, args ...any) ([]*chat.Webhook, error) {
	var out []*chat.Webhook
	err := t.query(ctx, tmpl, args, func(r *sql.Rows) error {
		var (
			w                chat.Webhook
			events           pq.StringArray
			created, updated time.Time
		)
		if err := r.Scan(&w.WebhookID, &w.URL, &events, &w.Secret, &w.IsDisabled, &w.DisabledReason, &created, &updated); err != nil {
			return err
		}
		w.Events = arrayOut(events)
		w.CreatedAt, w.UpdatedAt = ct(created), ct(updated)
		out = append(out, &w)
		return nil
	})
	return out, err
}

func (t *tx) CreateWebhook(ctx context.Context, w *chat.Webhook) error {
	var n int
	err := t.queryRow(ctx, `WITH w AS (
			INSERT INTO {s}webhooks (`+webhookCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT DO NOTHING RETURNING 1
		)`+bumpHooks+` SELECT count(*) FROM w`,
		[]any{w.WebhookID, w.URL, textArray(w.Events), w.Secret, w.IsDisabled, w.DisabledReason,
			timeArg(w.CreatedAt), timeArg(w.UpdatedAt)}, &n)
	if err != nil {
		return err
	}
	if n == 0 {
		return chat.Errorf(chat.CodeConflict, "webhook %q already exists", w.WebhookID)
	}
	return nil
}

// GetWebhook reads the row without a lock.
func (t *tx) GetWebhook(ctx context.Context, webhookID string) (*chat.Webhook, error) {
	return t.webhook(ctx, `SELECT `+webhookCols+` FROM {s}webhooks WHERE webhook_id = $1`, webhookID)
}

// LockWebhook implements chat.LockStore: in an Update the row is held
// (FOR NO KEY UPDATE) until the transaction ends.
func (t *tx) LockWebhook(ctx context.Context, webhookID string) (*chat.Webhook, error) {
	return t.webhook(ctx, `SELECT `+webhookCols+` FROM {s}webhooks WHERE webhook_id = $1`+t.lockRows(), webhookID)
}

func (t *tx) webhook(ctx context.Context, tmpl, webhookID string) (*chat.Webhook, error) {
	ws, err := t.webhooks(ctx, tmpl, webhookID)
	if err != nil {
		return nil, err
	}
	if len(ws) == 0 {
		return nil, chat.Errorf(chat.CodeNotFound, "webhook %q not found", webhookID)
	}
	return ws[0], nil
}

// ListWebhooks reads without locks.
func (t *tx) ListWebhooks(ctx context.Context) ([]*chat.Webhook, error) {
	return t.webhooks(ctx, `SELECT `+webhookCols+` FROM {s}webhooks ORDER BY created_at, webhook_id`)
}

// UpdateWebhook replaces the webhook's fields and bumps the webhooks
// version in the same statement.
func (t *tx) UpdateWebhook(ctx context.Context, w *chat.Webhook) error {
	var n int
	err := t.queryRow(ctx, `WITH w AS (
			UPDATE {s}webhooks SET url = $2, events = $3, secret = $4, is_disabled = $5, disabled_reason = $6,
				updated_at = $7
			WHERE webhook_id = $1 RETURNING 1
		)`+bumpHooks+` SELECT count(*) FROM w`,
		[]any{w.WebhookID, w.URL, textArray(w.Events), w.Secret, w.IsDisabled, w.DisabledReason, timeArg(w.UpdatedAt)}, &n)
	if err != nil {
		return err
	}
	if n == 0 {
		return chat.Errorf(chat.CodeNotFound, "webhook %q not found", w.WebhookID)
	}
	return nil
}

func (t *tx) DeleteWebhook(ctx context.Context, webhookID string) error {
	var n int
	err := t.queryRow(ctx, `WITH w AS (
			DELETE FROM {s}webhooks WHERE webhook_id = $1 RETURNING 1
		), d AS (
			DELETE FROM {s}deliveries WHERE webhook_id = $1 AND state = 'pending' AND EXISTS (SELECT 1 FROM w)
			RETURNING request_id
		), a AS (
			DELETE FROM {s}delivery_attempts WHERE request_id IN (SELECT request_id FROM d)
		)`+bumpHooks+` SELECT count(*) FROM w`, []any{webhookID}, &n)
	if err != nil {
		return err
	}
	if n == 0 {
		return chat.Errorf(chat.CodeNotFound, "webhook %q not found", webhookID)
	}
	return nil
}

func (t *tx) WebhooksVersion(ctx context.Context) (int64, error) {
	if t.vers != nil {
		return t.vers.webhooks, nil
	}
	var v int64
	err := t.queryRow(ctx, `SELECT value FROM {s}versions WHERE name = 'webhooks'`, nil, &v)
	return v, err
}

// ---- deliveries ----

const deliveryCols = `request_id, webhook_id, event, body, state, attempts, next_attempt_at, lease_owner,
	lease_until, last_error, last_status, created_at, updated_at`

func scanDelivery(r scanner) (*chat.Delivery, error) {
	var (
		d                      chat.Delivery
		next, created, updated time.Time
		lease                  sql.NullTime
	)
	if err := r.Scan(&d.RequestID, &d.WebhookID, &d.Event, &d.Body, &d.State, &d.Attempts, &next, &d.LeaseOwner,
		&lease, &d.LastError, &d.LastStatus, &created, &updated); err != nil {
		return nil, err
	}
	d.NextAttemptAt, d.CreatedAt, d.UpdatedAt = ct(next), ct(created), ct(updated)
	d.LeaseUntil = ctp(lease)
	return &d, nil
}

func (t *tx) deliveries(ctx context.Context, tmpl string, args ...any) ([]*chat.Delivery, error) {
	var out []*chat.Delivery
	err := t.query(ctx, tmpl, args, func(r *sql.Rows) error {
		d, err := scanDelivery(r)
		if err == nil {
			out = append(out, d)
		}
		return err
	})
	return out, err
}

// timeText formats a time for a timestamptz[] array literal ("" for none).
func timeText(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// EnqueueDeliveries inserts every delivery with one statement (unnest of
// column arrays). It sends no notification from the transaction: a NOTIFY
// takes a lock at commit that every notifying transaction of the database
// queues for. After the commit this process's watchers are signalled;
// the other processes' are notified outside the transaction when it
// appended no events (see Update); with events, this process's dispatcher
// takes them, and the others find them by their poll.
func (t *tx) EnqueueDeliveries(ctx context.Context, ds []*chat.Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	n := len(ds)
	var (
		ids, hooks, events, states, owners, leases, errs, nexts, createds, updateds = make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		bodies           = make(pq.ByteaArray, n)
		attempts, status = make(pq.Int64Array, n), make(pq.Int64Array, n)
	)
	for i, d := range ds {
		ids[i], hooks[i], events[i], states[i], owners[i], errs[i] = d.RequestID, d.WebhookID, d.Event, d.State, d.LeaseOwner, d.LastError
		bodies[i] = bytesArg(d.Body)
		attempts[i], status[i] = int64(d.Attempts), int64(d.LastStatus)
		nexts[i], createds[i], updateds[i] = timeText(d.NextAttemptAt.Time), timeText(d.CreatedAt.Time), timeText(d.UpdatedAt.Time)
		if d.LeaseUntil != nil {
			leases[i] = timeText(d.LeaseUntil.Time)
		}
	}
	args := []any{textArray(ids), textArray(hooks), textArray(events), bodies, textArray(states), attempts,
		textArray(nexts), textArray(owners), textArray(leases), textArray(errs), status,
		textArray(createds), textArray(updateds)}
	if t.pend != nil && t.pendDel == nil {
		// A post's deferred message insert is waiting for its events:
		// the deliveries go with them, in the same statement.
		t.pendDel = &pendingDeliveries{n: n, args: args}
		return nil
	}
	var inserted, pending int
	err := t.queryRow(ctx, enqueueSQL, args, &inserted, &pending)
	if err != nil {
		return err
	}
	return t.noteEnqueued(n, inserted, pending)
}

// noteEnqueued checks the counts of an EnqueueDeliveries statement that
// inserted n deliveries and records what the commit must signal.
func (t *tx) noteEnqueued(n, inserted, pending int) error {
	if inserted < n {
		return chat.Errorf(chat.CodeConflict, "a delivery among %d already exists", n)
	}
	if pending > 0 {
		t.queued, t.enqueued = true, true
	}
	return nil
}

// pendingDeliveries is an EnqueueDeliveries whose statement has not run
// yet: it runs with the deferred AppendMessage and AppendEvents of a post
// (appendWithDeliveriesSQL), or on its own right after the deferred
// AppendMessage when another statement comes first (flushAppend).
type pendingDeliveries struct {
	n    int
	args []any // enqueueSQL's
}

// enqueueDeliveriesCTE inserts deliveries from column arrays ($1-$13, or
// shifted, see shiftParams) and returns each inserted row's state.
const enqueueDeliveriesCTE = `INSERT INTO {s}deliveries (` + deliveryCols + `)
			SELECT r, w, e, b, s, a, n::timestamptz, o, NULLIF(l, '')::timestamptz, le, ls, c::timestamptz, u::timestamptz
			FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[], $6::int8[], $7::text[],
				$8::text[], $9::text[], $10::text[], $11::int8[], $12::text[], $13::text[])
				AS x(r, w, e, b, s, a, n, o, l, le, ls, c, u)
			ON CONFLICT DO NOTHING RETURNING state, lease_owner`

// enqueueSQL is EnqueueDeliveries's statement: the rows inserted and the
// pending ones among them that are due for a claim (not inserted leased:
// a leased one's owner has it already, see chat.DeliveryTaker).
const enqueueSQL = `WITH ins AS (
			` + enqueueDeliveriesCTE + `
		)
		SELECT count(*), count(*) FILTER (WHERE state = 'pending' AND lease_owner = '') FROM ins`

// ClaimDeliveries locks due deliveries with FOR UPDATE SKIP LOCKED, so
// concurrent claimers in any process pass over each other's rows instead of
// waiting, and leases them in the same statement. A claimer whose snapshot
// predates another's committed lease re-checks the row when it locks it and
// skips it, so a delivery is never handed out twice while its lease lasts.
func (t *tx) ClaimDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int, quota chat.DeliveryQuota) ([]*chat.Delivery, error) {
	var lim any
	if limit > 0 {
		lim = limit
	}
	n := now.UTC().Truncate(time.Millisecond)
	until := now.Add(lease).UTC().Truncate(time.Millisecond)
	if quota.PerWebhook <= 0 {
		ds, err := t.deliveries(ctx, `WITH c AS MATERIALIZED (
			SELECT request_id FROM {s}deliveries
			WHERE state = 'pending' AND next_attempt_at <= $3 AND (lease_until IS NULL OR lease_until <= $3)
			ORDER BY next_attempt_at, request_id
			LIMIT $4
			FOR UPDATE SKIP LOCKED
		)
		UPDATE {s}deliveries d SET lease_owner = $1, lease_until = $2
		FROM c WHERE d.request_id = c.request_id
		RETURNING `+prefixCols("d.", deliveryCols), owner, until, n, lim)
		return sortDeliveries(ds), err
	}
	full := pq.StringArray{} // never NULL: "<> ALL(NULL)" would match nothing
	ids, busy := pq.StringArray{}, pq.Int64Array{}
	for id := range quota.Busy {
		if quota.Free(id) == 0 {
			full = append(full, id)
		} else {
			ids, busy = append(ids, id), append(busy, int64(quota.Busy[id]))
		}
	}
	// The first limit due deliveries of webhooks with a free slot are
	// locked as without a quota; window functions cannot take row locks,
	// so the next step numbers the locked rows per webhook and leases
	// those within the webhook's free slots. The others are left as they
	// were (their locks end with the transaction).
	ds, err := t.deliveries(ctx, `WITH c AS MATERIALIZED (
			SELECT request_id, webhook_id, next_attempt_at FROM {s}deliveries
			WHERE state = 'pending' AND next_attempt_at <= $3 AND (lease_until IS NULL OR lease_until <= $3)
				AND webhook_id <> ALL($5::text[])
			ORDER BY next_attempt_at, request_id
			LIMIT $4
			FOR UPDATE SKIP LOCKED
		), q AS (
			SELECT r.request_id FROM (
				SELECT request_id, webhook_id,
					row_number() OVER (PARTITION BY webhook_id ORDER BY next_attempt_at, request_id) AS k
				FROM c
			) r LEFT JOIN unnest($6::text[], $7::bigint[]) AS b(w, n) ON b.w = r.webhook_id
			WHERE r.k <= $8 - coalesce(b.n, 0)
		)
		UPDATE {s}deliveries d SET lease_owner = $1, lease_until = $2
		FROM q WHERE d.request_id = q.request_id
		RETURNING `+prefixCols("d.", deliveryCols), owner, until, n, lim, full, ids, busy, quota.PerWebhook)
	return sortDeliveries(ds), err
}

// sortDeliveries orders claimed deliveries by nextAttemptAt then requestId.
func sortDeliveries(ds []*chat.Delivery) []*chat.Delivery {
	slices.SortFunc(ds, func(a, b *chat.Delivery) int {
		if c := a.NextAttemptAt.Compare(b.NextAttemptAt.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.RequestID, b.RequestID)
	})
	return ds
}

// FinishDelivery updates the delivery only while owner still holds it
// (state pending, lease_owner = owner) and records the attempt, in one
// statement.
func (t *tx) FinishDelivery(ctx context.Context, owner string, a *chat.DeliveryAttempt, state string, nextAttemptAt time.Time) error {
	var at any
	if !a.At.IsZero() {
		at = timeArg(a.At)
	}
	var updated, exists int
	err := t.queryRow(ctx, `WITH up AS (
			UPDATE {s}deliveries x SET state = $3, attempts = x.attempts + 1, last_status = $4, last_error = $5,
				lease_owner = '', lease_until = NULL, updated_at = COALESCE($6, x.updated_at),
				next_attempt_at = CASE WHEN $3 = 'pending' THEN $7 ELSE x.next_attempt_at END
			WHERE x.request_id = $1 AND x.state = 'pending' AND x.lease_owner = $2 AND $2 <> ''
			RETURNING x.request_id, x.webhook_id, x.event, x.attempts
		), ins AS (
			INSERT INTO {s}delivery_attempts (request_id, webhook_id, event, attempt, status_code, latency_ms, error, at)
			SELECT up.request_id, COALESCE(NULLIF($8, ''), up.webhook_id), COALESCE(NULLIF($9, ''), up.event),
				CASE WHEN $10 > 0 THEN $10 ELSE up.attempts END, $4, $11, $5, $12
			FROM up
		)
		SELECT (SELECT count(*) FROM up), (SELECT count(*) FROM {s}deliveries WHERE request_id = $1)`,
		[]any{a.RequestID, owner, state, a.StatusCode, a.Error, at, nextAttemptAt.UTC().Truncate(time.Millisecond),
			a.WebhookID, a.Event, a.Attempt, a.LatencyMs, timeArg(a.At)},
		&updated, &exists)
	if err != nil {
		return err
	}
	if updated == 0 {
		if exists == 0 {
			return chat.Errorf(chat.CodeNotFound, "delivery %q not found", a.RequestID)
		}
		return chat.Errorf(chat.CodeConflict, "delivery %q is no longer leased by %q", a.RequestID, owner)
	}
	// A delivery back to pending signals nothing: the dispatcher that
	// recorded the attempt keeps its retry time.
	return nil
}

// finishManySQL is FinishDeliveries in one statement: the items as arrays
// (unnest ... WITH ORDINALITY), the deliveries still leased by the owner
// updated, one attempt row each (in item order), and per item whether it was updated and whether
// the delivery exists.
const finishManySQL = `WITH v AS (
		SELECT * FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[],
			$8::text[], $9::text[], $10::bigint[], $11::bigint[], $12::text[])
			WITH ORDINALITY AS v(request_id, state, status, err, upd_at, next_at, webhook_id, event, attempt, latency, at, ord)
	), up AS (
		UPDATE {s}deliveries x SET state = v.state, attempts = x.attempts + 1, last_status = v.status, last_error = v.err,
			lease_owner = '', lease_until = NULL, updated_at = COALESCE(NULLIF(v.upd_at, '')::timestamptz, x.updated_at),
			next_attempt_at = CASE WHEN v.state = 'pending' THEN v.next_at::timestamptz ELSE x.next_attempt_at END
		FROM v WHERE x.request_id = v.request_id AND x.state = 'pending' AND x.lease_owner = $1 AND $1 <> ''
		RETURNING x.request_id, x.webhook_id, x.event, x.attempts, v.ord, v.state AS vstate, v.status, v.latency,
			v.err, v.at, v.webhook_id AS vwebhook, v.event AS vevent, v.attempt AS vattempt
	), ins AS (
		INSERT INTO {s}delivery_attempts (request_id, webhook_id, event, attempt, status_code, latency_ms, error, at)
		SELECT request_id, COALESCE(NULLIF(vwebhook, ''), webhook_id), COALESCE(NULLIF(vevent, ''), event),
			CASE WHEN vattempt > 0 THEN vattempt ELSE attempts END, status, latency, err, at::timestamptz
		FROM up ORDER BY ord
	)
	SELECT v.ord, EXISTS (SELECT 1 FROM up WHERE up.ord = v.ord),
		EXISTS (SELECT 1 FROM {s}deliveries d WHERE d.request_id = v.request_id)
	FROM v ORDER BY v.ord`

// FinishDeliveries implements chat.DeliveryFinisher in one statement, so a
// dispatcher records a batch of attempts in one round trip.
func (t *tx) FinishDeliveries(ctx context.Context, owner string, fs []chat.DeliveryFinish) ([]error, error) {
	n := len(fs)
	ids, states, errTexts, updAt, nextAt := make(pq.StringArray, n), make(pq.StringArray, n), make(pq.StringArray, n), make(pq.StringArray, n), make(pq.StringArray, n)
	hooks, events, at := make(pq.StringArray, n), make(pq.StringArray, n), make(pq.StringArray, n)
	status, attempt, latency := make(pq.Int64Array, n), make(pq.Int64Array, n), make(pq.Int64Array, n)
	ts := func(t time.Time) string { return string(pq.FormatTimestamp(t.UTC().Truncate(time.Millisecond))) }
	for i, f := range fs {
		a := f.Attempt
		ids[i], states[i], errTexts[i] = a.RequestID, f.State, a.Error
		if !a.At.IsZero() {
			updAt[i] = ts(a.At.Time)
		}
		nextAt[i], at[i] = ts(f.NextAttemptAt), ts(a.At.Time)
		hooks[i], events[i] = a.WebhookID, a.Event
		status[i], attempt[i], latency[i] = int64(a.StatusCode), int64(a.Attempt), a.LatencyMs
	}
	out := make([]error, n)
	seen := 0
	err := t.query(ctx, finishManySQL, []any{owner, ids, states, status, errTexts, updAt, nextAt, hooks, events,
		attempt, latency, at}, func(r *sql.Rows) error {
		var (
			ord             int
			updated, exists bool
		)
		if err := r.Scan(&ord, &updated, &exists); err != nil {
			return err
		}
		if ord < 1 || ord > n {
			return fmt.Errorf("postgres: FinishDeliveries: unexpected ordinal %d", ord)
		}
		i := ord - 1
		seen++
		switch {
		case updated:
		case !exists:
			out[i] = chat.Errorf(chat.CodeNotFound, "delivery %q not found", ids[i])
		default:
			out[i] = chat.Errorf(chat.CodeConflict, "delivery %q is no longer leased by %q", ids[i], owner)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if seen != n {
		return nil, fmt.Errorf("postgres: FinishDeliveries: %d of %d results", seen, n)
	}
	return out, nil
}

func (t *tx) GetDelivery(ctx context.Context, requestID string) (*chat.Delivery, error) {
	ds, err := t.deliveries(ctx, `SELECT `+deliveryCols+` FROM {s}deliveries WHERE request_id = $1`, requestID)
	if err != nil {
		return nil, err
	}
	if len(ds) == 0 {
		return nil, chat.Errorf(chat.CodeNotFound, "delivery %q not found", requestID)
	}
	return ds[0], nil
}

func (t *tx) ListDeliveries(ctx context.Context, webhookID, beforeRequestID string, limit int) ([]*chat.Delivery, error) {
	var lim any
	if limit > 0 {
		lim = limit
	}
	if beforeRequestID == "" {
		return t.deliveries(ctx, `SELECT `+deliveryCols+` FROM {s}deliveries WHERE webhook_id = $1
			ORDER BY created_at DESC, request_id DESC LIMIT $2`, webhookID, lim)
	}
	return t.deliveries(ctx, `SELECT `+deliveryCols+` FROM {s}deliveries WHERE webhook_id = $1
		AND (created_at, request_id) < (SELECT created_at, request_id FROM {s}deliveries WHERE request_id = $2)
		ORDER BY created_at DESC, request_id DESC LIMIT $3`, webhookID, beforeRequestID, lim)
}

func (t *tx) ListAttempts(ctx context.Context, requestID string) ([]*chat.DeliveryAttempt, error) {
	var out []*chat.DeliveryAttempt
	err := t.query(ctx, `SELECT request_id, webhook_id, event, attempt, status_code, latency_ms, error, at
		FROM {s}delivery_attempts WHERE request_id = $1 ORDER BY id`, []any{requestID}, func(r *sql.Rows) error {
		var (
			a  chat.DeliveryAttempt
			at time.Time
		)
		if err := r.Scan(&a.RequestID, &a.WebhookID, &a.Event, &a.Attempt, &a.StatusCode, &a.LatencyMs, &a.Error, &at); err != nil {
			return err
		}
		a.At = ct(at)
		out = append(out, &a)
		return nil
	})
	if out == nil && err == nil {
		out = []*chat.DeliveryAttempt{}
	}
	return out, err
}

func (t *tx) RescheduleDelivery(ctx context.Context, requestID string, nextAttemptAt time.Time) error {
	var n int
	err := t.queryRow(ctx, `WITH up AS (
			UPDATE {s}deliveries SET state = 'pending', next_attempt_at = $2, lease_owner = '', lease_until = NULL
			WHERE request_id = $1 RETURNING 1
		), notify AS (
			SELECT pg_notify($3, '') FROM up
		)
		SELECT (SELECT count(*) FROM up) + 0 * (SELECT count(*) FROM notify)`,
		[]any{requestID, nextAttemptAt.UTC().Truncate(time.Millisecond), t.s.notify}, &n)
	if err != nil {
		return err
	}
	if n == 0 {
		return chat.Errorf(chat.CodeNotFound, "delivery %q not found", requestID)
	}
	t.queued = true
	return nil
}

// CountDeliveries counts from the partial index of pending deliveries
// (deliveries_pending_idx on next_attempt_at): an index-only scan of the
// backlog.
func (t *tx) CountDeliveries(ctx context.Context, now time.Time) (chat.OutboxBacklog, error) {
	var b chat.OutboxBacklog
	err := t.queryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE next_attempt_at <= $1)
		FROM {s}deliveries WHERE state = 'pending'`,
		[]any{now.UTC().Truncate(time.Millisecond)}, &b.Pending, &b.Due)
	return b, err
}

func (t *tx) NextDeliveryAt(ctx context.Context) (time.Time, bool, error) {
	var next time.Time
	err := t.queryRow(ctx, `SELECT next_attempt_at FROM {s}deliveries WHERE state = 'pending'
		ORDER BY next_attempt_at LIMIT 1`, nil, &next)
	if chat.ErrorCode(err) == chat.CodeNotFound {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	return next.UTC(), true, nil
}

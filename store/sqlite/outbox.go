package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
)

// Webhooks.

const webhookCols = "webhook_id, url, events, secret, is_disabled, disabled_reason, created_at, updated_at"

func scanWebhook(sc scanner) (*chat.Webhook, error) {
	var w chat.Webhook
	var events string
	var created, updated int64
	if err := sc.Scan(&w.WebhookID, &w.URL, &events, &w.Secret, &w.IsDisabled, &w.DisabledReason, &created, &updated); err != nil {
		return nil, err
	}
	if err := fromJSON(events, &w.Events); err != nil {
		return nil, err
	}
	w.CreatedAt, w.UpdatedAt = fromMs(created), fromMs(updated)
	return &w, nil
}

// CreateWebhook implements chat.WebhookStore.
func (t *tx) CreateWebhook(ctx context.Context, w *chat.Webhook) error {
	events, err := jsonText(w.Events)
	if err != nil {
		return err
	}
	if _, err := t.exec(ctx, "INSERT INTO webhooks ("+webhookCols+") VALUES (?,?,?,?,?,?,?,?)",
		w.WebhookID, w.URL, events, w.Secret, w.IsDisabled, w.DisabledReason, ms(w.CreatedAt), ms(w.UpdatedAt)); err != nil {
		return asConflict(err, "webhook", w.WebhookID)
	}
	return t.bumpVersion(ctx, "webhooks")
}

// GetWebhook implements chat.WebhookStore.
func (t *tx) GetWebhook(ctx context.Context, webhookID string) (*chat.Webhook, error) {
	ws, err := keyed(t, ctx, scanWebhook, "SELECT "+webhookCols+" FROM webhooks WHERE webhook_id = ?", webhookID)
	if err != nil {
		return nil, err
	}
	if len(ws) == 0 {
		return nil, notFound("webhook", webhookID)
	}
	return ws[0], nil
}

// ListWebhooks implements chat.WebhookStore.
func (t *tx) ListWebhooks(ctx context.Context) ([]*chat.Webhook, error) {
	return list(t, ctx, scanWebhook, "SELECT "+webhookCols+" FROM webhooks ORDER BY created_at, webhook_id")
}

// UpdateWebhook implements chat.WebhookStore.
func (t *tx) UpdateWebhook(ctx context.Context, w *chat.Webhook) error {
	events, err := jsonText(w.Events)
	if err != nil {
		return err
	}
	n, err := t.execN(ctx, `UPDATE webhooks SET url = ?, events = ?, secret = ?, is_disabled = ?,
	disabled_reason = ?, updated_at = ? WHERE webhook_id = ?`,
		w.URL, events, w.Secret, w.IsDisabled, w.DisabledReason, ms(w.UpdatedAt), w.WebhookID)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("webhook", w.WebhookID)
	}
	return t.bumpVersion(ctx, "webhooks")
}

// DeleteWebhook implements chat.WebhookStore.
func (t *tx) DeleteWebhook(ctx context.Context, webhookID string) error {
	n, err := t.execN(ctx, "DELETE FROM webhooks WHERE webhook_id = ?", webhookID)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("webhook", webhookID)
	}
	if _, err := t.exec(ctx, "DELETE FROM deliveries WHERE webhook_id = ? AND state = ?", webhookID, chat.DeliveryPending); err != nil {
		return err
	}
	return t.bumpVersion(ctx, "webhooks")
}

// WebhooksVersion implements chat.WebhookStore.
func (t *tx) WebhooksVersion(ctx context.Context) (int64, error) { return t.version(ctx, "webhooks") }

// Deliveries.

const deliveryCols = `request_id, webhook_id, event, body, state, attempts, next_attempt_at, lease_owner,
	lease_until, last_error, last_status, created_at, updated_at`

func scanDelivery(sc scanner) (*chat.Delivery, error) {
	var d chat.Delivery
	var next, created, updated int64
	var lease sql.NullInt64
	if err := sc.Scan(&d.RequestID, &d.WebhookID, &d.Event, &d.Body, &d.State, &d.Attempts, &next,
		&d.LeaseOwner, &lease, &d.LastError, &d.LastStatus, &created, &updated); err != nil {
		return nil, err
	}
	d.NextAttemptAt, d.CreatedAt, d.UpdatedAt = fromMs(next), fromMs(created), fromMs(updated)
	d.LeaseUntil = fromMsp(lease)
	return &d, nil
}

// EnqueueDeliveries implements chat.OutboxStore.
func (t *tx) EnqueueDeliveries(ctx context.Context, ds []*chat.Delivery) error {
	for _, d := range ds {
		body := d.Body
		if body == nil {
			body = []byte{}
		}
		state := d.State
		if state == chat.DeliveryPending && d.LeaseOwner == "" {
			// Due for a claim (a leased one's owner has it already).
			t.signal |= sigDeliveries
		}
		if _, err := t.exec(ctx, "INSERT INTO deliveries ("+deliveryCols+") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
			d.RequestID, d.WebhookID, d.Event, body, state, d.Attempts, ms(d.NextAttemptAt), d.LeaseOwner,
			msp(d.LeaseUntil), d.LastError, d.LastStatus, ms(d.CreatedAt), ms(d.UpdatedAt)); err != nil {
			return asConflict(err, "delivery", d.RequestID)
		}
	}
	return nil
}

// ClaimDeliveries implements chat.OutboxStore. SQLite has one writer at a
// time (the claim runs in the IMMEDIATE write transaction), so the due rows
// it reads cannot be claimed by anyone else before it leases them, and a
// claimed row cannot be claimed again until its lease expires. The first
// limit due rows (of webhooks with a free slot) are read in the order of
// deliveries_due_idx; those past their webhook's free slots are left as
// they are; the others are leased by request id. The claim runs after
// nearly every post: a read and an update of the rows it takes, where one
// UPDATE that numbered the rows with a window function over an IN list and
// returned them cost SQLite three temporary b-trees per run (about 170,000
// instructions a claim, more than the post's own transaction).
func (t *tx) ClaimDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int, quota chat.DeliveryQuota) ([]*chat.Delivery, error) {
	n := ms(chat.NewTime(now))
	until := ms(chat.NewTime(now.Add(lease)))
	q := "SELECT " + deliveryCols + ` FROM deliveries
	WHERE state = 'pending' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?)`
	args := []any{n, n}
	var full []string
	for id := range quota.Busy {
		if quota.Free(id) == 0 {
			full = append(full, id)
		}
	}
	if len(full) > 0 {
		q += " AND webhook_id NOT IN " + inIDs
		args = append(args, jsonIDs(full))
	}
	due, err := list(t, ctx, scanDelivery, q+" ORDER BY next_attempt_at, request_id LIMIT "+limitParam, append(args, limitArg(limit))...)
	if err != nil || len(due) == 0 {
		return nil, err
	}
	ds := due[:0]
	var ids []string
	taken := map[string]int{}
	leaseUntil := fromMsp(sql.NullInt64{Int64: until, Valid: true})
	for _, d := range due {
		if free := quota.Free(d.WebhookID); free >= 0 && taken[d.WebhookID] >= free {
			continue
		}
		taken[d.WebhookID]++
		d.LeaseOwner, d.LeaseUntil = owner, leaseUntil
		ds = append(ds, d)
		ids = append(ids, d.RequestID)
	}
	const leaseRows = "UPDATE deliveries SET lease_owner = ?, lease_until = ? WHERE request_id "
	if len(ids) == 1 {
		_, err = t.exec(ctx, leaseRows+"= ?", owner, until, ids[0])
	} else {
		_, err = t.exec(ctx, leaseRows+"IN "+inIDs, owner, until, jsonIDs(ids))
	}
	if err != nil {
		return nil, err
	}
	return ds, nil
}

// FinishDelivery implements chat.OutboxStore. The attempt's number
// defaults to the delivery's attempts after this one, its webhookId and
// event are the delivery's; nextAttemptAt is kept only when the delivery
// goes back to pending; a zero a.At keeps updatedAt.
//
// The delivery's row holds its latest attempt (migration 0027), and
// delivery_attempts the earlier ones: recording an attempt first moves the
// attempt the row holds, if any, into delivery_attempts. A first attempt
// (a.Attempt 1, as a dispatcher numbers it from the claimed row) skips
// that statement unless the row turns out to hold an attempt already, so
// a delivery that succeeds at once is one UPDATE.
func (t *tx) FinishDelivery(ctx context.Context, owner string, a *chat.DeliveryAttempt, state string, nextAttemptAt time.Time) error {
	var at any
	if !a.At.IsZero() {
		at = ms(a.At)
	}
	const leased = ` WHERE request_id = ? AND state = 'pending' AND lease_owner = ? AND lease_owner != ''`
	const moveLatest = `INSERT INTO delivery_attempts (request_id, webhook_id, event, attempt, status_code,
	latency_ms, error, at) SELECT request_id, webhook_id, event, last_attempt, last_status, last_latency_ms,
	last_error, last_attempt_at FROM deliveries` + leased + ` AND last_attempt_at IS NOT NULL`
	const finish = `UPDATE deliveries SET state = ?, attempts = attempts + 1,
	next_attempt_at = CASE WHEN ? = 'pending' THEN ? ELSE next_attempt_at END,
	lease_owner = '', lease_until = NULL, last_error = ?, last_status = ?, updated_at = coalesce(?, updated_at),
	last_attempt = CASE WHEN ? > 0 THEN ? ELSE attempts + 1 END, last_latency_ms = ?, last_attempt_at = ?` + leased
	args := []any{state, state, ms(chat.NewTime(nextAttemptAt)), a.Error, a.StatusCode, at,
		a.Attempt, a.Attempt, a.LatencyMs, ms(a.At), a.RequestID, owner}
	if a.Attempt == 1 {
		// Nothing to move when the row holds no attempt; when it does
		// (or the delivery is not leased), the general path below runs.
		if n, err := t.execN(ctx, finish+" AND last_attempt_at IS NULL", args...); err != nil || n > 0 {
			return err
		}
	}
	if _, err := t.exec(ctx, moveLatest, a.RequestID, owner); err != nil {
		return err
	}
	if n, err := t.execN(ctx, finish, args...); err != nil || n > 0 {
		return err
	}
	var c int
	if err := t.row(ctx, "SELECT count(*) FROM deliveries WHERE request_id = ?", []any{a.RequestID}, &c); err != nil {
		return err
	}
	if c == 0 {
		return notFound("delivery", a.RequestID)
	}
	return &chat.Error{Code: chat.CodeConflict, Message: "delivery " + a.RequestID + " is no longer leased by " + owner}
}

// GetDelivery implements chat.OutboxStore.
func (t *tx) GetDelivery(ctx context.Context, requestID string) (*chat.Delivery, error) {
	ds, err := keyed(t, ctx, scanDelivery, "SELECT "+deliveryCols+" FROM deliveries WHERE request_id = ?", requestID)
	if err != nil {
		return nil, err
	}
	if len(ds) == 0 {
		return nil, notFound("delivery", requestID)
	}
	return ds[0], nil
}

// ListDeliveries implements chat.OutboxStore. An unknown beforeRequestID
// yields no deliveries.
func (t *tx) ListDeliveries(ctx context.Context, webhookID, beforeRequestID string, limit int) ([]*chat.Delivery, error) {
	var q strings.Builder
	args := []any{webhookID}
	q.WriteString("SELECT " + deliveryCols + " FROM deliveries d WHERE webhook_id = " + textParam)
	if beforeRequestID != "" {
		q.WriteString(` AND (created_at, request_id) < (SELECT created_at, request_id FROM deliveries
	WHERE request_id = ?)`)
		args = append(args, beforeRequestID)
	}
	q.WriteString(" ORDER BY created_at DESC, request_id DESC LIMIT " + limitParam)
	args = append(args, limitArg(limit))
	return list(t, ctx, scanDelivery, q.String(), args...)
}

// ListAttempts implements chat.OutboxStore: the earlier attempts from
// delivery_attempts, then the latest, which the delivery's row holds.
func (t *tx) ListAttempts(ctx context.Context, requestID string) ([]*chat.DeliveryAttempt, error) {
	return list(t, ctx, func(sc scanner) (*chat.DeliveryAttempt, error) {
		var a chat.DeliveryAttempt
		var at int64
		if err := sc.Scan(&a.RequestID, &a.WebhookID, &a.Event, &a.Attempt, &a.StatusCode, &a.LatencyMs, &a.Error, &at); err != nil {
			return nil, err
		}
		a.At = fromMs(at)
		return &a, nil
	}, `SELECT request_id, webhook_id, event, attempt, status_code, latency_ms, error, at FROM (
		SELECT 0 AS k, id, request_id, webhook_id, event, attempt, status_code, latency_ms, error, at
		FROM delivery_attempts WHERE request_id = `+textParam+`
		UNION ALL
		SELECT 1, 0, request_id, webhook_id, event, last_attempt, last_status, last_latency_ms, last_error, last_attempt_at
		FROM deliveries WHERE request_id = `+textParam+` AND last_attempt_at IS NOT NULL)
	ORDER BY k, id`, requestID, requestID)
}

// RescheduleDelivery implements chat.OutboxStore.
func (t *tx) RescheduleDelivery(ctx context.Context, requestID string, nextAttemptAt time.Time) error {
	n, err := t.execN(ctx, `UPDATE deliveries SET state = 'pending', next_attempt_at = ?, lease_owner = '',
	lease_until = NULL WHERE request_id = ?`, ms(chat.NewTime(nextAttemptAt)), requestID)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("delivery", requestID)
	}
	t.signal |= sigDeliveries
	return nil
}

// CountDeliveries counts from deliveries_due_idx (next_attempt_at,
// request_id of the pending deliveries): the whole index and a range of it.
func (t *tx) CountDeliveries(ctx context.Context, now time.Time) (chat.OutboxBacklog, error) {
	var b chat.OutboxBacklog
	err := t.row(ctx, `SELECT
			(SELECT count(*) FROM deliveries WHERE state = 'pending'),
			(SELECT count(*) FROM deliveries WHERE state = 'pending' AND next_attempt_at <= ?)`,
		[]any{ms(chat.NewTime(now))}, &b.Pending, &b.Due)
	return b, err
}

// NextDeliveryAt implements chat.OutboxStore: the first entry of
// deliveries_due_idx.
func (t *tx) NextDeliveryAt(ctx context.Context) (time.Time, bool, error) {
	var v sql.NullInt64
	if err := t.row(ctx, "SELECT min(next_attempt_at) FROM deliveries WHERE state = 'pending'", nil, &v); err != nil {
		return time.Time{}, false, err
	}
	if !v.Valid {
		return time.Time{}, false, nil
	}
	return fromMs(v.Int64).Time, true, nil
}

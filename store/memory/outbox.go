package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	chat "github.com/chatengine/chat"
)

// ---- webhooks ----

func (t *tx) bumpHooks() { set(t, &t.r().hooksVersion, t.r().hooksVersion+1) }

func (t *tx) CreateWebhook(_ context.Context, w *chat.Webhook) error {
	t.bumpHooks()
	return insert(t, t.r().webhooks, w.WebhookID, cloneWebhook(w), "webhook")
}

func (t *tx) GetWebhook(_ context.Context, webhookID string) (*chat.Webhook, error) {
	return get(t, t.r().webhooks, webhookID, cloneWebhook, "webhook")
}

func (t *tx) ListWebhooks(_ context.Context) ([]*chat.Webhook, error) {
	return copies(sortedValues(t.r().webhooks, nil, func(a, b *chat.Webhook) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt.Time), cmp.Compare(a.WebhookID, b.WebhookID))
	}), cloneWebhook), nil
}

func (t *tx) UpdateWebhook(_ context.Context, w *chat.Webhook) error {
	in := cloneWebhook(w)
	t.bumpHooks()
	return change(t, t.r().webhooks, w.WebhookID, "webhook", func(v *chat.Webhook) {
		v.URL, v.Events, v.Secret, v.IsDisabled, v.DisabledReason, v.UpdatedAt = in.URL, in.Events, in.Secret, in.IsDisabled, in.DisabledReason, in.UpdatedAt
	})
}

func (t *tx) DeleteWebhook(_ context.Context, webhookID string) error {
	if _, ok := t.r().webhooks[webhookID]; !ok {
		return notFound("webhook", webhookID)
	}
	del(t, t.r().webhooks, webhookID)
	deleteWhere(t, t.r().deliveries, func(d *chat.Delivery) bool {
		if d.WebhookID == webhookID && d.State == chat.DeliveryPending {
			del(t, t.r().attempts, d.RequestID)
			return true
		}
		return false
	}, 0)
	t.bumpHooks()
	return nil
}

// ---- outbox ----

// pending returns the pending deliveries in (nextAttemptAt, requestId)
// order.
func (d *data) pending() []*chat.Delivery {
	return sortedValues(d.deliveries, func(d *chat.Delivery) bool { return d.State == chat.DeliveryPending },
		func(a, b *chat.Delivery) int {
			return cmp.Or(a.NextAttemptAt.Compare(b.NextAttemptAt.Time), cmp.Compare(a.RequestID, b.RequestID))
		})
}

func (t *tx) EnqueueDeliveries(_ context.Context, ds []*chat.Delivery) error {
	for _, d := range ds {
		if _, ok := t.r().deliveries[d.RequestID]; ok {
			return conflict("delivery %q already exists", d.RequestID)
		}
		put(t, t.r().deliveries, d.RequestID, cloneDelivery(d))
		if d.State == chat.DeliveryPending {
			t.signal |= sigDeliveries
		}
	}
	return nil
}

func (t *tx) ClaimDeliveries(_ context.Context, owner string, now time.Time, lease time.Duration, limit int, skipWebhooks []string) ([]*chat.Delivery, error) {
	var out []*chat.Delivery
	for _, d := range t.r().pending() {
		if limit > 0 && len(out) >= limit || d.NextAttemptAt.After(now) {
			break
		}
		if d.LeaseUntil != nil && d.LeaseUntil.After(now) || slices.Contains(skipWebhooks, d.WebhookID) {
			continue
		}
		v := *d
		v.LeaseOwner, v.LeaseUntil = owner, chat.TimePtr(now.Add(lease))
		set(t, d, v)
		out = append(out, cloneDelivery(d))
	}
	return out, nil
}

func (t *tx) FinishDelivery(_ context.Context, owner string, a *chat.DeliveryAttempt, state string, nextAttemptAt time.Time) error {
	p, ok := t.r().deliveries[a.RequestID]
	if !ok {
		return notFound("delivery", a.RequestID)
	}
	if p.State != chat.DeliveryPending || p.LeaseOwner != owner || owner == "" {
		return conflict("delivery %q is no longer leased by %q", a.RequestID, owner)
	}
	at := cloneAttempt(a)
	at.WebhookID = cmp.Or(at.WebhookID, p.WebhookID)
	at.Event = cmp.Or(at.Event, p.Event)
	at.Attempt = cmp.Or(at.Attempt, p.Attempts+1)
	put(t, t.r().attempts, p.RequestID, append(slices.Clip(t.r().attempts[p.RequestID]), at))
	v := *p
	v.State, v.Attempts, v.LastStatus, v.LastError = state, p.Attempts+1, at.StatusCode, at.Error
	v.LeaseOwner, v.LeaseUntil = "", nil
	if !at.At.IsZero() {
		v.UpdatedAt = at.At
	}
	if state == chat.DeliveryPending {
		// No signal: the dispatcher that recorded the attempt keeps the
		// retry time.
		v.NextAttemptAt = chat.NewTime(nextAttemptAt)
	}
	set(t, p, v)
	return nil
}

func (t *tx) GetDelivery(_ context.Context, requestID string) (*chat.Delivery, error) {
	return get(t, t.r().deliveries, requestID, cloneDelivery, "delivery")
}

func newestDelivery(a, b *chat.Delivery) int {
	return cmp.Or(b.CreatedAt.Compare(a.CreatedAt.Time), cmp.Compare(b.RequestID, a.RequestID))
}

func (t *tx) ListDeliveries(_ context.Context, webhookID, beforeRequestID string, limit int) ([]*chat.Delivery, error) {
	cur, ok := t.r().deliveries[beforeRequestID]
	if beforeRequestID != "" && !ok {
		return nil, nil
	}
	keep := func(d *chat.Delivery) bool {
		return d.WebhookID == webhookID && (cur == nil || newestDelivery(d, cur) > 0)
	}
	return copies(first(sortedValues(t.r().deliveries, keep, newestDelivery), limit), cloneDelivery), nil
}

func (t *tx) ListAttempts(_ context.Context, requestID string) ([]*chat.DeliveryAttempt, error) {
	return copies(t.r().attempts[requestID], cloneAttempt), nil
}

func (t *tx) RescheduleDelivery(_ context.Context, requestID string, nextAttemptAt time.Time) error {
	t.signal |= sigDeliveries // (when the delivery is absent, a signal that finds nothing)
	return change(t, t.r().deliveries, requestID, "delivery", func(v *chat.Delivery) {
		v.State, v.NextAttemptAt, v.LeaseOwner, v.LeaseUntil = chat.DeliveryPending, chat.NewTime(nextAttemptAt), "", nil
	})
}

func (t *tx) NextDeliveryAt(_ context.Context) (time.Time, bool, error) {
	if l := t.r().pending(); len(l) > 0 {
		return l[0].NextAttemptAt.Time, true, nil
	}
	return time.Time{}, false, nil
}

func (t *tx) CountDeliveries(_ context.Context, now time.Time) (chat.OutboxBacklog, error) {
	return backlog(t.r().deliveries, func(d *chat.Delivery) (string, chat.Time) { return d.State, d.NextAttemptAt }, now), nil
}

// backlog counts the pending values of m, and among them those due at now.
func backlog[V any](m map[string]*V, state func(*V) (string, chat.Time), now time.Time) chat.OutboxBacklog {
	var b chat.OutboxBacklog
	for _, v := range m {
		if s, at := state(v); s == chat.DeliveryPending {
			b.Pending++
			if !at.After(now) {
				b.Due++
			}
		}
	}
	return b
}

func (t *tx) WebhooksVersion(_ context.Context) (int64, error) {
	return t.r().hooksVersion, nil
}

package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	chat "github.com/chatengine/chat"
)

// ---- webhooks ----

func (t *tx) bumpHooks() { replace(t, &t.d.hooksVersion, t.d.hooksVersion+1) }

func (t *tx) CreateWebhook(_ context.Context, w *chat.Webhook) error {
	if err := t.writable(); err != nil {
		return err
	}
	if _, ok := t.d.webhooks[w.WebhookID]; ok {
		return conflict("webhook %q already exists", w.WebhookID)
	}
	setKey(t, t.d.webhooks, w.WebhookID, normWebhook(w))
	t.bumpHooks()
	return nil
}

func (t *tx) GetWebhook(_ context.Context, webhookID string) (*chat.Webhook, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	w, ok := t.d.webhooks[webhookID]
	if !ok {
		return nil, notFound("webhook", webhookID)
	}
	return cpWebhook(w), nil
}

func (t *tx) ListWebhooks(_ context.Context) ([]*chat.Webhook, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	out := make([]*chat.Webhook, 0, len(t.d.webhooks))
	for _, w := range t.d.webhooks {
		out = append(out, cpWebhook(w))
	}
	slices.SortFunc(out, func(a, b *chat.Webhook) int {
		if c := a.CreatedAt.Compare(b.CreatedAt.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.WebhookID, b.WebhookID)
	})
	return out, nil
}

func (t *tx) UpdateWebhook(_ context.Context, w *chat.Webhook) error {
	if err := t.writable(); err != nil {
		return err
	}
	p, ok := t.d.webhooks[w.WebhookID]
	if !ok {
		return notFound("webhook", w.WebhookID)
	}
	in := normWebhook(w)
	v := *p
	v.URL = in.URL
	v.Events = in.Events
	v.Secret = in.Secret
	v.IsDisabled = in.IsDisabled
	v.DisabledReason = in.DisabledReason
	v.UpdatedAt = in.UpdatedAt
	replace(t, p, v)
	t.bumpHooks()
	return nil
}

func (t *tx) DeleteWebhook(_ context.Context, webhookID string) error {
	if err := t.writable(); err != nil {
		return err
	}
	if _, ok := t.d.webhooks[webhookID]; !ok {
		return notFound("webhook", webhookID)
	}
	delKey(t, t.d.webhooks, webhookID)
	for _, d := range t.d.hookDels[webhookID] {
		if d.State == chat.DeliveryPending {
			t.deleteDelivery(d)
		}
	}
	t.bumpHooks()
	return nil
}

// ---- outbox ----

func (t *tx) deleteDelivery(d *chat.Delivery) {
	sortedRemove(t, &t.d.pending, d, cmpDelivery)
	delKey(t, t.d.deliveries, d.RequestID)
	delKey(t, t.d.hookDels[d.WebhookID], d.RequestID)
	delKey(t, t.d.attempts, d.RequestID)
}

// setDelivery replaces the stored delivery *p with v, keeping the pending
// index in step.
func (t *tx) setDelivery(p *chat.Delivery, v chat.Delivery) {
	if p.State == chat.DeliveryPending {
		sortedRemove(t, &t.d.pending, p, cmpDelivery)
	}
	replace(t, p, v)
	if p.State == chat.DeliveryPending {
		sortedInsert(t, &t.d.pending, p, cmpDelivery)
	}
}

func (t *tx) EnqueueDeliveries(_ context.Context, ds []*chat.Delivery) error {
	if err := t.writable(); err != nil {
		return err
	}
	for _, d := range ds {
		if _, ok := t.d.deliveries[d.RequestID]; ok {
			return conflict("delivery %q already exists", d.RequestID)
		}
		v := normDelivery(d)
		setKey(t, t.d.deliveries, v.RequestID, v)
		setKey(t, innerMap(t, t.d.hookDels, v.WebhookID), v.RequestID, v)
		if v.State == chat.DeliveryPending {
			sortedInsert(t, &t.d.pending, v, cmpDelivery)
			t.signal |= sigDeliveries
		}
	}
	return nil
}

func (t *tx) ClaimDeliveries(_ context.Context, owner string, now time.Time, lease time.Duration, limit int, skipWebhooks []string) ([]*chat.Delivery, error) {
	if err := t.writable(); err != nil {
		return nil, err
	}
	until := chat.NewTime(now.Add(lease))
	var claimed []*chat.Delivery
	for _, d := range t.d.pending {
		if limit > 0 && len(claimed) >= limit {
			break
		}
		if d.NextAttemptAt.After(now) {
			break // pending is ordered by nextAttemptAt
		}
		if d.LeaseUntil != nil && d.LeaseUntil.After(now) || slices.Contains(skipWebhooks, d.WebhookID) {
			continue
		}
		claimed = append(claimed, d)
	}
	// The lease does not move a delivery in the pending order, so the
	// index needs no update.
	out := make([]*chat.Delivery, len(claimed))
	for i, d := range claimed {
		v := *d
		v.LeaseOwner = owner
		v.LeaseUntil = &until
		replace(t, d, v)
		out[i] = cpDelivery(d)
	}
	return out, nil
}

func (t *tx) FinishDelivery(_ context.Context, owner string, a *chat.DeliveryAttempt, state string, nextAttemptAt time.Time) error {
	if err := t.writable(); err != nil {
		return err
	}
	p, ok := t.d.deliveries[a.RequestID]
	if !ok {
		return notFound("delivery", a.RequestID)
	}
	if p.State != chat.DeliveryPending || p.LeaseOwner != owner || owner == "" {
		return conflict("delivery %q is no longer leased by %q", a.RequestID, owner)
	}
	at := normAttempt(a)
	if at.WebhookID == "" {
		at.WebhookID = p.WebhookID
	}
	if at.Event == "" {
		at.Event = p.Event
	}
	if at.Attempt == 0 {
		at.Attempt = p.Attempts + 1
	}
	setKey(t, t.d.attempts, p.RequestID, append(slices.Clip(t.d.attempts[p.RequestID]), at))

	v := *p
	v.State = state
	v.Attempts++
	v.LastStatus = at.StatusCode
	v.LastError = at.Error
	v.LeaseOwner = ""
	v.LeaseUntil = nil
	if !at.At.IsZero() {
		v.UpdatedAt = at.At
	}
	if state == chat.DeliveryPending {
		// No signal: the dispatcher that recorded the attempt keeps the
		// retry time; a signal would only make it claim before then.
		v.NextAttemptAt = chat.NewTime(nextAttemptAt)
	}
	t.setDelivery(p, v)
	return nil
}

func (t *tx) GetDelivery(_ context.Context, requestID string) (*chat.Delivery, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	d, ok := t.d.deliveries[requestID]
	if !ok {
		return nil, notFound("delivery", requestID)
	}
	return cpDelivery(d), nil
}

func cmpDeliveryNewest(a, b *chat.Delivery) int {
	if c := b.CreatedAt.Compare(a.CreatedAt.Time); c != 0 {
		return c
	}
	return cmp.Compare(b.RequestID, a.RequestID)
}

func (t *tx) ListDeliveries(_ context.Context, webhookID, beforeRequestID string, limit int) ([]*chat.Delivery, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	var cur *chat.Delivery
	if beforeRequestID != "" {
		c, ok := t.d.deliveries[beforeRequestID]
		if !ok {
			return nil, nil
		}
		cur = c
	}
	var found []*chat.Delivery
	for _, d := range t.d.hookDels[webhookID] {
		if cur == nil || cmpDeliveryNewest(d, cur) > 0 {
			found = append(found, d)
		}
	}
	slices.SortFunc(found, cmpDeliveryNewest)
	if limit > 0 && len(found) > limit {
		found = found[:limit]
	}
	out := make([]*chat.Delivery, len(found))
	for i, d := range found {
		out[i] = cpDelivery(d)
	}
	return out, nil
}

func (t *tx) ListAttempts(_ context.Context, requestID string) ([]*chat.DeliveryAttempt, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	as := t.d.attempts[requestID]
	out := make([]*chat.DeliveryAttempt, len(as))
	for i, a := range as {
		out[i] = cpAttempt(a)
	}
	return out, nil
}

func (t *tx) RescheduleDelivery(_ context.Context, requestID string, nextAttemptAt time.Time) error {
	if err := t.writable(); err != nil {
		return err
	}
	p, ok := t.d.deliveries[requestID]
	if !ok {
		return notFound("delivery", requestID)
	}
	v := *p
	v.State = chat.DeliveryPending
	v.NextAttemptAt = chat.NewTime(nextAttemptAt)
	v.LeaseOwner = ""
	v.LeaseUntil = nil
	t.setDelivery(p, v)
	t.signal |= sigDeliveries
	return nil
}

func (t *tx) NextDeliveryAt(_ context.Context) (time.Time, bool, error) {
	if err := t.readable(); err != nil {
		return time.Time{}, false, err
	}
	if len(t.d.pending) == 0 {
		return time.Time{}, false, nil
	}
	return t.d.pending[0].NextAttemptAt.Time, true, nil
}

func (t *tx) CountDeliveries(_ context.Context, now time.Time) (chat.OutboxBacklog, error) {
	if err := t.readable(); err != nil {
		return chat.OutboxBacklog{}, err
	}
	// pending is ordered by nextAttemptAt.
	due, _ := slices.BinarySearchFunc(t.d.pending, now, func(d *chat.Delivery, now time.Time) int {
		if d.NextAttemptAt.After(now) {
			return 1
		}
		return -1
	})
	return chat.OutboxBacklog{Pending: int64(len(t.d.pending)), Due: int64(due)}, nil
}

func (t *tx) WebhooksVersion(_ context.Context) (int64, error) {
	if err := t.readable(); err != nil {
		return 0, err
	}
	return t.d.hooksVersion, nil
}

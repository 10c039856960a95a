package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	chat "github.com/chatengine/chat"
)

func (t *tx) bumpHooks() { set(t, &t.r().hooksVersion, t.r().hooksVersion+1) }

func (t *tx) CreateWebhook(_ context.Context, w *chat.Webhook) error {
	t.bumpHooks()
	return insert(t, &t.r().webhooks, w.WebhookID, cloneWebhook(w), "webhook")
}

func (t *tx) GetWebhook(_ context.Context, webhookID string) (*chat.Webhook, error) {
	return get(t.r().webhooks, webhookID, cloneWebhook, "webhook")
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

// pending returns the pending deliveries in (nextAttemptAt, requestId) order.
func (d *data) pending() []*chat.Delivery {
	return sortedValues(d.deliveries, func(d *chat.Delivery) bool { return d.State == chat.DeliveryPending },
		func(a, b *chat.Delivery) int {
			return cmp.Or(a.NextAttemptAt.Compare(b.NextAttemptAt.Time), cmp.Compare(a.RequestID, b.RequestID))
		})
}

func (t *tx) EnqueueDeliveries(_ context.Context, ds []*chat.Delivery) error {
	for _, d := range ds {
		if err := insert(t, &t.r().deliveries, d.RequestID, cloneDelivery(d), "delivery"); err != nil {
			return err
		} else if d.State == chat.DeliveryPending && d.LeaseOwner == "" {
			// Due for a claim (a leased one's owner has it already).
			t.signal |= sigDeliveries
		}
	}
	return nil
}

func (t *tx) ClaimDeliveries(_ context.Context, owner string, now time.Time, lease time.Duration, limit int, quota chat.DeliveryQuota) ([]*chat.Delivery, error) {
	var out []*chat.Delivery
	taken := map[string]int{}
	for _, d := range t.r().pending() {
		if limit > 0 && len(out) >= limit || d.NextAttemptAt.After(now) {
			break
		}
		if d.LeaseUntil != nil && d.LeaseUntil.After(now) {
			continue
		}
		if taken[d.WebhookID]++; quota.Free(d.WebhookID) >= 0 && taken[d.WebhookID] > quota.Free(d.WebhookID) {
			continue
		}
		_ = change(t, t.r().deliveries, d.RequestID, "", func(v *chat.Delivery) { v.LeaseOwner, v.LeaseUntil = owner, chat.TimePtr(now.Add(lease)) })
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
	put(t, &t.r().attempts, p.RequestID, append(slices.Clip(t.r().attempts[p.RequestID]), at))
	// No signal for a retry: the dispatcher that recorded the attempt
	// keeps the retry time.
	return change(t, t.r().deliveries, p.RequestID, "", func(v *chat.Delivery) {
		v.State, v.Attempts, v.LastStatus, v.LastError, v.LeaseOwner, v.LeaseUntil = state, p.Attempts+1, at.StatusCode, at.Error, "", nil
		v.UpdatedAt = cmp.Or(at.At, v.UpdatedAt)
		if state == chat.DeliveryPending {
			v.NextAttemptAt = chat.NewTime(nextAttemptAt)
		}
	})
}

func (t *tx) GetDelivery(_ context.Context, requestID string) (*chat.Delivery, error) {
	return get(t.r().deliveries, requestID, cloneDelivery, "delivery")
}

func (t *tx) ListDeliveries(_ context.Context, webhookID, beforeRequestID string, limit int) ([]*chat.Delivery, error) {
	cur, ok := t.r().deliveries[beforeRequestID]
	if beforeRequestID != "" && !ok {
		return nil, nil
	}
	order := func(a, b *chat.Delivery) int { return newest(a.CreatedAt, b.CreatedAt, a.RequestID, b.RequestID) }
	keep := func(d *chat.Delivery) bool { return d.WebhookID == webhookID && (cur == nil || order(d, cur) > 0) }
	return copies(first(sortedValues(t.r().deliveries, keep, order), limit), cloneDelivery), nil
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

func (t *tx) WebhooksVersion(context.Context) (int64, error) { return t.r().hooksVersion, nil }

// deviceByToken returns the device with this provider and token, or nil.
func (d *data) deviceByToken(provider, token string) *chat.Device {
	for _, v := range d.devices {
		if v.Provider == provider && v.Token == token {
			return v
		}
	}
	return nil
}

// userDevices returns the devices of userID in (updatedAt, deviceId) order.
func (d *data) userDevices(userID string) []*chat.Device {
	return sortedValues(d.devices, func(v *chat.Device) bool { return v.UserID == userID }, func(a, b *chat.Device) int {
		return cmp.Or(a.UpdatedAt.Compare(b.UpdatedAt.Time), cmp.Compare(a.DeviceID, b.DeviceID))
	})
}

func (t *tx) CreateDevice(_ context.Context, d *chat.Device) error {
	if t.r().deviceByToken(d.Provider, d.Token) != nil {
		return conflict("a %s device with this token already exists", d.Provider)
	}
	return insert(t, &t.r().devices, d.DeviceID, cloneDevice(d), "device")
}

func (t *tx) GetDeviceByToken(_ context.Context, provider, token string) (*chat.Device, error) {
	if d := t.r().deviceByToken(provider, token); d != nil {
		return cloneDevice(d), nil
	}
	return nil, chat.Errorf(chat.CodeNotFound, "no %s device has this token", provider)
}

func (t *tx) TouchDevice(_ context.Context, deviceID string, now time.Time) error {
	return change(t, t.r().devices, deviceID, "device", func(d *chat.Device) { d.UpdatedAt = chat.NewTime(now) })
}

func (t *tx) ListDevices(_ context.Context, userID string) ([]*chat.Device, error) {
	return copies(t.r().userDevices(userID), cloneDevice), nil
}

func (t *tx) DeleteDevice(_ context.Context, userID, deviceID string) error {
	if d, ok := t.r().devices[deviceID]; !ok || d.UserID != userID {
		return chat.Errorf(chat.CodeNotFound, "device %q of user %q not found", deviceID, userID)
	}
	t.deleteDevice(deviceID)
	return nil
}

// deleteDevice deletes a device and its pushes.
func (t *tx) deleteDevice(deviceID string) {
	del(t, t.r().devices, deviceID)
	deleteWhere(t, t.r().pushes, func(p *chat.PushDelivery) bool { return p.DeviceID == deviceID }, 0)
}

func (t *tx) DeleteDevices(_ context.Context, userID string) (int, error) {
	ds := t.r().userDevices(userID)
	for _, d := range ds {
		t.deleteDevice(d.DeviceID)
	}
	return len(ds), nil
}

func (t *tx) PutNotificationLevel(_ context.Context, userID, channelID string, level chat.NotificationLevel, now time.Time) error {
	put(t, &t.r().levels, pair{userID, channelID}, &chat.NotificationSetting{UserID: userID, ChannelID: channelID, Level: level, UpdatedAt: chat.TimePtr(now)})
	return nil
}

func (t *tx) DeleteNotificationLevel(_ context.Context, userID, channelID string) error {
	del(t, t.r().levels, pair{userID, channelID})
	return nil
}

func (t *tx) GetNotificationLevels(_ context.Context, userID string, channelIDs []string) ([]*chat.NotificationSetting, error) {
	keep := func(n *chat.NotificationSetting) bool {
		return n.UserID == userID && slices.Contains(channelIDs, n.ChannelID)
	}
	return copies(sortedValues(t.r().levels, keep, nil), cloneSetting), nil
}

func (t *tx) ListNotificationLevels(_ context.Context, userID, afterChannelID string, after bool, limit int) ([]*chat.NotificationSetting, error) {
	keep := func(n *chat.NotificationSetting) bool {
		return n.UserID == userID && (!after || n.ChannelID > afterChannelID)
	}
	l := sortedValues(t.r().levels, keep, func(a, b *chat.NotificationSetting) int { return cmp.Compare(a.ChannelID, b.ChannelID) })
	return copies(first(l, limit), cloneSetting), nil
}

func (t *tx) DeleteNotificationLevels(_ context.Context, userID string) error {
	deleteWhere(t, t.r().levels, func(n *chat.NotificationSetting) bool { return n.UserID == userID }, 0)
	return nil
}

func (t *tx) PutBlock(_ context.Context, userID, blockedID string, now time.Time) (bool, error) {
	b := &chat.Block{UserID: userID, BlockedID: blockedID, CreatedAt: chat.NewTime(now)}
	return insert(t, &t.r().blocks, pair{userID, blockedID}, b, "block") == nil, nil
}

func (t *tx) DeleteBlock(_ context.Context, userID, blockedID string) (bool, error) {
	_, ok := t.r().blocks[pair{userID, blockedID}]
	del(t, t.r().blocks, pair{userID, blockedID})
	return ok, nil
}

func (t *tx) ListBlocks(_ context.Context, userID string) ([]*chat.Block, error) {
	return copies(sortedValues(t.r().blocks, func(b *chat.Block) bool { return b.UserID == userID }, func(a, b *chat.Block) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt.Time), cmp.Compare(a.BlockedID, b.BlockedID))
	}), func(b *chat.Block) *chat.Block { return clone(b, func(*chat.Block) {}) }), nil
}

func (t *tx) BlockersAmong(_ context.Context, blockedID string, userIDs []string) ([]string, error) {
	var out []string
	for _, u := range userIDs {
		if _, ok := t.r().blocks[pair{u, blockedID}]; ok {
			out = append(out, u)
		}
	}
	return out, nil
}

func (t *tx) ListPushTargets(_ context.Context, channelID, excludeUserID string) ([]*chat.PushTarget, error) {
	level := func(userID, channelID string) (l chat.NotificationLevel) {
		if n := t.r().levels[pair{userID, channelID}]; n != nil {
			l = n.Level
		}
		return l
	}
	var out []*chat.PushTarget
	for _, d := range t.r().devices {
		if d.UserID != excludeUserID && t.r().isMember(channelID, d.UserID) {
			out = append(out, &chat.PushTarget{UserID: d.UserID, DeviceID: d.DeviceID, UserLevel: level(d.UserID, ""), ChannelLevel: level(d.UserID, channelID)})
		}
	}
	slices.SortFunc(out, func(a, b *chat.PushTarget) int {
		return cmp.Or(cmp.Compare(a.UserID, b.UserID), cmp.Compare(a.DeviceID, b.DeviceID))
	})
	return out, nil
}

func (t *tx) EnqueuePushes(_ context.Context, ps []*chat.PushDelivery) error {
	for _, p := range ps {
		_, dup := t.r().pushes[p.PushID]
		_, dev := t.r().devices[p.DeviceID]
		for _, o := range t.r().pushes {
			dup = dup || o.MessageID == p.MessageID && o.DeviceID == p.DeviceID
		}
		if dev && !dup {
			put(t, &t.r().pushes, p.PushID, clonePush(p))
		}
	}
	return nil
}

// ClaimPushes: write transactions run one at a time, so a claimed push cannot be claimed again while its lease lasts.
func (t *tx) ClaimPushes(_ context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]*chat.PushDelivery, error) {
	due := sortedValues(t.r().pushes, func(p *chat.PushDelivery) bool {
		return p.State == chat.DeliveryPending && !p.NextAttemptAt.After(now) && (p.LeaseUntil == nil || !p.LeaseUntil.After(now))
	}, func(a, b *chat.PushDelivery) int {
		return cmp.Or(a.NextAttemptAt.Compare(b.NextAttemptAt.Time), cmp.Compare(a.PushID, b.PushID))
	})
	out := make([]*chat.PushDelivery, 0, len(due))
	for _, p := range first(due, limit) {
		_ = change(t, t.r().pushes, p.PushID, "push", func(v *chat.PushDelivery) { v.LeaseOwner, v.LeaseUntil = owner, chat.TimePtr(now.Add(lease)) })
		r := clonePush(p)
		d := t.r().devices[p.DeviceID]
		r.Provider, r.Token = d.Provider, d.Token
		out = append(out, r)
	}
	return out, nil
}

func (t *tx) FinishPush(_ context.Context, owner, pushID, state, lastError string, nextAttemptAt, now time.Time) error {
	if p, ok := t.r().pushes[pushID]; ok && (p.State != chat.DeliveryPending || owner == "" || p.LeaseOwner != owner) {
		return conflict("push %q is not leased by %q", pushID, owner)
	}
	return change(t, t.r().pushes, pushID, "push", func(v *chat.PushDelivery) {
		v.State, v.LastError, v.Attempts = state, lastError, v.Attempts+1
		v.LeaseOwner, v.LeaseUntil, v.UpdatedAt = "", nil, chat.NewTime(now)
		if state == chat.DeliveryPending {
			v.NextAttemptAt = chat.NewTime(nextAttemptAt)
		}
	})
}

func (t *tx) ListPushes(_ context.Context, messageID string) ([]*chat.PushDelivery, error) {
	return copies(sortedValues(t.r().pushes, func(p *chat.PushDelivery) bool { return p.MessageID == messageID },
		func(a, b *chat.PushDelivery) int { return cmp.Compare(a.PushID, b.PushID) }), clonePush), nil
}

func (t *tx) CountPushes(_ context.Context, now time.Time) (chat.OutboxBacklog, error) {
	return backlog(t.r().pushes, func(p *chat.PushDelivery) (string, chat.Time) { return p.State, p.NextAttemptAt }, now), nil
}

func (t *tx) EnqueuePushBatch(_ context.Context, b *chat.PushBatch) error {
	return insert(t, &t.r().batches, b.MessageID, cloneBatch(b), "push batch of message")
}

func (t *tx) ExpandPushBatches(ctx context.Context, limit int) (int, error) {
	bs := first(sortedValues(t.r().batches, nil, func(a, b *chat.PushBatch) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt.Time), cmp.Compare(a.MessageID, b.MessageID))
	}), limit)
	for _, b := range bs {
		ps := make([]*chat.PushDelivery, len(b.DeviceIDs))
		for i, dev := range b.DeviceIDs {
			ps[i] = &chat.PushDelivery{PushID: b.MessageID + "/" + dev, MessageID: b.MessageID, ChannelID: b.ChannelID,
				UserID: b.UserIDs[i], DeviceID: dev, Title: b.Title, Body: b.Body, State: chat.DeliveryPending,
				NextAttemptAt: b.CreatedAt, CreatedAt: b.CreatedAt, UpdatedAt: b.CreatedAt}
		}
		_ = t.EnqueuePushes(ctx, ps) // which does not fail
		del(t, t.r().batches, b.MessageID)
	}
	return len(bs), nil
}

func (t *tx) DeleteFinishedPushes(_ context.Context, before time.Time, limit int) (int, error) {
	// The oldest first, so that a limited call makes progress in order.
	old := first(sortedValues(t.r().pushes, func(p *chat.PushDelivery) bool {
		return p.State != chat.DeliveryPending && p.UpdatedAt.Before(before)
	}, func(a, b *chat.PushDelivery) int {
		return cmp.Or(a.UpdatedAt.Compare(b.UpdatedAt.Time), cmp.Compare(a.PushID, b.PushID))
	}), limit)
	for _, p := range old {
		del(t, t.r().pushes, p.PushID)
	}
	return len(old), nil
}

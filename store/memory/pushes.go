package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	chat "github.com/chatengine/chat"
)

// ---- the push outbox ----

type pushKey struct{ message, device string }

func cpPush(p *chat.PushDelivery) *chat.PushDelivery {
	v := *p
	v.NextAttemptAt, v.CreatedAt, v.UpdatedAt = nt(p.NextAttemptAt), nt(p.CreatedAt), nt(p.UpdatedAt)
	v.LeaseUntil = ntp(p.LeaseUntil)
	v.Provider, v.Token = "", ""
	return &v
}

// ListPushTargets implements chat.PushStore.
func (t *tx) ListPushTargets(_ context.Context, channelID, excludeUserID string) ([]*chat.PushTarget, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	var out []*chat.PushTarget
	for userID, cu := range t.d.members[channelID] {
		if userID == excludeUserID || cu.Membership != chat.MembershipMember || len(t.d.userDevices[userID]) == 0 {
			continue
		}
		var own, ch chat.NotificationLevel
		if n := t.d.notify[userID][""]; n != nil {
			own = n.Level
		}
		if n := t.d.notify[userID][channelID]; n != nil {
			ch = n.Level
		}
		for deviceID := range t.d.userDevices[userID] {
			out = append(out, &chat.PushTarget{UserID: userID, DeviceID: deviceID, UserLevel: own, ChannelLevel: ch})
		}
	}
	slices.SortFunc(out, func(a, b *chat.PushTarget) int {
		return cmp.Or(cmp.Compare(a.UserID, b.UserID), cmp.Compare(a.DeviceID, b.DeviceID))
	})
	return out, nil
}

// EnqueuePushes implements chat.PushStore.
func (t *tx) EnqueuePushes(_ context.Context, ps []*chat.PushDelivery) error {
	if err := t.writable(); err != nil {
		return err
	}
	for _, p := range ps {
		k := pushKey{p.MessageID, p.DeviceID}
		if _, ok := t.d.pushKeys[k]; ok {
			continue
		}
		if _, ok := t.d.pushes[p.PushID]; ok {
			continue
		}
		if _, ok := t.d.devices[p.DeviceID]; !ok {
			continue
		}
		v := cpPush(p)
		setKey(t, t.d.pushes, v.PushID, v)
		setKey(t, t.d.pushKeys, k, v.PushID)
		t.indexPush(t.d.devicePushes, v.DeviceID, v.PushID)
		t.indexPush(t.d.msgPushes, v.MessageID, v.PushID)
		if v.State == chat.DeliveryPending {
			setKey(t, t.d.pendingPushes, v.PushID, v)
		}
	}
	return nil
}

func (t *tx) indexPush(idx map[string]map[string]bool, key, pushID string) {
	m := idx[key]
	if m == nil {
		m = map[string]bool{}
		setKey(t, idx, key, m)
	}
	setKey(t, m, pushID, true)
}

// deletePushes deletes the pushes of a device (its pushes go with it).
func (t *tx) deletePushes(deviceID string) {
	for id := range t.d.devicePushes[deviceID] {
		p := t.d.pushes[id]
		delKey(t, t.d.pushes, id)
		delKey(t, t.d.pendingPushes, id)
		delKey(t, t.d.pushKeys, pushKey{p.MessageID, p.DeviceID})
		delKey(t, t.d.msgPushes[p.MessageID], id)
	}
	delKey(t, t.d.devicePushes, deviceID)
}

// ClaimPushes implements chat.PushStore. Write transactions run one at a
// time, so a claimed push cannot be claimed again while its lease lasts.
func (t *tx) ClaimPushes(_ context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]*chat.PushDelivery, error) {
	if err := t.writable(); err != nil {
		return nil, err
	}
	n := chat.NewTime(now)
	var due []*chat.PushDelivery
	for _, p := range t.d.pendingPushes {
		if !p.NextAttemptAt.After(n.Time) && (p.LeaseUntil == nil || !p.LeaseUntil.After(n.Time)) {
			due = append(due, p)
		}
	}
	slices.SortFunc(due, func(a, b *chat.PushDelivery) int {
		return cmp.Or(a.NextAttemptAt.Compare(b.NextAttemptAt.Time), cmp.Compare(a.PushID, b.PushID))
	})
	if limit > 0 && len(due) > limit {
		due = due[:limit]
	}
	out := make([]*chat.PushDelivery, 0, len(due))
	for _, p := range due {
		v := cpPush(p)
		v.LeaseOwner, v.LeaseUntil = owner, chat.TimePtr(now.Add(lease))
		t.putPush(v)
		r := cpPush(v)
		d := t.d.devices[v.DeviceID]
		r.Provider, r.Token = d.Provider, d.Token
		out = append(out, r)
	}
	return out, nil
}

// putPush replaces a stored push by v and keeps the pending index.
func (t *tx) putPush(v *chat.PushDelivery) {
	setKey(t, t.d.pushes, v.PushID, v)
	if v.State == chat.DeliveryPending {
		setKey(t, t.d.pendingPushes, v.PushID, v)
	} else {
		delKey(t, t.d.pendingPushes, v.PushID)
	}
}

// FinishPush implements chat.PushStore.
func (t *tx) FinishPush(_ context.Context, owner, pushID, state, lastError string, nextAttemptAt, now time.Time) error {
	if err := t.writable(); err != nil {
		return err
	}
	p, ok := t.d.pushes[pushID]
	if !ok {
		return chat.Errorf(chat.CodeNotFound, "push %q not found", pushID)
	}
	if p.State != chat.DeliveryPending || owner == "" || p.LeaseOwner != owner {
		return chat.Errorf(chat.CodeConflict, "push %q is not leased by %q", pushID, owner)
	}
	v := cpPush(p)
	v.State, v.LastError, v.Attempts = state, lastError, p.Attempts+1
	v.LeaseOwner, v.LeaseUntil, v.UpdatedAt = "", nil, chat.NewTime(now)
	if state == chat.DeliveryPending {
		v.NextAttemptAt = chat.NewTime(nextAttemptAt)
	}
	t.putPush(v)
	return nil
}

// ListPushes implements chat.PushStore.
func (t *tx) ListPushes(_ context.Context, messageID string) ([]*chat.PushDelivery, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	var out []*chat.PushDelivery
	for id := range t.d.msgPushes[messageID] {
		out = append(out, cpPush(t.d.pushes[id]))
	}
	slices.SortFunc(out, func(a, b *chat.PushDelivery) int { return cmp.Compare(a.PushID, b.PushID) })
	return out, nil
}

// CountPushes implements chat.PushStore.
func (t *tx) CountPushes(_ context.Context, now time.Time) (chat.OutboxBacklog, error) {
	if err := t.readable(); err != nil {
		return chat.OutboxBacklog{}, err
	}
	var b chat.OutboxBacklog
	n := chat.NewTime(now)
	for _, p := range t.d.pendingPushes {
		b.Pending++
		if !p.NextAttemptAt.After(n.Time) {
			b.Due++
		}
	}
	return b, nil
}

// EnqueuePushBatch implements chat.PushStore.
func (t *tx) EnqueuePushBatch(_ context.Context, b *chat.PushBatch) error {
	if err := t.writable(); err != nil {
		return err
	}
	if _, ok := t.d.pushBatches[b.MessageID]; ok {
		return chat.Errorf(chat.CodeConflict, "message %q already has a push batch", b.MessageID)
	}
	v := *b
	v.UserIDs, v.DeviceIDs, v.CreatedAt = slices.Clone(b.UserIDs), slices.Clone(b.DeviceIDs), nt(b.CreatedAt)
	setKey(t, t.d.pushBatches, v.MessageID, &v)
	return nil
}

// ExpandPushBatches implements chat.PushStore.
func (t *tx) ExpandPushBatches(ctx context.Context, limit int) (int, error) {
	if err := t.writable(); err != nil {
		return 0, err
	}
	bs := make([]*chat.PushBatch, 0, len(t.d.pushBatches))
	for _, b := range t.d.pushBatches {
		bs = append(bs, b)
	}
	slices.SortFunc(bs, func(a, b *chat.PushBatch) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt.Time), cmp.Compare(a.MessageID, b.MessageID))
	})
	if limit > 0 && len(bs) > limit {
		bs = bs[:limit]
	}
	for _, b := range bs {
		ps := make([]*chat.PushDelivery, len(b.DeviceIDs))
		for i, dev := range b.DeviceIDs {
			ps[i] = expandedPush(b, i, dev)
		}
		if err := t.EnqueuePushes(ctx, ps); err != nil {
			return 0, err
		}
		delKey(t, t.d.pushBatches, b.MessageID)
	}
	return len(bs), nil
}

// expandedPush is the push of a batch's i-th device.
func expandedPush(b *chat.PushBatch, i int, dev string) *chat.PushDelivery {
	return &chat.PushDelivery{PushID: b.MessageID + "/" + dev, MessageID: b.MessageID, ChannelID: b.ChannelID,
		UserID: b.UserIDs[i], DeviceID: dev, Title: b.Title, Body: b.Body, State: chat.DeliveryPending,
		NextAttemptAt: b.CreatedAt, CreatedAt: b.CreatedAt, UpdatedAt: b.CreatedAt}
}

// DeleteFinishedPushes implements chat.PushStore.
func (t *tx) DeleteFinishedPushes(_ context.Context, before time.Time, limit int) (int, error) {
	if err := t.writable(); err != nil {
		return 0, err
	}
	var old []*chat.PushDelivery
	for _, p := range t.d.pushes {
		if p.State != chat.DeliveryPending && p.UpdatedAt.Before(before) {
			old = append(old, p)
		}
	}
	slices.SortFunc(old, func(a, b *chat.PushDelivery) int {
		return cmp.Or(a.UpdatedAt.Compare(b.UpdatedAt.Time), cmp.Compare(a.PushID, b.PushID))
	})
	if limit > 0 && len(old) > limit {
		old = old[:limit]
	}
	for _, p := range old {
		delKey(t, t.d.pushes, p.PushID)
		delKey(t, t.d.pushKeys, pushKey{p.MessageID, p.DeviceID})
		delKey(t, t.d.msgPushes[p.MessageID], p.PushID)
		delKey(t, t.d.devicePushes[p.DeviceID], p.PushID)
	}
	return len(old), nil
}

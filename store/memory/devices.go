package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	chat "github.com/chatengine/chat"
)

// ---- devices and notification levels ----

func cpDevice(d *chat.Device) *chat.Device {
	v := *d
	v.CreatedAt, v.UpdatedAt = nt(d.CreatedAt), nt(d.UpdatedAt)
	return &v
}

// CreateDevice implements chat.DeviceStore.
func (t *tx) CreateDevice(_ context.Context, d *chat.Device) error {
	if err := t.writable(); err != nil {
		return err
	}
	if _, ok := t.d.devices[d.DeviceID]; ok {
		return chat.Errorf(chat.CodeConflict, "device %q already exists", d.DeviceID)
	}
	k := deviceTokKey{d.Provider, d.Token}
	if _, ok := t.d.deviceToks[k]; ok {
		return chat.Errorf(chat.CodeConflict, "a %s device with this token already exists", d.Provider)
	}
	v := cpDevice(d)
	setKey(t, t.d.devices, v.DeviceID, v)
	setKey(t, t.d.deviceToks, k, v.DeviceID)
	byID := t.d.userDevices[v.UserID]
	if byID == nil {
		byID = map[string]*chat.Device{}
		setKey(t, t.d.userDevices, v.UserID, byID)
	}
	setKey(t, byID, v.DeviceID, v)
	return nil
}

// GetDeviceByToken implements chat.DeviceStore.
func (t *tx) GetDeviceByToken(_ context.Context, provider, token string) (*chat.Device, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	id, ok := t.d.deviceToks[deviceTokKey{provider, token}]
	if !ok {
		return nil, chat.Errorf(chat.CodeNotFound, "no %s device has this token", provider)
	}
	return cpDevice(t.d.devices[id]), nil
}

// TouchDevice implements chat.DeviceStore.
func (t *tx) TouchDevice(_ context.Context, deviceID string, now time.Time) error {
	if err := t.writable(); err != nil {
		return err
	}
	old, ok := t.d.devices[deviceID]
	if !ok {
		return chat.Errorf(chat.CodeNotFound, "device %q not found", deviceID)
	}
	v := cpDevice(old)
	v.UpdatedAt = chat.NewTime(now)
	setKey(t, t.d.devices, deviceID, v)
	setKey(t, t.d.userDevices[v.UserID], deviceID, v)
	return nil
}

// ListDevices implements chat.DeviceStore.
func (t *tx) ListDevices(_ context.Context, userID string) ([]*chat.Device, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	out := make([]*chat.Device, 0, len(t.d.userDevices[userID]))
	for _, d := range t.d.userDevices[userID] {
		out = append(out, cpDevice(d))
	}
	slices.SortFunc(out, func(a, b *chat.Device) int {
		if c := a.UpdatedAt.Compare(b.UpdatedAt.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.DeviceID, b.DeviceID)
	})
	return out, nil
}

// DeleteDevice implements chat.DeviceStore.
func (t *tx) DeleteDevice(_ context.Context, userID, deviceID string) error {
	if err := t.writable(); err != nil {
		return err
	}
	d, ok := t.d.userDevices[userID][deviceID]
	if !ok {
		return chat.Errorf(chat.CodeNotFound, "device %q of user %q not found", deviceID, userID)
	}
	t.deleteDevice(d)
	return nil
}

func (t *tx) deleteDevice(d *chat.Device) {
	delKey(t, t.d.devices, d.DeviceID)
	delKey(t, t.d.deviceToks, deviceTokKey{d.Provider, d.Token})
	delKey(t, t.d.userDevices[d.UserID], d.DeviceID)
	t.deletePushes(d.DeviceID)
}

// DeleteDevices implements chat.DeviceStore.
func (t *tx) DeleteDevices(_ context.Context, userID string) (int, error) {
	if err := t.writable(); err != nil {
		return 0, err
	}
	ds := make([]*chat.Device, 0, len(t.d.userDevices[userID]))
	for _, d := range t.d.userDevices[userID] {
		ds = append(ds, d)
	}
	for _, d := range ds {
		t.deleteDevice(d)
	}
	return len(ds), nil
}

func cpSetting(n *chat.NotificationSetting) *chat.NotificationSetting {
	v := *n
	v.UpdatedAt = ntp(n.UpdatedAt)
	return &v
}

// PutNotificationLevel implements chat.NotificationStore.
func (t *tx) PutNotificationLevel(_ context.Context, userID, channelID string, level chat.NotificationLevel, now time.Time) error {
	if err := t.writable(); err != nil {
		return err
	}
	m := t.d.notify[userID]
	if m == nil {
		m = map[string]*chat.NotificationSetting{}
		setKey(t, t.d.notify, userID, m)
	}
	setKey(t, m, channelID, &chat.NotificationSetting{UserID: userID, ChannelID: channelID, Level: level, UpdatedAt: chat.TimePtr(now)})
	return nil
}

// DeleteNotificationLevel implements chat.NotificationStore.
func (t *tx) DeleteNotificationLevel(_ context.Context, userID, channelID string) error {
	if err := t.writable(); err != nil {
		return err
	}
	if m := t.d.notify[userID]; m != nil {
		delKey(t, m, channelID)
	}
	return nil
}

// GetNotificationLevels implements chat.NotificationStore.
func (t *tx) GetNotificationLevels(_ context.Context, userID string, channelIDs []string) ([]*chat.NotificationSetting, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	var out []*chat.NotificationSetting
	m := t.d.notify[userID]
	for _, id := range slices.Compact(slices.Sorted(slices.Values(channelIDs))) {
		if n, ok := m[id]; ok {
			out = append(out, cpSetting(n))
		}
	}
	return out, nil
}

// ListNotificationLevels implements chat.NotificationStore.
func (t *tx) ListNotificationLevels(_ context.Context, userID, afterChannelID string, after bool, limit int) ([]*chat.NotificationSetting, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	var out []*chat.NotificationSetting
	for _, n := range t.d.notify[userID] {
		if !after || n.ChannelID > afterChannelID {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b *chat.NotificationSetting) int { return cmp.Compare(a.ChannelID, b.ChannelID) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	for i, n := range out {
		out[i] = cpSetting(n)
	}
	return out, nil
}

// DeleteNotificationLevels implements chat.NotificationStore.
func (t *tx) DeleteNotificationLevels(_ context.Context, userID string) error {
	if err := t.writable(); err != nil {
		return err
	}
	delKey(t, t.d.notify, userID)
	return nil
}

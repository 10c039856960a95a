package sqlite

import (
	"context"
	"time"

	chat "github.com/chatengine/chat"
)

const deviceCols = `device_id, user_id, provider, token, created_at, updated_at`

func scanDevice(sc scanner) (*chat.Device, error) {
	var (
		d                chat.Device
		created, updated int64
	)
	if err := sc.Scan(&d.DeviceID, &d.UserID, &d.Provider, &d.Token, &created, &updated); err != nil {
		return nil, err
	}
	d.CreatedAt, d.UpdatedAt = fromMs(created), fromMs(updated)
	return &d, nil
}

// CreateDevice implements chat.DeviceStore; devices_token_key refuses a
// second device with one provider and token (CodeConflict).
func (t *tx) CreateDevice(ctx context.Context, d *chat.Device) error {
	_, err := t.exec(ctx, `INSERT INTO devices (`+deviceCols+`) VALUES (?,?,?,?,?,?)`,
		d.DeviceID, d.UserID, d.Provider, d.Token, ms(d.CreatedAt), ms(d.UpdatedAt))
	return err
}

// GetDeviceByToken implements chat.DeviceStore (devices_token_key).
func (t *tx) GetDeviceByToken(ctx context.Context, provider, token string) (*chat.Device, error) {
	ds, err := list(t, ctx, scanDevice, `SELECT `+deviceCols+` FROM devices WHERE provider = ? AND token = ?`, provider, token)
	if err != nil {
		return nil, err
	}
	if len(ds) == 0 {
		return nil, chat.Errorf(chat.CodeNotFound, "no %s device has this token", provider)
	}
	return ds[0], nil
}

// TouchDevice implements chat.DeviceStore.
func (t *tx) TouchDevice(ctx context.Context, deviceID string, now time.Time) error {
	n, err := t.execN(ctx, `UPDATE devices SET updated_at = ? WHERE device_id = ?`, ms(chat.NewTime(now)), deviceID)
	if err != nil {
		return err
	}
	if n == 0 {
		return chat.Errorf(chat.CodeNotFound, "device %q not found", deviceID)
	}
	return nil
}

// ListDevices implements chat.DeviceStore (devices_user_idx). Write
// transactions run one at a time, so no lock is needed.
func (t *tx) ListDevices(ctx context.Context, userID string) ([]*chat.Device, error) {
	return list(t, ctx, scanDevice, `SELECT `+deviceCols+` FROM devices WHERE user_id = ?
		ORDER BY updated_at, device_id`, userID)
}

// DeleteDevice implements chat.DeviceStore.
func (t *tx) DeleteDevice(ctx context.Context, userID, deviceID string) error {
	n, err := t.execN(ctx, `DELETE FROM devices WHERE device_id = ? AND user_id = ?`, deviceID, userID)
	if err != nil {
		return err
	}
	if n == 0 {
		return chat.Errorf(chat.CodeNotFound, "device %q of user %q not found", deviceID, userID)
	}
	return nil
}

// DeleteDevices implements chat.DeviceStore.
func (t *tx) DeleteDevices(ctx context.Context, userID string) (int, error) {
	n, err := t.execN(ctx, `DELETE FROM devices WHERE user_id = ?`, userID)
	return int(n), err
}

func scanSetting(sc scanner) (*chat.NotificationSetting, error) {
	var (
		n       chat.NotificationSetting
		updated int64
	)
	if err := sc.Scan(&n.UserID, &n.ChannelID, &n.Level, &updated); err != nil {
		return nil, err
	}
	at := fromMs(updated)
	n.UpdatedAt = &at
	return &n, nil
}

// PutNotificationLevel implements chat.NotificationStore.
func (t *tx) PutNotificationLevel(ctx context.Context, userID, channelID string, level chat.NotificationLevel, now time.Time) error {
	_, err := t.exec(ctx, `INSERT INTO notification_levels (user_id, channel_id, level, updated_at) VALUES (?,?,?,?)
		ON CONFLICT (user_id, channel_id) DO UPDATE SET level = excluded.level, updated_at = excluded.updated_at`,
		userID, channelID, string(level), ms(chat.NewTime(now)))
	return err
}

// DeleteNotificationLevel implements chat.NotificationStore.
func (t *tx) DeleteNotificationLevel(ctx context.Context, userID, channelID string) error {
	_, err := t.exec(ctx, `DELETE FROM notification_levels WHERE user_id = ? AND channel_id = ?`, userID, channelID)
	return err
}

// GetNotificationLevels implements chat.NotificationStore.
func (t *tx) GetNotificationLevels(ctx context.Context, userID string, channelIDs []string) ([]*chat.NotificationSetting, error) {
	if len(channelIDs) == 0 {
		return nil, nil
	}
	return list(t, ctx, scanSetting, `SELECT user_id, channel_id, level, updated_at FROM notification_levels
		WHERE user_id = ? AND channel_id IN `+inIDs, userID, jsonIDs(channelIDs))
}

// ListNotificationLevels implements chat.NotificationStore: a range of the
// primary key.
func (t *tx) ListNotificationLevels(ctx context.Context, userID, afterChannelID string, after bool, limit int) ([]*chat.NotificationSetting, error) {
	op := ">="
	if after {
		op = ">"
	}
	return list(t, ctx, scanSetting, `SELECT user_id, channel_id, level, updated_at FROM notification_levels
		WHERE user_id = ? AND channel_id `+op+` ? ORDER BY channel_id LIMIT `+limitParam,
		userID, afterChannelID, limitArg(limit))
}

// DeleteNotificationLevels implements chat.NotificationStore.
func (t *tx) DeleteNotificationLevels(ctx context.Context, userID string) error {
	_, err := t.exec(ctx, `DELETE FROM notification_levels WHERE user_id = ?`, userID)
	return err
}

package postgres

import (
	"context"
	"database/sql"
	"time"

	chat "github.com/chatengine/chat"
)

const deviceCols = `device_id, user_id, provider, token, created_at, updated_at`

// deviceLockClass is the first key of the transaction advisory locks that
// serialize the registrations of one user (the second is the hash of the
// user id).
const deviceLockClass = 0x64657673

func (t *tx) devices(ctx context.Context, tmpl string, args ...any) ([]*chat.Device, error) {
	var out []*chat.Device
	err := t.query(ctx, tmpl, args, func(r *sql.Rows) error {
		var (
			d                chat.Device
			created, updated time.Time
		)
		if err := r.Scan(&d.DeviceID, &d.UserID, &d.Provider, &d.Token, &created, &updated); err != nil {
			return err
		}
		d.CreatedAt, d.UpdatedAt = ct(created), ct(updated)
		out = append(out, &d)
		return nil
	})
	return out, err
}

// CreateDevice implements chat.DeviceStore; devices_token_key refuses a
// second device with one provider and token (CodeConflict).
func (t *tx) CreateDevice(ctx context.Context, d *chat.Device) error {
	_, err := t.exec(ctx, `INSERT INTO {s}devices (`+deviceCols+`) VALUES ($1,$2,$3,$4,$5,$6)`,
		d.DeviceID, d.UserID, d.Provider, d.Token, msTime(d.CreatedAt.Time), msTime(d.UpdatedAt.Time))
	return err
}

// GetDeviceByToken implements chat.DeviceStore (devices_token_key).
func (t *tx) GetDeviceByToken(ctx context.Context, provider, token string) (*chat.Device, error) {
	ds, err := t.devices(ctx, `SELECT `+deviceCols+` FROM {s}devices WHERE provider = $1 AND token = $2`+t.lockRows(), provider, token)
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
	n, err := t.exec(ctx, `UPDATE {s}devices SET updated_at = $2 WHERE device_id = $1`, deviceID, msTime(now))
	if err != nil {
		return err
	}
	if n == 0 {
		return chat.Errorf(chat.CodeNotFound, "device %q not found", deviceID)
	}
	return nil
}

// ListDevices implements chat.DeviceStore (devices_user_idx). In an
// Update it first takes a transaction advisory lock of the user's
// devices, so that registrations for one user run one after another.
func (t *tx) ListDevices(ctx context.Context, userID string) ([]*chat.Device, error) {
	if t.write {
		if _, err := t.exec(ctx, `SELECT pg_advisory_xact_lock($1::int4, hashtext($2))`, deviceLockClass, userID); err != nil {
			return nil, err
		}
	}
	return t.devices(ctx, `SELECT `+deviceCols+` FROM {s}devices WHERE user_id = $1 ORDER BY updated_at, device_id`, userID)
}

// DeleteDevice implements chat.DeviceStore.
func (t *tx) DeleteDevice(ctx context.Context, userID, deviceID string) error {
	n, err := t.exec(ctx, `DELETE FROM {s}devices WHERE device_id = $1 AND user_id = $2`, deviceID, userID)
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
	n, err := t.exec(ctx, `DELETE FROM {s}devices WHERE user_id = $1`, userID)
	return int(n), err
}

func (t *tx) settings(ctx context.Context, tmpl string, args ...any) ([]*chat.NotificationSetting, error) {
	var out []*chat.NotificationSetting
	err := t.query(ctx, tmpl, args, func(r *sql.Rows) error {
		var (
			n       chat.NotificationSetting
			updated time.Time
		)
		if err := r.Scan(&n.UserID, &n.ChannelID, &n.Level, &updated); err != nil {
			return err
		}
		at := ct(updated)
		n.UpdatedAt = &at
		out = append(out, &n)
		return nil
	})
	return out, err
}

// PutNotificationLevel implements chat.NotificationStore.
func (t *tx) PutNotificationLevel(ctx context.Context, userID, channelID string, level chat.NotificationLevel, now time.Time) error {
	_, err := t.exec(ctx, `INSERT INTO {s}notification_levels (user_id, channel_id, level, updated_at) VALUES ($1,$2,$3,$4)
		ON CONFLICT (user_id, channel_id) DO UPDATE SET level = EXCLUDED.level, updated_at = EXCLUDED.updated_at`,
		userID, channelID, string(level), msTime(now))
	return err
}

// DeleteNotificationLevel implements chat.NotificationStore.
func (t *tx) DeleteNotificationLevel(ctx context.Context, userID, channelID string) error {
	_, err := t.exec(ctx, `DELETE FROM {s}notification_levels WHERE user_id = $1 AND channel_id = $2`, userID, channelID)
	return err
}

// GetNotificationLevels implements chat.NotificationStore.
func (t *tx) GetNotificationLevels(ctx context.Context, userID string, channelIDs []string) ([]*chat.NotificationSetting, error) {
	if len(channelIDs) == 0 {
		return nil, nil
	}
	return t.settings(ctx, `SELECT user_id, channel_id, level, updated_at FROM {s}notification_levels
		WHERE user_id = $1 AND channel_id = ANY($2::text[])`, userID, textArray(channelIDs))
}

// ListNotificationLevels implements chat.NotificationStore: a range of the
// primary key.
func (t *tx) ListNotificationLevels(ctx context.Context, userID, afterChannelID string, after bool, limit int) ([]*chat.NotificationSetting, error) {
	return t.settings(ctx, `SELECT user_id, channel_id, level, updated_at FROM {s}notification_levels
		WHERE user_id = $1 AND (channel_id > $2 OR (NOT $3 AND channel_id = $2))
		ORDER BY channel_id LIMIT CASE WHEN $4::int < 0 THEN NULL ELSE $4::int END`,
		userID, afterChannelID, after, limitOrAll(limit))
}

// DeleteNotificationLevels implements chat.NotificationStore.
func (t *tx) DeleteNotificationLevels(ctx context.Context, userID string) error {
	_, err := t.exec(ctx, `DELETE FROM {s}notification_levels WHERE user_id = $1`, userID)
	return err
}

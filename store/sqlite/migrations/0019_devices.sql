-- 0019_devices: push devices and notification levels.
--
-- A token is unique per provider (devices_token_key): registering it again
-- finds the device. devices_user_idx gives a user's devices least recently
-- registered first, the order in which the per-user cap drops them.
-- notification_levels holds one level per user and channel, '' for the
-- user's own.
CREATE TABLE devices (
    device_id  TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    provider   TEXT NOT NULL,
    token      TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE UNIQUE INDEX devices_token_key ON devices (provider, token);
CREATE INDEX devices_user_idx ON devices (user_id, updated_at, device_id);

CREATE TABLE notification_levels (
    user_id    TEXT NOT NULL,
    channel_id TEXT NOT NULL,
    level      TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, channel_id)
) WITHOUT ROWID;

-- 0021_pushes: the push outbox.
--
-- One row per new message and device (pushes_message_device_key: at most
-- one push per pair), written in the message's transaction. Deleting a
-- device deletes its pushes (pushes_device_idx serves the cascade).
-- pushes_due_idx holds the pending pushes only, in claim order.
CREATE TABLE pushes (
    push_id         TEXT PRIMARY KEY,
    message_id      TEXT NOT NULL,
    channel_id      TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    device_id       TEXT NOT NULL REFERENCES devices (device_id) ON DELETE CASCADE,
    title           TEXT NOT NULL,
    body            TEXT NOT NULL,
    state           TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    next_attempt_at INTEGER NOT NULL,
    lease_owner     TEXT NOT NULL DEFAULT '',
    lease_until     INTEGER,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
) WITHOUT ROWID;
CREATE UNIQUE INDEX pushes_message_device_key ON pushes (message_id, device_id);
CREATE INDEX pushes_device_idx ON pushes (device_id);
CREATE INDEX pushes_due_idx ON pushes (next_attempt_at, push_id) WHERE state = 'pending';
-- pushes_finished_idx: the delivered and failed pushes, oldest first, for
-- the worker's pruning of the log.
CREATE INDEX pushes_finished_idx ON pushes (updated_at, push_id) WHERE state <> 'pending';

-- push_batches holds the push decision of each new message, one row
-- written in the message's transaction (user_ids[i] owns device_ids[i],
-- JSON arrays); a push worker expands it into pushes and deletes it.
CREATE TABLE push_batches (
    message_id TEXT PRIMARY KEY,
    channel_id TEXT NOT NULL,
    title      TEXT NOT NULL,
    body       TEXT NOT NULL,
    user_ids   TEXT NOT NULL,
    device_ids TEXT NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX push_batches_created_idx ON push_batches (created_at, message_id);

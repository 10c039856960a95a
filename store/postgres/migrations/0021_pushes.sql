-- 0021_pushes: the push outbox.
--
-- One row per new message and device (pushes_message_device_key: at most
-- one push per pair), written in the message's transaction. Deleting a
-- device deletes its pushes (pushes_device_idx serves the cascade).
-- pushes_due_idx holds the pending pushes only, in claim order.
CREATE TABLE pushes (
    push_id         text COLLATE "C" PRIMARY KEY,
    message_id      text COLLATE "C" NOT NULL,
    channel_id      text COLLATE "C" NOT NULL,
    user_id         text COLLATE "C" NOT NULL,
    device_id       text COLLATE "C" NOT NULL REFERENCES devices (device_id) ON DELETE CASCADE,
    title           text NOT NULL,
    body            text NOT NULL,
    state           text COLLATE "C" NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    last_error      text NOT NULL DEFAULT '',
    next_attempt_at timestamptz NOT NULL,
    lease_owner     text COLLATE "C" NOT NULL DEFAULT '',
    lease_until     timestamptz,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);
CREATE UNIQUE INDEX pushes_message_device_key ON pushes (message_id, device_id);
CREATE INDEX pushes_device_idx ON pushes (device_id);
CREATE INDEX pushes_due_idx ON pushes (next_attempt_at, push_id) WHERE state = 'pending';
-- pushes_finished_idx: the delivered and failed pushes, oldest first, for
-- the worker's pruning of the log.
CREATE INDEX pushes_finished_idx ON pushes (updated_at, push_id) WHERE state <> 'pending';

-- push_batches holds the push decision of each new message, one row
-- written in the message's transaction (user_ids[i] owns device_ids[i]);
-- a push worker expands it into pushes and deletes it.
CREATE TABLE push_batches (
    message_id text COLLATE "C" PRIMARY KEY,
    channel_id text COLLATE "C" NOT NULL,
    title      text NOT NULL,
    body       text NOT NULL,
    user_ids   text[] NOT NULL,
    device_ids text[] NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX push_batches_created_idx ON push_batches (created_at, message_id);

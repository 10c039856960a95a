-- 0001_init: the complete schema of the chat store.
--
-- Conventions: times are INTEGER unix milliseconds (UTC); JSON values
-- (metadata, data, tag and role arrays, hashflag, reaction counts) are TEXT
-- holding JSON, where the JSON literal null stands for a nil Go map or
-- slice; booleans are INTEGER 0/1. Text compares with the BINARY collation
-- (byte order, the order of Go strings). Every query path has an index; the
-- EXPLAIN QUERY PLAN test in plan_test.go checks the hot ones.
--
-- There are no foreign keys between the domain tables: the Service keeps
-- references consistent inside its transactions, as with every adapter. Only
-- the side tables that exist for indexing (tags, delivery attempts) reference
-- their owner.

CREATE TABLE channels (
    channel_id        TEXT PRIMARY KEY,
    type              TEXT NOT NULL,
    display_name      TEXT NOT NULL,
    is_distinct       INTEGER NOT NULL DEFAULT 0,
    metadata          TEXT NOT NULL DEFAULT 'null',
    tags              TEXT NOT NULL DEFAULT 'null',
    is_muted          INTEGER NOT NULL DEFAULT 0,
    mute_timeout      INTEGER,
    last_activity     INTEGER NOT NULL,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    is_rate_limited   INTEGER NOT NULL DEFAULT 0,
    rate_limit_window INTEGER NOT NULL DEFAULT 0,
    member_count      INTEGER NOT NULL DEFAULT 0,
    message_count     INTEGER NOT NULL DEFAULT 0,
    is_closed         INTEGER NOT NULL DEFAULT 0
);
-- QueryChannels: newest first, keyset on (created_at, channel_id).
CREATE INDEX channels_created_idx ON channels (created_at DESC, channel_id DESC);

-- One row per distinct tag of a channel, for the tags / excludeTags filters.
CREATE TABLE channel_tags (
    channel_id TEXT NOT NULL REFERENCES channels (channel_id) ON DELETE CASCADE,
    tag        TEXT NOT NULL,
    PRIMARY KEY (channel_id, tag)
) WITHOUT ROWID;
CREATE INDEX channel_tags_tag_idx ON channel_tags (tag, channel_id);

CREATE TABLE channel_users (
    channel_id   TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    membership   TEXT NOT NULL,
    is_muted     INTEGER NOT NULL DEFAULT 0,
    mute_timeout INTEGER,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (channel_id, user_id)
) WITHOUT ROWID;
-- ListMemberships and the memberOf filter of QueryChannels.
CREATE INDEX channel_users_user_idx ON channel_users (user_id, channel_id);

CREATE TABLE messages (
    message_id      TEXT NOT NULL UNIQUE,
    channel_id      TEXT NOT NULL,
    channel_segment INTEGER NOT NULL,
    user_id         TEXT NOT NULL,
    type            TEXT NOT NULL,
    data            TEXT NOT NULL DEFAULT 'null',
    tags            TEXT NOT NULL DEFAULT 'null',
    parent_id       TEXT,
    is_deleted      INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,
    edited_at       INTEGER,
    updated_at      INTEGER NOT NULL,
    children_number INTEGER NOT NULL DEFAULT 0,
    flag_count      INTEGER NOT NULL DEFAULT 0,
    hashflag        TEXT NOT NULL DEFAULT '{"bits":0,"hashes":0,"hash":null}',
    reactions       TEXT NOT NULL DEFAULT 'null',
    reactions_count INTEGER NOT NULL DEFAULT 0
);
-- Message pages of a channel in segment order; also makes segments unique.
CREATE UNIQUE INDEX messages_segment_idx ON messages (channel_id, channel_segment);
-- Comments of a message in segment order.
CREATE INDEX messages_parent_idx ON messages (parent_id, channel_segment) WHERE parent_id IS NOT NULL;
-- SoftDeleteMessages (one author in a channel) and SoftDeleteUserMessages.
CREATE INDEX messages_user_idx ON messages (user_id, channel_id);

-- One row per distinct tag of a message, for the tags / excludeTags filters.
CREATE TABLE message_tags (
    message_id TEXT NOT NULL REFERENCES messages (message_id) ON DELETE CASCADE,
    tag        TEXT NOT NULL,
    PRIMARY KEY (message_id, tag)
) WITHOUT ROWID;
CREATE INDEX message_tags_tag_idx ON message_tags (tag, message_id);

CREATE TABLE users (
    user_id       TEXT PRIMARY KEY,
    display_name  TEXT NOT NULL,
    -- Lowercased (Unicode, by the adapter) displayName and userId, for the
    -- case-insensitive prefix search of QueryUsers (search >= lo AND < hi).
    search_name   TEXT NOT NULL,
    search_id     TEXT NOT NULL,
    roles         TEXT NOT NULL DEFAULT 'null',
    metadata      TEXT NOT NULL DEFAULT 'null',
    flag_count    INTEGER NOT NULL DEFAULT 0,
    hashflag      TEXT NOT NULL DEFAULT '{"bits":0,"hashes":0,"hash":null}',
    is_global_ban INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX users_search_name_idx ON users (search_name, user_id);
CREATE INDEX users_search_id_idx ON users (search_id, user_id);
CREATE INDEX users_flagged_idx ON users (user_id) WHERE flag_count > 0;

CREATE TABLE roles (
    role_id     TEXT PRIMARY KEY,
    permissions TEXT NOT NULL DEFAULT 'null',
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE rules (
    list                TEXT NOT NULL,
    rule_id             TEXT NOT NULL,
    is_match_exact_word INTEGER NOT NULL DEFAULT 0,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    PRIMARY KEY (list, rule_id)
) WITHOUT ROWID;

-- Change counters read by RulesVersion and WebhooksVersion. Bumped in the
-- writing transaction, so a reader never sees a new version with old rows.
CREATE TABLE versions (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO versions (name, value) VALUES ('rules', 1), ('webhooks', 1);

CREATE TABLE reactions (
    reaction_id TEXT PRIMARY KEY,
    message_id  TEXT NOT NULL,
    user_id     TEXT NOT NULL,
    name        TEXT NOT NULL,
    ref_type    TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    UNIQUE (user_id, message_id, name)
);
-- Reactors of one reaction name, newest first.
CREATE INDEX reactions_message_name_idx ON reactions (message_id, name, created_at DESC, reaction_id DESC);
-- Reactors of every name, newest first.
CREATE INDEX reactions_message_idx ON reactions (message_id, created_at DESC, reaction_id DESC);

-- Per message and reaction name counts, for MostReacted. channel_id and
-- created_at are copied from the message so that one index gives the order.
CREATE TABLE reaction_counts (
    message_id TEXT NOT NULL,
    name       TEXT NOT NULL,
    channel_id TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    count      INTEGER NOT NULL,
    PRIMARY KEY (message_id, name)
) WITHOUT ROWID;
CREATE INDEX reaction_counts_top_idx ON reaction_counts (name, count DESC, created_at DESC, message_id DESC);
CREATE INDEX reaction_counts_channel_top_idx ON reaction_counts (channel_id, name, count DESC, created_at DESC, message_id DESC);

CREATE TABLE flags (
    kind       TEXT NOT NULL,
    target_id  TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (kind, target_id, user_id)
) WITHOUT ROWID;

CREATE TABLE admins (
    name       TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    token_hash BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);
CREATE UNIQUE INDEX admins_token_idx ON admins (token_hash);

CREATE TABLE webhooks (
    webhook_id      TEXT PRIMARY KEY,
    url             TEXT NOT NULL,
    events          TEXT NOT NULL DEFAULT 'null',
    secret          TEXT NOT NULL,
    is_disabled     INTEGER NOT NULL DEFAULT 0,
    disabled_reason TEXT NOT NULL DEFAULT '',
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);

CREATE TABLE deliveries (
    request_id      TEXT NOT NULL UNIQUE,
    webhook_id      TEXT NOT NULL,
    event           TEXT NOT NULL,
    body            BLOB NOT NULL,
    state           TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    lease_owner     TEXT NOT NULL DEFAULT '',
    lease_until     INTEGER,
    last_error      TEXT NOT NULL DEFAULT '',
    last_status     INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);
-- ClaimDeliveries and NextDeliveryAt.
CREATE INDEX deliveries_due_idx ON deliveries (state, next_attempt_at, request_id);
-- ListDeliveries: a webhook's deliveries newest first.
CREATE INDEX deliveries_webhook_idx ON deliveries (webhook_id, created_at DESC, request_id DESC);

CREATE TABLE delivery_attempts (
    id          INTEGER PRIMARY KEY,
    request_id  TEXT NOT NULL REFERENCES deliveries (request_id) ON DELETE CASCADE,
    webhook_id  TEXT NOT NULL,
    event       TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    status_code INTEGER NOT NULL,
    latency_ms  INTEGER NOT NULL,
    error       TEXT NOT NULL DEFAULT '',
    at          INTEGER NOT NULL
);
CREATE INDEX delivery_attempts_request_idx ON delivery_attempts (request_id, id);

CREATE TABLE blobs (
    message_id   TEXT NOT NULL,
    name         TEXT NOT NULL,
    channel_id   TEXT NOT NULL,
    content_type TEXT NOT NULL,
    data         BLOB NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (message_id, name)
);
CREATE INDEX blobs_channel_idx ON blobs (channel_id);

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

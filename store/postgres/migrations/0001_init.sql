-- 0001_init: the complete schema of the chat store.
--
-- Migrate runs this file with search_path set to the store's schema, so the
-- names below are unqualified. Identifiers that are compared or ordered
-- (ids, search keys) use COLLATE "C": byte order, the same order as Go
-- strings, independent of the database's locale. With a "C" column a plain
-- btree index serves prefix ranges (col >= $lo AND col < $hi), so no
-- text_pattern_ops index is needed.
--
-- There are no foreign keys: the Service keeps references consistent inside
-- its transactions, as with every other adapter.

CREATE TABLE channels (
    channel_id        text COLLATE "C" PRIMARY KEY,
    type              text NOT NULL,
    display_name      text NOT NULL,
    is_distinct       boolean NOT NULL DEFAULT false,
    metadata          json,
    tags              text[] COLLATE "C" NOT NULL DEFAULT '{}',
    mute_timeout      timestamptz,
    last_activity     timestamptz NOT NULL,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    is_rate_limited   boolean NOT NULL DEFAULT false,
    rate_limit_window integer NOT NULL DEFAULT 0,
    member_count      integer NOT NULL DEFAULT 0,
    message_count     bigint NOT NULL DEFAULT 0,
    is_closed         boolean NOT NULL DEFAULT false
);
-- QueryChannels: newest first, keyset on (created_at, channel_id).
CREATE INDEX channels_created_idx ON channels (created_at DESC, channel_id DESC);
-- QueryChannels: tags / excludeTags (tags && $1).
CREATE INDEX channels_tags_idx ON channels USING gin (tags);

CREATE TABLE channel_users (
    channel_id   text COLLATE "C" NOT NULL,
    user_id      text COLLATE "C" NOT NULL,
    membership   text NOT NULL,
    mute_timeout timestamptz,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (channel_id, user_id)
);
-- ListMemberships and the memberOf filter of QueryChannels.
CREATE INDEX channel_users_user_idx ON channel_users (user_id, channel_id);

CREATE TABLE messages (
    message_id      text COLLATE "C" PRIMARY KEY,
    channel_id      text COLLATE "C" NOT NULL,
    user_id         text COLLATE "C" NOT NULL,
    type            text NOT NULL,
    data            json,
    tags            text[] COLLATE "C" NOT NULL DEFAULT '{}',
    parent_id       text COLLATE "C",
    is_deleted      boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL,
    edited_at       timestamptz,
    updated_at      timestamptz NOT NULL,
    channel_segment bigint NOT NULL,
    children_number integer NOT NULL DEFAULT 0,
    flag_count      integer NOT NULL DEFAULT 0,
    hashflag        json,
    reactions       jsonb,
    reactions_count integer NOT NULL DEFAULT 0,
    CONSTRAINT messages_segment_key UNIQUE (channel_id, channel_segment)
);
-- Comments of a message in segment order.
CREATE INDEX messages_parent_idx ON messages (parent_id, channel_segment) WHERE parent_id IS NOT NULL;
-- SoftDeleteMessages (one author in a channel) and SoftDeleteUserMessages.
CREATE INDEX messages_user_idx ON messages (user_id, channel_id);

CREATE TABLE users (
    user_id       text COLLATE "C" PRIMARY KEY,
    display_name  text NOT NULL,
    -- Lowercased (Unicode, by the adapter) displayName and userId, for the
    -- case-insensitive prefix search of QueryUsers.
    search_name   text COLLATE "C" NOT NULL,
    search_id     text COLLATE "C" NOT NULL,
    roles         text[] COLLATE "C",
    metadata      json,
    flag_count    integer NOT NULL DEFAULT 0,
    hashflag      json,
    is_global_ban boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL
);
CREATE INDEX users_search_name_idx ON users (search_name, user_id);
CREATE INDEX users_search_id_idx ON users (search_id, user_id);
CREATE INDEX users_flagged_idx ON users (user_id) WHERE flag_count > 0;

CREATE TABLE roles (
    role_id     text COLLATE "C" PRIMARY KEY,
    permissions text[],
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL
);

CREATE TABLE rules (
    list                text NOT NULL,
    rule_id             text COLLATE "C" NOT NULL,
    is_match_exact_word boolean NOT NULL DEFAULT false,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    PRIMARY KEY (list, rule_id)
);

-- Change counters read by RulesVersion and WebhooksVersion. Bumped in the
-- writing transaction, so a reader never sees a new version with old rows.
CREATE TABLE versions (
    name  text PRIMARY KEY,
    value bigint NOT NULL
);
INSERT INTO versions (name, value) VALUES ('rules', 1), ('webhooks', 1);

CREATE TABLE reactions (
    reaction_id  text COLLATE "C" PRIMARY KEY,
    message_id   text COLLATE "C" NOT NULL,
    user_id      text COLLATE "C" NOT NULL,
    name         text COLLATE "C" NOT NULL,
    ref_type     text NOT NULL,
    created_at   timestamptz NOT NULL,
    CONSTRAINT reactions_user_message_name_key UNIQUE (user_id, message_id, name)
);
-- Reactors of one reaction name, newest first.
CREATE INDEX reactions_message_name_idx ON reactions (message_id, name, created_at DESC, reaction_id DESC);
-- Reactors of every name, newest first.
CREATE INDEX reactions_message_idx ON reactions (message_id, created_at DESC, reaction_id DESC);

-- Per message and reaction name counts, for MostReacted. channel_id and
-- created_at are copied from the message so one index gives the order.
CREATE TABLE reaction_counts (
    message_id  text COLLATE "C" NOT NULL,
    name        text COLLATE "C" NOT NULL,
    channel_id  text COLLATE "C" NOT NULL,
    created_at  timestamptz NOT NULL,
    count       integer NOT NULL,
    PRIMARY KEY (message_id, name)
);
CREATE INDEX reaction_counts_top_idx ON reaction_counts (name, count DESC, created_at DESC, message_id DESC) WHERE count > 0;
CREATE INDEX reaction_counts_channel_top_idx ON reaction_counts (channel_id, name, count DESC, created_at DESC, message_id DESC) WHERE count > 0;

CREATE TABLE flags (
    kind       text NOT NULL,
    target_id  text COLLATE "C" NOT NULL,
    user_id    text COLLATE "C" NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (kind, target_id, user_id)
);

CREATE TABLE admins (
    name       text COLLATE "C" PRIMARY KEY,
    user_id    text NOT NULL,
    token_hash bytea NOT NULL,
    created_at timestamptz NOT NULL,
    revoked_at timestamptz
);
CREATE UNIQUE INDEX admins_token_idx ON admins (token_hash);

CREATE TABLE webhooks (
    webhook_id      text COLLATE "C" PRIMARY KEY,
    url             text NOT NULL,
    events          text[],
    secret          text NOT NULL,
    is_disabled     boolean NOT NULL DEFAULT false,
    disabled_reason text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);

CREATE TABLE deliveries (
    request_id      text COLLATE "C" PRIMARY KEY,
    webhook_id      text COLLATE "C" NOT NULL,
    event           text NOT NULL,
    body            bytea NOT NULL,
    state           text NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    lease_owner     text NOT NULL DEFAULT '',
    lease_until     timestamptz,
    last_error      text NOT NULL DEFAULT '',
    last_status     integer NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);
-- ClaimDeliveries and NextDeliveryAt: only pending rows are indexed.
CREATE INDEX deliveries_pending_idx ON deliveries (next_attempt_at, request_id) WHERE state = 'pending';
-- ListDeliveries: a webhook's deliveries newest first.
CREATE INDEX deliveries_webhook_idx ON deliveries (webhook_id, created_at DESC, request_id DESC);

CREATE TABLE delivery_attempts (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    request_id  text COLLATE "C" NOT NULL,
    webhook_id  text NOT NULL,
    event       text NOT NULL,
    attempt     integer NOT NULL,
    status_code integer NOT NULL,
    latency_ms  bigint NOT NULL,
    error       text NOT NULL DEFAULT '',
    at          timestamptz NOT NULL
);
CREATE INDEX delivery_attempts_request_idx ON delivery_attempts (request_id, id);

CREATE TABLE blobs (
    message_id   text COLLATE "C" NOT NULL,
    name         text COLLATE "C" NOT NULL,
    channel_id   text COLLATE "C" NOT NULL,
    content_type text NOT NULL,
    data         bytea NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (message_id, name)
);
CREATE INDEX blobs_channel_idx ON blobs (channel_id);

CREATE TABLE meta (
    key   text COLLATE "C" PRIMARY KEY,
    value text NOT NULL
);

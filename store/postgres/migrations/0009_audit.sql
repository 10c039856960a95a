-- 0009_audit: the audit log, and the index a purge of one author's
-- messages reads.
--
-- actor_id and channel_id are NULL when there is none. Each filter of
-- QueryAudit has an index that also gives the newest-first order, so a
-- page reads about as many index entries as it returns.
CREATE TABLE audit (
    audit_id    text COLLATE "C" PRIMARY KEY,
    actor_id    text COLLATE "C",
    action      text COLLATE "C" NOT NULL,
    target_type text NOT NULL,
    target_id   text COLLATE "C" NOT NULL,
    channel_id  text COLLATE "C",
    details     json NOT NULL,
    created_at  timestamptz NOT NULL
);
CREATE INDEX audit_created_idx ON audit (created_at DESC, audit_id DESC);
CREATE INDEX audit_actor_idx ON audit (actor_id, created_at DESC, audit_id DESC) WHERE actor_id IS NOT NULL;
CREATE INDEX audit_target_idx ON audit (target_id, created_at DESC, audit_id DESC);
CREATE INDEX audit_channel_idx ON audit (channel_id, created_at DESC, audit_id DESC) WHERE channel_id IS NOT NULL;
CREATE INDEX audit_action_idx ON audit (action, created_at DESC, audit_id DESC);

-- SoftDeleteBatch: one author's messages in (created_at, message_id)
-- order, so each batch of a purge starts where the last one ended. It
-- also serves SoftDeleteUserMessages, and messages_author_idx (channel_id,
-- user_id, channel_segment) serves SoftDeleteMessages of one author, so
-- messages_user_idx (user_id, channel_id) has no reader left: dropped, one
-- index less to write per message.
CREATE INDEX messages_user_created_idx ON messages (user_id, created_at, message_id);
DROP INDEX messages_user_idx;

-- 0002_row_versions: optimistic concurrency for read-modify-write.
--
-- Update transactions run at READ COMMITTED. A transaction that read a
-- row and then replaces it (UpdateChannel, UpdateMessage, UpdateUser,
-- UpdateWebhook, PutChannelUser, DeleteChannelUser) only writes when the
-- row's version is still the one it read; otherwise the whole transaction
-- is run again. Writes of mutable fields bump the version; pure counter
-- updates (memberCount, childrenNumber, reactions) do not, because the
-- replacing writes never touch counters.
ALTER TABLE channels ADD COLUMN version bigint NOT NULL DEFAULT 1;
ALTER TABLE channel_users ADD COLUMN version bigint NOT NULL DEFAULT 1;
ALTER TABLE messages ADD COLUMN version bigint NOT NULL DEFAULT 1;
ALTER TABLE users ADD COLUMN version bigint NOT NULL DEFAULT 1;
ALTER TABLE webhooks ADD COLUMN version bigint NOT NULL DEFAULT 1;

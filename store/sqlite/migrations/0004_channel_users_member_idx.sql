-- 0004_channel_users_member_idx: a user's channels newest first, read by
-- one index walk however many channels the user is in.
--
-- The channel order is (created_at DESC, channel_id DESC) of channels. A
-- channel's created_at never changes after CreateChannel, so each relation
-- carries a copy of it (channel_created_at), written by PutChannelUser and,
-- for relations written before their channel, by CreateChannel, in the same
-- transaction. NULL while the channel does not exist.
ALTER TABLE channel_users ADD COLUMN channel_created_at INTEGER;
UPDATE channel_users SET channel_created_at =
    (SELECT c.created_at FROM channels c WHERE c.channel_id = channel_users.channel_id);
-- QueryChannels with memberOf: the user's member relations in channel order.
CREATE INDEX channel_users_member_idx ON channel_users (user_id, channel_created_at DESC, channel_id DESC)
    WHERE membership = 'member';

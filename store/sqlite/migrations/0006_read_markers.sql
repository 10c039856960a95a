-- 0006_read_markers: a user's read marker in a channel and the indexes that
-- count its unread messages without reading them.
--
-- unreadCount = the channel's message_count - read_to_segment (every
-- segment up to message_count is one message), less the user's own
-- messages above the marker (messages_author_idx) and the deleted messages
-- of others above it (messages_deleted_idx, small: deleted messages only).
ALTER TABLE channel_users ADD COLUMN read_to_segment INTEGER NOT NULL DEFAULT 0;
CREATE INDEX messages_deleted_idx ON messages (channel_id, channel_segment, user_id) WHERE is_deleted = 1;

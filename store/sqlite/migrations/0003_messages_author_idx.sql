-- 0003_messages_author_idx: the messages of one author in a channel,
-- newest first. Slow mode (a channel's rateLimitWindow) reads the
-- author's last message there.
CREATE INDEX messages_author_idx ON messages (channel_id, user_id, channel_segment);

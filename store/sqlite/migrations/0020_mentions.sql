-- 0020_mentions: the users a message mentions.
--
-- messages.mentioned_user_ids is the message's mentionedUserIds (a JSON
-- array). message_mentions holds one row per mentioned user, kept in step
-- by CreateMessage and UpdateMessage: message_mentions_unread_idx answers
-- the unread mentions of a user in a channel above its read marker,
-- message_mentions_recent_idx a user's mentions newest first.
ALTER TABLE messages ADD COLUMN mentioned_user_ids TEXT NOT NULL DEFAULT '[]';

CREATE TABLE message_mentions (
    user_id         TEXT NOT NULL,
    message_id      TEXT NOT NULL REFERENCES messages (message_id) ON DELETE CASCADE,
    channel_id      TEXT NOT NULL,
    channel_segment INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (user_id, message_id)
) WITHOUT ROWID;
CREATE INDEX message_mentions_unread_idx ON message_mentions (user_id, channel_id, channel_segment);
CREATE INDEX message_mentions_recent_idx ON message_mentions (user_id, created_at, message_id);
CREATE INDEX message_mentions_message_idx ON message_mentions (message_id);

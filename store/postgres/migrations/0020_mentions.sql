-- 0020_mentions: the users a message mentions.
--
-- messages.mentioned_user_ids is the message's mentionedUserIds.
-- message_mentions holds one row per mentioned user, kept in step by
-- CreateMessage, AppendMessage and UpdateMessage:
-- message_mentions_unread_idx answers the unread mentions of a user in a
-- channel above its read marker, message_mentions_recent_idx a user's
-- mentions newest first.
ALTER TABLE messages ADD COLUMN mentioned_user_ids text[] COLLATE "C" NOT NULL DEFAULT '{}';

CREATE TABLE message_mentions (
    user_id         text COLLATE "C" NOT NULL,
    message_id      text COLLATE "C" NOT NULL REFERENCES messages (message_id) ON DELETE CASCADE,
    channel_id      text COLLATE "C" NOT NULL,
    channel_segment bigint NOT NULL,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (user_id, message_id)
);
CREATE INDEX message_mentions_unread_idx ON message_mentions (user_id, channel_id, channel_segment);
CREATE INDEX message_mentions_recent_idx ON message_mentions (user_id, created_at, message_id);
CREATE INDEX message_mentions_message_idx ON message_mentions (message_id);

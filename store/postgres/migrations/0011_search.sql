-- 0011_search: the word indexes of user and message search.
--
-- user_keys: per user, the folded userId and, for each word of the
-- displayName, the folded rest of the name from that word (chat.IDKey,
-- chat.NameKeys). A user search is a prefix range on key (byte order,
-- COLLATE "C").
CREATE TABLE user_keys (
    key     text COLLATE "C" NOT NULL,
    user_id text COLLATE "C" NOT NULL,
    PRIMARY KEY (key, user_id)
);
CREATE INDEX user_keys_user_idx ON user_keys (user_id);

-- message_words: one row per distinct search word (chat.MessageWords) of
-- each live message. The primary key walks one word's messages newest
-- first (searches of every channel); message_words_message_idx checks the other words of a candidate
-- and drops a message's rows on edit.
CREATE TABLE message_words (
    word       text COLLATE "C" NOT NULL,
    created_at timestamptz NOT NULL,
    message_id text COLLATE "C" NOT NULL,
    channel_id text COLLATE "C" NOT NULL,
    user_id    text COLLATE "C" NOT NULL,
    PRIMARY KEY (word, created_at, message_id)
);
CREATE INDEX message_words_message_idx ON message_words (message_id, word);
-- A search in one channel walks that channel's rows of a word newest
-- first, whatever the word's count in other channels.
CREATE INDEX message_words_channel_idx ON message_words (channel_id, word, created_at, message_id);

-- A deleted message is never found, whichever statement deleted it.
CREATE FUNCTION message_words_on_delete() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    DELETE FROM message_words WHERE message_id = NEW.message_id;
    RETURN NULL;
END $$;
CREATE TRIGGER message_words_on_delete AFTER UPDATE OF is_deleted ON messages
FOR EACH ROW WHEN (NEW.is_deleted AND NOT OLD.is_deleted)
EXECUTE FUNCTION message_words_on_delete();

-- Existing users and messages are indexed by the store after the
-- migrations (the words come from Go code): this row, present only when
-- there is something to index, is its cursor.
INSERT INTO meta (key, value) SELECT 'search.backfill', ''
WHERE EXISTS (SELECT 1 FROM users) OR EXISTS (SELECT 1 FROM messages)
ON CONFLICT (key) DO NOTHING;

-- The user search reads user_keys now; the old prefix indexes only cost
-- writes. (The search_name and search_id columns stay, still written.)
DROP INDEX users_search_name_idx;
DROP INDEX users_search_id_idx;

-- 0016_message_search_index: the message search index as a GIN index of
-- one column.
--
-- The word table of *_search.sql (three B-trees with the message's ids in
-- every row, written in the transaction of every message) is replaced by
-- messages.search, the message's search words (chat.MessageWords) as a
-- tsvector of those exact lexemes (array_to_tsvector: no parser, no
-- positions), NULL for a message without words. GIN keeps new entries in
-- its pending list and moves them into the index in batches (fastupdate),
-- so a message adds one short pending-list record to the write.
-- messages_channel_created_idx walks one channel newest first in the
-- search order, for searches of a word common in that channel.
DROP TRIGGER message_words_on_delete ON messages;
DROP FUNCTION message_words_on_delete();
DROP TABLE message_words;

ALTER TABLE messages ADD COLUMN search tsvector;
CREATE INDEX messages_search_idx ON messages USING gin (search) WHERE search IS NOT NULL;
CREATE INDEX messages_channel_created_idx ON messages (channel_id, created_at, message_id);

-- A deleted message is never found, whichever statement deleted it, and
-- leaves the index.
CREATE FUNCTION messages_search_on_delete() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    NEW.search := NULL;
    RETURN NEW;
END $$;
CREATE TRIGGER messages_search_on_delete BEFORE UPDATE OF is_deleted ON messages
FOR EACH ROW WHEN (NEW.is_deleted AND NOT OLD.is_deleted)
EXECUTE FUNCTION messages_search_on_delete();

-- Existing messages are indexed by the store after the migrations (the
-- words come from Go code): the backfill cursor row goes back to the
-- start of its message part ("m"), unless it is still on users.
INSERT INTO meta (key, value) SELECT 'search.backfill', 'm'
WHERE EXISTS (SELECT 1 FROM messages)
ON CONFLICT (key) DO UPDATE SET value = CASE
    WHEN meta.value = '' OR meta.value LIKE 'u%' THEN meta.value ELSE 'm' END;

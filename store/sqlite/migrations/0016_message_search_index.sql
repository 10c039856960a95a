-- 0016_message_search_index: the message search index, one narrow tree
-- written behind the commit.
--
-- The word tables of *_search.sql (three trees with the message's ids in
-- every row, written in the transaction of every message) are replaced.
-- search_vocab numbers the distinct words; search_postings holds one row
-- per distinct word (chat.MessageWords) of each indexed message, keyed by
-- the word's number, then createdAt and the message's rowid, so a word's
-- messages are one range, newest first. Scope, author and deletion are
-- read from messages.
--
-- New messages are indexed by Store.IndexSearch, in batches, after the
-- commit: the meta row 'search.indexed' holds the rowid of the last
-- message indexed. An edit of an indexed message replaces its words in the
-- edit's transaction.
DROP TRIGGER message_words_on_delete;
DROP TABLE message_words;
-- The search backfill keeps only its user part (user_keys).
DELETE FROM meta WHERE key = 'search.backfill' AND value LIKE 'm%';

CREATE TABLE search_vocab (
    id   INTEGER PRIMARY KEY,
    word TEXT NOT NULL UNIQUE
);

CREATE TABLE search_postings (
    word_id    INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    msg        INTEGER NOT NULL,
    PRIMARY KEY (word_id, created_at, msg)
) WITHOUT ROWID;

-- Every message stored so far is indexed by the indexer from rowid 0.
INSERT INTO meta (key, value) VALUES ('search.indexed', '0')
ON CONFLICT (key) DO UPDATE SET value = '0';

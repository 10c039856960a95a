-- 0026_search_docs: the message search index in rows of several messages.
--
-- search_postings (*_message_search_index.sql) held one row per word of
-- each indexed message: an indexer batch of 100 messages of fifteen words
-- wrote 1,500 rows, one B-tree insert each, while it held the writer.
-- search_docs holds, per word and per 16 ms of createdAt (the bucket,
-- created_at >> 4), the rowids of the messages of one indexer batch that
-- hold the word, as a JSON array (NULL when the row holds one message,
-- whose rowid is first): a batch writes one row per word and
-- bucket it touches (about three rows per word for a batch of 100 messages
-- posted over 30 ms). Rows are keyed by the word's number, the bucket and
-- the first rowid of the row, so a word's messages are read bucket by
-- bucket, newest first, and whether a message holds a word is one lookup
-- of the rows of its bucket. n is the count of the row's messages. Scope, author,
-- deletion and the exact order within a bucket are read from messages.
CREATE TABLE search_docs (
    word_id INTEGER NOT NULL,
    bucket  INTEGER NOT NULL,
    first   INTEGER NOT NULL,
    n       INTEGER NOT NULL,
    msgs    TEXT,
    PRIMARY KEY (word_id, bucket, first)
) WITHOUT ROWID;

-- What is indexed stays indexed: the postings, grouped.
INSERT INTO search_docs (word_id, bucket, first, n, msgs)
SELECT word_id, created_at >> 4, min(msg), count(*), CASE WHEN count(*) > 1 THEN json_group_array(msg) END
FROM search_postings GROUP BY word_id, created_at >> 4;

DROP TABLE search_postings;

-- 0013_channel_search: the keys of channel search.
--
-- channel_keys: per channel, the folded channelId and, for each word of
-- the displayName, the folded rest of the name from that word
-- (chat.ChannelKeys). A channel search is a prefix range on key (byte
-- order, COLLATE "C"); the channel's create and update transactions
-- write its rows.
CREATE TABLE channel_keys (
    key        text COLLATE "C" NOT NULL,
    channel_id text COLLATE "C" NOT NULL,
    PRIMARY KEY (key, channel_id)
);
CREATE INDEX channel_keys_channel_idx ON channel_keys (channel_id);

-- Existing channels are indexed by the store after the migrations (the
-- keys come from Go code): this row, present only when there is something
-- to index, is its cursor.
INSERT INTO meta (key, value) SELECT 'channelsearch.backfill', ''
WHERE EXISTS (SELECT 1 FROM channels)
ON CONFLICT (key) DO NOTHING;

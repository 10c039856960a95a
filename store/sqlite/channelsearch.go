package sqlite

import (
	"context"

	chat "github.com/chatengine/chat"
)

// writeChannelKeys replaces the search keys of a channel
// (chat.ChannelKeys) in channel_keys.
func (t *tx) writeChannelKeys(ctx context.Context, c *chat.Channel, replace bool) error {
	if replace {
		if _, err := t.exec(ctx, "DELETE FROM channel_keys WHERE channel_id = ?", c.ChannelID); err != nil {
			return err
		}
	}
	_, err := t.exec(ctx, "INSERT OR IGNORE INTO channel_keys (key, channel_id) SELECT value, ? FROM json_each(?)",
		c.ChannelID, jsonIDs(chat.ChannelKeys(c)))
	return err
}

// backfillChannelSearch indexes the channels stored before migration
// *_channel_search.sql, resuming from the last channel id done, kept in
// the meta row channelsearch.backfill (see backfill).
func (s *Store) backfillChannelSearch(ctx context.Context) error {
	return s.backfill(ctx, "channelsearch.backfill", func(t *tx, ctx context.Context, cur string) (string, error) {
		chs, err := list(t, ctx, scanChannel, "SELECT "+channelCols+" FROM channels c WHERE c.channel_id > ? ORDER BY c.channel_id LIMIT "+limitParam,
			cur, backfillBatch)
		if err != nil {
			return "", err
		}
		for _, c := range chs {
			if err := t.writeChannelKeys(ctx, c, true); err != nil {
				return "", err
			}
		}
		if len(chs) < backfillBatch {
			return "", nil
		}
		return chs[len(chs)-1].ChannelID, nil
	})
}

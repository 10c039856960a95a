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
// *_channel_search.sql, a batch per transaction, resuming from the
// cursor (the last channel id done) in the meta row
// channelsearch.backfill and deleting the row when done. Channels
// written meanwhile index themselves.
func (s *Store) backfillChannelSearch(ctx context.Context) error {
	pending := false
	if err := s.View(ctx, func(tx chat.Tx) error {
		_, err := tx.GetMeta(ctx, "channelsearch.backfill")
		pending = err == nil
		if chat.ErrorCode(err) == chat.CodeNotFound {
			return nil
		}
		return err
	}); err != nil || !pending {
		return err
	}
	for {
		done := false
		err := s.Update(ctx, func(ctx2 chat.Tx) error {
			t := ctx2.(*tx)
			var cur string
			if err := t.row(ctx, "SELECT value FROM meta WHERE key = 'channelsearch.backfill'", nil, &cur); err != nil {
				if chat.ErrorCode(err) == chat.CodeNotFound {
					done = true
					return nil
				}
				return err
			}
			chs, err := list(t, ctx, scanChannel, "SELECT "+channelCols+" FROM channels c WHERE c.channel_id > ? ORDER BY c.channel_id LIMIT ?",
				cur, backfillBatch)
			if err != nil {
				return err
			}
			for _, c := range chs {
				if err := t.writeChannelKeys(ctx, c, true); err != nil {
					return err
				}
			}
			if len(chs) < backfillBatch {
				done = true
				_, err = t.exec(ctx, "DELETE FROM meta WHERE key = 'channelsearch.backfill'")
				return err
			}
			_, err = t.exec(ctx, "UPDATE meta SET value = ? WHERE key = 'channelsearch.backfill'", chs[len(chs)-1].ChannelID)
			return err
		})
		if err != nil || done {
			return err
		}
	}
}

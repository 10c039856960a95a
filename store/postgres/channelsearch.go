package postgres

import (
	"context"

	chat "github.com/chatengine/chat"
)

// writeChannelKeys makes the rows of channel_keys of c its search keys
// (chat.ChannelKeys): the rows of other keys are deleted, the missing
// ones inserted, so an update that keeps the displayName writes nothing.
func (t *tx) writeChannelKeys(ctx context.Context, c *chat.Channel) error {
	keys := textArray(chat.ChannelKeys(c))
	if _, err := t.exec(ctx, `DELETE FROM {s}channel_keys WHERE channel_id = $1 AND NOT (key = ANY($2::text[]))`,
		c.ChannelID, keys); err != nil {
		return err
	}
	_, err := t.exec(ctx, `INSERT INTO {s}channel_keys (key, channel_id)
		SELECT k, $1 FROM unnest($2::text[]) AS x(k) ON CONFLICT DO NOTHING`, c.ChannelID, keys)
	return err
}

// backfillChannelSearch indexes the channels stored before migration
// *_channel_search.sql, a batch per transaction, resuming from the cursor
// (the last channel id done) in the meta row channelsearch.backfill
// (locked, so processes starting together take turns) and deleting the
// row when done. Channels written meanwhile index themselves.
func (s *Store) backfillChannelSearch(ctx context.Context) error {
	for {
		done := false
		err := s.Update(ctx, func(ctx2 chat.Tx) error {
			t := ctx2.(*tx)
			var cur string
			err := t.queryRow(ctx, `SELECT value FROM {s}meta WHERE key = 'channelsearch.backfill' FOR UPDATE`, nil, &cur)
			if chat.ErrorCode(err) == chat.CodeNotFound {
				done = true
				return nil
			}
			if err != nil {
				return err
			}
			chs, err := t.channels(ctx, `SELECT `+channelCols+` FROM {s}channels WHERE channel_id > $1
				ORDER BY channel_id LIMIT $2 FOR UPDATE`, cur, backfillBatch)
			if err != nil {
				return err
			}
			for _, c := range chs {
				if err := t.writeChannelKeys(ctx, c); err != nil {
					return err
				}
			}
			if len(chs) < backfillBatch {
				done = true
				_, err = t.exec(ctx, `DELETE FROM {s}meta WHERE key = 'channelsearch.backfill'`)
				return err
			}
			_, err = t.exec(ctx, `UPDATE {s}meta SET value = $1 WHERE key = 'channelsearch.backfill'`, chs[len(chs)-1].ChannelID)
			return err
		})
		if err != nil || done {
			return err
		}
	}
}

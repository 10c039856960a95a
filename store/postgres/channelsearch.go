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
// *_channel_search.sql, resuming from the last channel id done, kept in
// the meta row channelsearch.backfill (see backfill).
func (s *Store) backfillChannelSearch(ctx context.Context) error {
	return s.backfill(ctx, "channelsearch.backfill", func(t *tx, ctx context.Context, cur string) (string, error) {
		chs, err := t.channels(ctx, `SELECT `+channelCols+` FROM {s}channels WHERE channel_id > $1
			ORDER BY channel_id LIMIT $2 FOR UPDATE`, cur, backfillBatch)
		if err != nil {
			return "", err
		}
		for _, c := range chs {
			if err := t.writeChannelKeys(ctx, c); err != nil {
				return "", err
			}
		}
		if len(chs) < backfillBatch {
			return "", nil
		}
		return chs[len(chs)-1].ChannelID, nil
	})
}

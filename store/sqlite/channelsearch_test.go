package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestChannelSearchBackfill: channels stored before the channel search
// index existed (simulated by emptying it and setting the cursor row the
// migration sets) are indexed when the store opens, over several batches.
func TestChannelSearchBackfill(t *testing.T) {
	t.Parallel()
	requireCgo(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "chat.db")
	s, err := Open(ctx, path, nil)
	require.NoError(t, err)
	n := backfillBatch*2 + 7
	require.NoError(t, s.Update(ctx, func(ctx2 chat.Tx) error {
		tx := ctx2.(*tx)
		for i := 0; i < n; i++ {
			c := testChannel(fmt.Sprintf("c%04d", i))
			c.DisplayName = fmt.Sprintf("Zebra Keepers %d", i)
			if err := tx.CreateChannel(ctx, c); err != nil {
				return err
			}
		}
		for _, q := range []string{"DELETE FROM channel_keys",
			"INSERT INTO meta (key, value) VALUES ('channelsearch.backfill', '')"} {
			if _, err := tx.exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	}))
	count := func(s *Store, search string) int {
		var found []*chat.Channel
		require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
			found, err = tx.QueryChannels(ctx, chat.ChannelFilter{Search: chat.SearchKey(search), Limit: n + 1})
			return err
		}))
		return len(found)
	}
	require.Zero(t, count(s, "keep"), "index emptied")
	require.NoError(t, s.Close())

	s, err = Open(ctx, path, nil)
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, n, count(s, "keep"))
	require.Equal(t, n, count(s, "C"))
	require.Equal(t, 1000, count(s, "C0"), "c0000 to c0999")
	require.Equal(t, 1, count(s, "c1000"))
	require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
		_, err := tx.GetMeta(ctx, "channelsearch.backfill")
		require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err), "cursor row deleted when done")
		return nil
	}))
}

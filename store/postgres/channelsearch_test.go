package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestChannelSearchBackfill: channels stored before the channel search
// index existed (simulated by emptying it and setting the cursor row the
// migration sets) are indexed when the store opens, over several batches.
func TestChannelSearchBackfill(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	s := openStore(t, schema)
	ctx := ctxT(t)
	const n = 1207
	update(t, s, func(tx chat.Tx) error {
		for i := 0; i < n; i++ {
			require.NoError(t, tx.CreateChannel(ctx, &chat.Channel{ChannelID: fmt.Sprintf("c%04d", i), Type: chat.ChannelTypeStandard,
				DisplayName: fmt.Sprintf("Zebra Keepers %d", i), CreatedAt: at(int64(i)), UpdatedAt: at(0), LastActivity: at(0)}))
		}
		return nil
	})
	q := pq.QuoteIdentifier(schema)
	for _, stmt := range []string{"DELETE FROM " + q + ".channel_keys",
		"INSERT INTO " + q + ".meta (key, value) VALUES ('channelsearch.backfill', '')"} {
		_, err := admin(t).ExecContext(ctx, stmt)
		require.NoError(t, err)
	}
	count := func(s chat.Store, search string) int {
		var found []*chat.Channel
		view(t, s, func(tx chat.Tx) error {
			var err error
			found, err = tx.QueryChannels(ctx, chat.ChannelFilter{Search: chat.SearchKey(search), Limit: n + 1})
			return err
		})
		return len(found)
	}
	require.Zero(t, count(s, "keep"), "index emptied")

	s2 := openStore(t, schema)
	require.Equal(t, n, count(s2, "keep"))
	require.Equal(t, n, count(s2, "C"))
	require.Equal(t, 1000, count(s2, "C0"), "c0000 to c0999")
	require.Equal(t, 1, count(s2, "c1000"))
	view(t, s2, func(tx chat.Tx) error {
		_, err := tx.GetMeta(context.Background(), "channelsearch.backfill")
		require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err), "cursor row deleted when done")
		return nil
	})
}

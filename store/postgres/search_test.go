package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestSearchBackfill: users and messages stored before the search index
// existed (simulated by emptying it and setting the cursor row the
// migration sets) are indexed when the store opens, over several batches.
func TestSearchBackfill(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	s := openStore(t, schema)
	ctx := ctxT(t)
	const n = 1207
	update(t, s, func(tx chat.Tx) error {
		require.NoError(t, tx.CreateChannel(ctx, &chat.Channel{ChannelID: "c", Type: chat.ChannelTypeStandard, DisplayName: "c", CreatedAt: at(0), UpdatedAt: at(0), LastActivity: at(0)}))
		for i := 0; i < n; i++ {
			require.NoError(t, tx.CreateUser(ctx, &chat.User{UserID: fmt.Sprintf("u%04d", i), DisplayName: fmt.Sprintf("Keeper %d", i), CreatedAt: at(0), UpdatedAt: at(0)}))
			require.NoError(t, tx.CreateMessage(ctx, &chat.Message{MessageID: fmt.Sprintf("m%04d", i), ChannelID: "c", UserID: "u", Type: chat.MessageTypeText,
				Data: map[string]any{"text": fmt.Sprintf("zebra number%d", i)}, ChannelSegment: int64(i + 1), CreatedAt: at(int64(i)), UpdatedAt: at(int64(i))}))
		}
		return nil
	})
	q := pq.QuoteIdentifier(schema)
	for _, stmt := range []string{"DELETE FROM " + q + ".user_keys", "UPDATE " + q + ".messages SET search = NULL",
		"INSERT INTO " + q + ".meta (key, value) VALUES ('search.backfill', '')"} {
		_, err := admin(t).ExecContext(ctx, stmt)
		require.NoError(t, err)
	}
	search := func(s chat.Store, w string) int {
		var found []*chat.Message
		view(t, s, func(tx chat.Tx) error {
			var err error
			found, err = tx.SearchMessages(ctx, chat.MessageSearch{Words: []string{w}})
			return err
		})
		return len(found)
	}
	require.Zero(t, search(s, "zebra"), "index emptied")

	s2 := openStore(t, schema)
	require.Equal(t, n, search(s2, "zebra"))
	require.Equal(t, 1, search(s2, "number1000"))
	view(t, s2, func(tx chat.Tx) error {
		us, err := tx.QueryUsers(context.Background(), chat.UserFilter{Search: chat.SearchKey("keep"), Limit: n + 1})
		require.NoError(t, err)
		require.Len(t, us, n)
		_, err = tx.GetMeta(ctx, "search.backfill")
		require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err), "cursor row deleted when done")
		return nil
	})
}

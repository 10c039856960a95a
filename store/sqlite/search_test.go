package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestSearchBackfill: users and messages stored before the search index
// existed (simulated by emptying it and setting the cursor row the
// migration sets) are indexed when the store opens, over several batches.
func TestSearchBackfill(t *testing.T) {
	t.Parallel()
	requireCgo(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "chat.db")
	s, err := Open(ctx, path, nil)
	require.NoError(t, err)
	now := chat.NewTime(t0)
	n := backfillBatch*2 + 7
	require.NoError(t, s.Update(ctx, func(ctx2 chat.Tx) error {
		tx := ctx2.(*tx)
		if err := tx.CreateChannel(ctx, testChannel("c")); err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			if err := tx.CreateUser(ctx, &chat.User{UserID: fmt.Sprintf("u%04d", i), DisplayName: fmt.Sprintf("Keeper %d", i), CreatedAt: now, UpdatedAt: now}); err != nil {
				return err
			}
			m := &chat.Message{MessageID: fmt.Sprintf("m%04d", i), ChannelID: "c", UserID: "u", Type: chat.MessageTypeText,
				Data: map[string]any{"text": fmt.Sprintf("zebra number%d", i)}, ChannelSegment: int64(i + 1), CreatedAt: now, UpdatedAt: now}
			if err := tx.CreateMessage(ctx, m); err != nil {
				return err
			}
		}
		for _, q := range []string{"DELETE FROM user_keys", "DELETE FROM message_words",
			"INSERT INTO meta (key, value) VALUES ('search.backfill', '')"} {
			if _, err := tx.exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	}))
	var found []*chat.Message
	require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
		found, err = tx.SearchMessages(ctx, chat.MessageSearch{Words: []string{"zebra"}})
		return err
	}))
	require.Empty(t, found, "index emptied")
	require.NoError(t, s.Close())

	s, err = Open(ctx, path, nil)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
		found, err = tx.SearchMessages(ctx, chat.MessageSearch{Words: []string{"zebra"}})
		require.NoError(t, err)
		require.Len(t, found, n)
		found, err = tx.SearchMessages(ctx, chat.MessageSearch{Words: []string{"number1000"}})
		require.NoError(t, err)
		require.Len(t, found, 1)
		us, err := tx.QueryUsers(ctx, chat.UserFilter{Search: chat.SearchKey("keep"), Limit: n + 1})
		require.NoError(t, err)
		require.Len(t, us, n)
		_, err = tx.GetMeta(ctx, "search.backfill")
		require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err), "cursor row deleted when done")
		return nil
	}))
}

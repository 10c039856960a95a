package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestSearchBackfill: users stored before the user search index existed
// (simulated by emptying it and setting the cursor row the migration sets)
// are indexed when the store opens, over several batches; messages stored
// before the message search index existed (the cursor set back to 0, as
// the migration does) are indexed by IndexSearch, in batches, from the
// position kept in the store, also across a close and open.
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
		for _, q := range []string{"DELETE FROM user_keys", "DELETE FROM search_docs",
			"INSERT INTO meta (key, value) VALUES ('search.backfill', '')", "UPDATE meta SET value = '0' WHERE key = 'search.indexed'"} {
			if _, err := tx.exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	}))
	search := func(w string) []*chat.Message {
		var found []*chat.Message
		require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
			found, err = tx.SearchMessages(ctx, chat.MessageSearch{Words: []string{w}})
			return err
		}))
		return found
	}
	require.Empty(t, search("zebra"), "index emptied")
	got, err := s.IndexSearch(ctx, 500)
	require.NoError(t, err)
	require.Equal(t, 500, got, "one batch")
	require.Len(t, search("zebra"), 500)
	require.NoError(t, s.Close())

	s, err = Open(ctx, path, nil)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
		us, err := tx.QueryUsers(ctx, chat.UserFilter{Search: chat.SearchKey("keep"), Limit: n + 1})
		require.NoError(t, err)
		require.Len(t, us, n)
		_, err = tx.GetMeta(ctx, "search.backfill")
		require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err), "cursor row deleted when done")
		return nil
	}))
	require.Len(t, search("zebra"), 500, "opening indexes no message")
	for _, want := range []int{500, n - 1000, 0} {
		got, err := s.IndexSearch(ctx, 500)
		require.NoError(t, err)
		require.Equal(t, want, got, "the next batch, from the kept position")
	}
	require.Len(t, search("zebra"), n)
	require.Len(t, search("number1000"), 1)
}

// TestIndexSearchRereadsChangedRows: the words IndexSearch found before
// its write transaction are used only for rows unchanged since; a message
// edited or deleted in between (before it was indexed, so its edit left
// the index alone) is indexed as it is at the write, and one stored in
// between is indexed too.
func TestIndexSearchRereadsChangedRows(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx := context.Background()
	now := chat.NewTime(t0)
	msg := func(id, text string, seg int64) *chat.Message {
		return &chat.Message{MessageID: id, ChannelID: "c", UserID: "u", Type: chat.MessageTypeText,
			Data: map[string]any{"text": text}, ChannelSegment: seg, CreatedAt: now, UpdatedAt: now}
	}
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error {
		if err := tx.CreateChannel(ctx, testChannel("c")); err != nil {
			return err
		}
		for i, m := range []*chat.Message{msg("m1", "alpha kept", 1), msg("m2", "gamma edited", 2), msg("m3", "delta deleted", 3)} {
			if err := tx.CreateMessage(ctx, m); err != nil {
				return fmt.Errorf("message %d: %w", i, err)
			}
		}
		return nil
	}))
	var read []wordsRow
	var words [][]string
	require.NoError(t, s.View(ctx, func(ctx2 chat.Tx) (err error) {
		read, err = ctx2.(*tx).unindexed(ctx, 10)
		for i := range read {
			ws, err := read[i].words()
			require.NoError(t, err)
			words = append(words, ws)
		}
		return err
	}))
	require.Len(t, read, 3)
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error {
		m2 := msg("m2", "omega edited", 2)
		if err := tx.UpdateMessage(ctx, m2); err != nil {
			return err
		}
		m3 := msg("m3", "delta deleted", 3)
		m3.IsDeleted = true
		if err := tx.UpdateMessage(ctx, m3); err != nil {
			return err
		}
		return tx.CreateMessage(ctx, msg("m4", "sigma new", 4))
	}))
	n, err := s.indexRead(ctx, 10, read, words)
	require.NoError(t, err)
	require.Equal(t, 4, n)
	search := func(w string) []string {
		var ids []string
		require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
			found, err := tx.SearchMessages(ctx, chat.MessageSearch{Words: []string{w}})
			for _, m := range found {
				ids = append(ids, m.MessageID)
			}
			return err
		}))
		return ids
	}
	require.Equal(t, []string{"m1"}, search("alpha"), "unchanged: the words found before")
	require.Equal(t, []string{"m2"}, search("omega"), "edited in between: its words at the write")
	require.Empty(t, search("gamma"), "the words it lost")
	require.Empty(t, search("delta"), "deleted in between")
	require.Equal(t, []string{"m4"}, search("sigma"), "stored in between")
}

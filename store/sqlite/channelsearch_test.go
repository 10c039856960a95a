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

// BenchmarkChannelSearch searches 100,000 channels (40 named "Zebra
// Keepers N", the others "Room N") beside the ceiling of the same run: the
// newest page of every channel without a search (channels_created_idx).
//
//	go test -run '^$' -bench ChannelSearch -benchtime 2000x ./store/sqlite/
func BenchmarkChannelSearch(b *testing.B) {
	requireCgo(b)
	s := newStore(b, nil)
	ctx := context.Background()
	const n = 100000
	for lo := 0; lo < n; lo += 5000 {
		must(b, s.Update(ctx, func(ctx2 chat.Tx) error {
			for i := lo; i < lo+5000; i++ {
				c := testChannel(fmt.Sprintf("ch-%d", i))
				c.DisplayName = fmt.Sprintf("Room %d", i)
				if i%2500 == 0 {
					c.DisplayName = fmt.Sprintf("Zebra Keepers %d", i)
				}
				if err := ctx2.CreateChannel(ctx, c); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	for _, c := range []struct {
		name string
		f    chat.ChannelFilter
	}{
		{"ceiling: newest page, no search", chat.ChannelFilter{Limit: 21}},
		{"search zeb (40 matches)", chat.ChannelFilter{Search: chat.SearchKey("zeb"), Limit: 21}},
		{"search keepers (a later word, 40 matches)", chat.ChannelFilter{Search: chat.SearchKey("keepers"), Limit: 21}},
		{"search ch-9999 (an id, 11 matches)", chat.ChannelFilter{Search: chat.SearchKey("ch-9999"), Limit: 21}},
		{"search room 1 (11,107 matches)", chat.ChannelFilter{Search: chat.SearchKey("room 1"), Limit: 21}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				must(b, s.View(ctx, func(tx chat.Tx) error {
					_, err := tx.QueryChannels(ctx, c.f)
					return err
				}))
			}
		})
	}
}

package sqlite

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestLazyCommit: a transaction whose Update calls all carry
// chat.WithLazyCommit commits with synchronous=NORMAL (no fsync), any
// other with the configured setting, also when lazy and other calls share
// one group commit; a lazy transaction's writes are committed.
func TestLazyCommit(t *testing.T) {
	s := newStore(t, nil)
	ctx := context.Background()
	lazy := chat.WithLazyCommit(ctx)
	setting := func(t *testing.T, ct chat.Tx) int {
		var v int
		require.NoError(t, ct.(*tx).db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&v))
		return v
	}
	const normal, full = 1, 2
	update := func(c context.Context) int {
		var v int
		require.NoError(t, s.Update(c, func(ct chat.Tx) error { v = setting(t, ct); return nil }))
		return v
	}
	for range 2 {
		require.Equal(t, normal, update(lazy))
		require.Equal(t, normal, update(lazy))
		require.Equal(t, full, update(ctx))
	}
	// Group commits: the writer runs the requests in one transaction,
	// each in a savepoint.
	group := func(cs ...context.Context) []int {
		out := make([]int, len(cs))
		rs := make([]*request, len(cs))
		for i, c := range cs {
			rs[i] = &request{ctx: c, done: make(chan struct{}),
				fn: func(ct chat.Tx) error { out[i] = setting(t, ct); return nil }}
			rs[i].state.Store(reqTaken)
		}
		s.wlock.Lock()
		s.runBatch(&writerState{}, rs)
		s.wlock.Unlock()
		for _, r := range rs {
			<-r.done
			require.NoError(t, r.err)
		}
		return out
	}
	require.Equal(t, []int{full, full}, group(lazy, ctx))
	require.Equal(t, []int{normal, normal}, group(lazy, lazy))
	require.Equal(t, []int{full, full}, group(ctx, lazy))
	require.Equal(t, full, update(ctx))

	now := chat.NewTime(t0)
	require.NoError(t, s.Update(lazy, func(ct chat.Tx) error {
		return ct.CreateChannel(lazy, &chat.Channel{ChannelID: "lazy", DisplayName: "lazy", CreatedAt: now, UpdatedAt: now})
	}))
	require.NoError(t, s.View(ctx, func(ct chat.Tx) error {
		c, err := ct.GetChannel(ctx, "lazy")
		require.NoError(t, err)
		require.Equal(t, "lazy", c.ChannelID)
		return nil
	}))
}

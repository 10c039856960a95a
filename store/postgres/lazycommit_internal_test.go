package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestLazyCommit: an Update under chat.WithLazyCommit runs with
// synchronous_commit off, for that transaction only (the connection goes
// back to the pool with the server's setting); Views and other Updates
// keep the server's setting, and the lazy Update's writes commit.
func TestLazyCommit(t *testing.T) {
	s := relayStores(t, 1)[0]
	ctx := context.Background()
	setting := func(c context.Context, write bool) string {
		var v string
		run := s.View
		if write {
			run = s.Update
		}
		require.NoError(t, run(c, func(ct chat.Tx) error {
			return ct.(*tx).tx.QueryRowContext(c, "SHOW synchronous_commit").Scan(&v)
		}))
		return v
	}
	lazy := chat.WithLazyCommit(ctx)
	for range 3 {
		require.Equal(t, "off", setting(lazy, true))
		require.Equal(t, "on", setting(ctx, true))
		require.Equal(t, "on", setting(lazy, false), "a View is left alone")
	}
	now := chat.NewTime(time.Now())
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

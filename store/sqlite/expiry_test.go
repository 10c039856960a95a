package sqlite

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// unmuteEvents returns the channel.didUnmute and channel.didUnmuteUsers
// events of the log.
func unmuteEvents(t *testing.T, s *Store) []*chat.Event {
	t.Helper()
	var out []*chat.Event
	require.NoError(t, s.View(context.Background(), func(tx chat.Tx) error {
		evs, err := tx.ReadEvents(context.Background(), 0, 1000)
		for _, e := range evs {
			if e.Name == chat.EventChannelDidUnmute || e.Name == chat.EventChannelDidUnmuteUsers {
				out = append(out, e)
			}
		}
		return err
	}))
	return out
}

// TestMuteExpiryAcrossRestart: the server stops before a mute ends and
// starts again after; the lapse is in the database, and the new process's
// expirer announces it, once.
func TestMuteExpiryAcrossRestart(t *testing.T) {
	t.Parallel()
	requireCgo(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "chat.db")
	clk := &testClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}

	s, err := Open(ctx, path, nil)
	require.NoError(t, err)
	svc, err := chat.New(ctx, s, chat.Config{Now: clk.Now})
	require.NoError(t, err)
	x := chat.NewExpirer(svc, chat.ExpirerConfig{Interval: 5 * time.Millisecond})
	require.NoError(t, x.Start(ctx))
	a, _, err := svc.CreateAdmin(ctx, "", "root", "admin")
	require.NoError(t, err)
	_, err = svc.CreateChannel(ctx, a.UserID, chat.CreateChannelInput{ChannelID: "room", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice", "bob"}})
	require.NoError(t, err)
	require.NoError(t, svc.MuteUsers(ctx, a.UserID, "room", []string{"alice", "bob"}, time.Minute))
	require.NoError(t, svc.MuteChannel(ctx, a.UserID, "room", time.Minute))
	require.NoError(t, x.Stop(ctx))
	require.NoError(t, s.Close())

	clk.Add(time.Hour) // the moment passes while the server is down

	s, err = Open(ctx, path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.Empty(t, unmuteEvents(t, s))
	svc, err = chat.New(ctx, s, chat.Config{Now: clk.Now})
	require.NoError(t, err)
	x = chat.NewExpirer(svc, chat.ExpirerConfig{Interval: 5 * time.Millisecond})
	require.NoError(t, x.Start(ctx))
	require.Eventually(t, func() bool { return len(unmuteEvents(t, s)) >= 2 }, 20*time.Second, 5*time.Millisecond)
	require.NoError(t, x.Stop(ctx))
	_, _, ok, err := svc.ExpireMutes(ctx)
	require.NoError(t, err)
	require.False(t, ok, "nothing muted any more")

	evs := unmuteEvents(t, s)
	require.Len(t, evs, 2, "each lapse once")
	require.Equal(t, chat.EventChannelDidUnmute, evs[0].Name)
	var d chat.ChannelEventData
	require.NoError(t, json.Unmarshal(evs[1].Data, &d))
	require.Equal(t, []string{"alice", "bob"}, d.UserIDs)
	require.Equal(t, chat.UnmuteExpired, d.Reason)
}

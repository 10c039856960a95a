package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

type sharedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *sharedClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *sharedClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestMuteExpiryTwoProcesses: two servers (two stores, two Services, two
// expirers) on one database, one clock. When the mutes end, every lapse is
// announced exactly once between them.
func TestMuteExpiryTwoProcesses(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	ctx := ctxT(t)
	clk := &sharedClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	var svcs []*chat.Service
	var stores []chat.Store
	for range 2 {
		st := openStore(t, schema)
		svc, err := chat.New(ctx, st, chat.Config{Now: clk.Now})
		require.NoError(t, err)
		svcs, stores = append(svcs, svc), append(stores, st)
	}
	st := stores[0]
	a, _, err := svcs[0].CreateAdmin(ctx, "", "root", "admin")
	require.NoError(t, err)

	const chans, members = 6, 8
	for i := range chans {
		id := fmt.Sprintf("c%d", i)
		var ids []string
		for j := range members {
			ids = append(ids, fmt.Sprintf("u%d", j))
		}
		svc := svcs[i%2]
		_, err := svc.CreateChannel(ctx, a.UserID, chat.CreateChannelInput{ChannelID: id, Type: chat.ChannelTypeStandard, UserIDs: ids})
		require.NoError(t, err)
		require.NoError(t, svc.MuteChannel(ctx, a.UserID, id, time.Duration(i+1)*time.Second))
		for j, u := range ids {
			require.NoError(t, svc.MuteUsers(ctx, a.UserID, id, []string{u}, time.Duration(j+1)*time.Second))
		}
	}
	var first int64
	require.NoError(t, st.View(ctx, func(tx chat.Tx) (err error) { first, err = tx.LastEventID(ctx); return err }))

	var xs []*chat.Expirer
	for _, svc := range svcs {
		x := chat.NewExpirer(svc, chat.ExpirerConfig{Interval: 2 * time.Millisecond})
		require.NoError(t, x.Start(ctx))
		t.Cleanup(func() { _ = x.Stop(context.Background()) })
		xs = append(xs, x)
	}

	// unmutes counts the announcements per channel and per member.
	unmutes := func() map[string]int {
		seen := map[string]int{}
		require.NoError(t, st.View(ctx, func(tx chat.Tx) error {
			evs, err := tx.ReadEvents(ctx, first, 1000)
			for _, e := range evs {
				var d chat.ChannelEventData
				require.NoError(t, json.Unmarshal(e.Data, &d))
				require.Equal(t, chat.UnmuteExpired, d.Reason, "%s", e.Data)
				switch e.Name {
				case chat.EventChannelDidUnmute:
					seen[d.Channel.ChannelID]++
				case chat.EventChannelDidUnmuteUsers:
					for _, u := range d.UserIDs {
						seen[d.Channel.ChannelID+"/"+u]++
					}
				default:
					t.Fatalf("unexpected event %s", e.Name)
				}
			}
			return err
		}))
		return seen
	}

	// The mutes end one second apart; both expirers race for each.
	for range members {
		clk.Add(time.Second)
		time.Sleep(10 * time.Millisecond)
	}
	require.Eventually(t, func() bool { return len(unmutes()) == chans+chans*members },
		20*time.Second, 5*time.Millisecond, "every lapse announced")
	for _, x := range xs {
		require.NoError(t, x.Stop(ctx))
	}
	for _, svc := range svcs {
		n, _, ok, err := svc.ExpireMutes(ctx)
		require.NoError(t, err)
		require.Zero(t, n)
		require.False(t, ok)
	}
	for k, n := range unmutes() {
		require.Equal(t, 1, n, "%s announced %d times", k, n)
	}
}

package postgres_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/postgres"
)

// TestSlowModeConcurrentPosts: a member of a channel in slow mode posts
// from 2 stores on one schema (as 2 server processes would) x 4
// goroutines at once. Exactly one post passes; the others are refused
// with CodeRateLimited, because each post locks the member's row before
// it reads the member's last message (chat.LockStore.LockChannelUser).
func TestSlowModeConcurrentPosts(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	schema := newSchema(t)
	stores := []*postgres.Store{openStore(t, schema), openStore(t, schema)}
	svcs := make([]*chat.Service, len(stores))
	for i, st := range stores {
		svc, err := chat.New(ctx, st, chat.Config{})
		require.NoError(t, err)
		svcs[i] = svc
	}
	a, _, err := svcs[0].CreateAdmin(ctx, "", "root", "")
	require.NoError(t, err)
	const rounds, perStore = 6, 4
	members := []string{"warm"}
	for r := range rounds {
		members = append(members, fmt.Sprintf("u%d", r))
	}
	_, err = svcs[0].CreateChannel(ctx, a.UserID, chat.CreateChannelInput{ChannelID: "slow", Type: "standard", UserIDs: members})
	require.NoError(t, err)
	_, err = svcs[0].SetChannelRateLimit(ctx, a.UserID, "slow", time.Minute)
	require.NoError(t, err)
	// Both stores post once first, so that the rounds below run on
	// warm connections and prepared statements.
	for _, svc := range svcs {
		_, err := svc.CreateMessage(ctx, a.UserID, chat.CreateMessageInput{ChannelID: "slow", Type: "text", Data: map[string]any{"text": "warm-up"}})
		require.NoError(t, err)
	}
	for r := range rounds {
		user := fmt.Sprintf("u%d", r)
		var (
			wg              sync.WaitGroup
			mu              sync.Mutex
			passed, refused int
			unexpected      []error
			start           = make(chan struct{})
		)
		for _, svc := range svcs {
			for g := range perStore {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					_, err := svc.CreateMessage(ctx, user, chat.CreateMessageInput{ChannelID: "slow", Type: "text",
						Data: map[string]any{"text": fmt.Sprintf("%s says %d", user, g)}})
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						passed++
					case chat.ErrorCode(err) == chat.CodeRateLimited:
						refused++
					default:
						unexpected = append(unexpected, err)
					}
				}()
			}
		}
		close(start)
		wg.Wait()
		require.Empty(t, unexpected, "round %d", r)
		require.Equal(t, 1, passed, "round %d: posts that passed", r)
		require.Equal(t, len(svcs)*perStore-1, refused, "round %d", r)
		var n int
		require.NoError(t, stores[0].View(ctx, func(tx chat.Tx) error {
			ms, err := tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: "slow", UserID: user, IncludeDeleted: true})
			n = len(ms)
			return err
		}))
		require.Equal(t, 1, n, "round %d: stored messages of %s", r, user)
	}
}

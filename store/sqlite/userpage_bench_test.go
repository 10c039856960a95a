package sqlite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// BenchmarkUserPage reads pages of 100 users (QueryUsers by id, as
// GET /users pages) and 100 users by id (GetUsers, as every response
// side-loads them) from 10,000 users:
//
//	go test -bench UserPage -run '^$' ./store/sqlite/
func BenchmarkUserPage(b *testing.B) {
	s := newStore(b, nil)
	ctx := context.Background()
	const total, page = 10_000, 100
	ids := make([]string, total)
	for i := range ids {
		ids[i] = fmt.Sprintf("user%05d", i)
	}
	for i := 0; i < total; i += 1000 {
		require.NoError(b, s.Update(ctx, func(tx chat.Tx) error {
			_, err := tx.EnsureUsers(ctx, ids[i:i+1000], time.Unix(0, 0))
			return err
		}))
	}
	b.Run("QueryUsers", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			after := ids[(i*page)%(total-page)]
			require.NoError(b, s.View(ctx, func(tx chat.Tx) error {
				us, err := tx.QueryUsers(ctx, chat.UserFilter{After: &chat.UserCursor{UserID: after}, Limit: page})
				if len(us) != page {
					b.Fatalf("%d users", len(us))
				}
				return err
			}))
		}
	})
	b.Run("GetUsers", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			from := (i * page) % (total - page)
			require.NoError(b, s.View(ctx, func(tx chat.Tx) error {
				us, err := tx.GetUsers(ctx, ids[from:from+page])
				if len(us) != page {
					b.Fatalf("%d users", len(us))
				}
				return err
			}))
		}
	})
}

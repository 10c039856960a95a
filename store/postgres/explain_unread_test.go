package postgres_test

import (
	"testing"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/storetest"
)

// TestExplainUnread builds 500 channels of 2,000 messages (the rows of
// storetest.UnreadMessage), ANALYZEs them and checks that the unread
// counts of a page of relations, exactly as CountUnread runs them, read
// messages only through messages_author_idx and messages_deleted_idx, by
// index-only scans, channels by primary key, and never scan a table.
func TestExplainUnread(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a 1,000,000-row fixture")
	}
	s := newStore(t)
	ctx := ctxT(t)
	db := admin(t)
	q := pq.QuoteIdentifier(s.Schema())
	require.NoError(t, storetest.BuildUnreadFixture(ctx, s, 500, 2000, bulkFill(db, q)))
	for _, table := range []string{"channels", "channel_users", "messages"} {
		_, err := db.ExecContext(ctx, "VACUUM ANALYZE "+q+"."+table)
		require.NoError(t, err)
	}
	var cus []*chat.ChannelUser
	for i := range 10 {
		cus = append(cus, &chat.ChannelUser{ChannelID: "unread-00" + string(rune('0'+i)) + "0", UserID: "reader-none"})
	}
	sqlText, args := s.UnreadQuery(cus)
	var raw []byte
	require.NoError(t, db.QueryRowContext(ctx, "EXPLAIN (FORMAT JSON) "+sqlText, args...).Scan(&raw))
	plan := parsePlan(t, raw)
	t.Logf("unread counts: %s", plan)
	used := map[string]string{}
	plan.walk(func(n planNode) {
		require.NotEqual(t, "Seq Scan", n.NodeType, "plan: %s", plan)
		if n.IndexName != "" {
			used[n.IndexName] = n.NodeType
		}
	})
	require.Equal(t, "Index Only Scan", used["messages_author_idx"], "plan: %s", plan)
	require.Equal(t, "Index Only Scan", used["messages_deleted_idx"], "plan: %s", plan)
	require.Contains(t, used, "channels_pkey", "plan: %s", plan)
}

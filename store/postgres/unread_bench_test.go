package postgres_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"

	"github.com/lib/pq"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/storetest"
)

// BenchmarkUnread reads a page of 10 of a reader's channels with and
// without unread counts, the reader in 1,000 channels of 10,000 messages
// each (see storetest.BenchUnread), after VACUUM ANALYZE of the fixture
// (as autovacuum leaves a table that stopped changing):
//
//	CHAT_TEST_POSTGRES_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//		go test -run '^$' -bench Unread -benchtime 2000x -timeout 30m ./store/postgres/
func BenchmarkUnread(b *testing.B) {
	s := newStore(b)
	ctx := context.Background()
	db := admin(b)
	schema := pq.QuoteIdentifier(s.Schema())
	if err := storetest.BuildUnreadFixture(ctx, s, storetest.UnreadChannels, storetest.UnreadMessages, bulkFill(db, schema)); err != nil {
		b.Fatal(err)
	}
	for _, table := range []string{"channels", "channel_users", "messages"} {
		if _, err := db.ExecContext(ctx, "VACUUM ANALYZE "+schema+"."+table); err != nil {
			b.Fatal(err)
		}
	}
	storetest.BenchUnread(b, s, storetest.UnreadMessages)
}

// bulkFill writes a channel's fixture messages with one INSERT of bound
// arrays (10,000 single-row statements a channel would take the fixture
// hours to build), and sets the channel's messageCount as AppendMessage
// would have.
func bulkFill(db *sql.DB, schema string) storetest.UnreadFill {
	return func(ctx context.Context, _ chat.Store, channelID string, n int64, created chat.Time) error {
		var ids, users, types, data []string
		var deleted []bool
		var segs []int64
		for seg := int64(1); seg <= n; seg++ {
			m := storetest.UnreadMessage(channelID, seg, created)
			d, err := json.Marshal(m.Data)
			if err != nil {
				return err
			}
			ids, users, types, data = append(ids, m.MessageID), append(users, m.UserID), append(types, string(m.Type)), append(data, string(d))
			deleted, segs = append(deleted, m.IsDeleted), append(segs, m.ChannelSegment)
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+schema+`.messages
			(message_id, channel_id, user_id, type, data, is_deleted, created_at, updated_at, channel_segment)
			SELECT i, $1, u, t, d::json, del, $2, $2, seg
			FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::boolean[], $8::bigint[]) AS x(i, u, t, d, del, seg)`,
			channelID, created.Time, pq.StringArray(ids), pq.StringArray(users), pq.StringArray(types), pq.StringArray(data),
			pq.BoolArray(deleted), pq.Int64Array(segs)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE `+schema+`.channels SET message_count = $2 WHERE channel_id = $1`, channelID, n); err != nil {
			return err
		}
		return tx.Commit()
	}
}

package sqlite

import (
	"context"
	"encoding/json"
	"testing"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/storetest"
)

// BenchmarkUnread reads a page of 10 of a reader's channels with and
// without unread counts, the reader in 1,000 channels of 10,000 messages
// each (see storetest.BenchUnread), from a database file:
//
//	go test -run '^$' -bench Unread -benchtime 2000x -timeout 60m ./store/sqlite/
func BenchmarkUnread(b *testing.B) {
	s := newStore(b, nil)
	if err := storetest.BuildUnreadFixture(context.Background(), s, storetest.UnreadChannels, storetest.UnreadMessages, bulkFill); err != nil {
		b.Fatal(err)
	}
	storetest.BenchUnread(b, s, storetest.UnreadMessages)
}

// bulkFill writes a channel's fixture messages with one INSERT from a
// bound JSON array (through the Store, 10,000 AppendMessage calls a
// channel take the fixture about an hour to build on a loaded machine),
// and sets the channel's messageCount as AppendMessage would have.
func bulkFill(ctx context.Context, s chat.Store, channelID string, n int64, created chat.Time) error {
	rows := make([][6]any, 0, n)
	for seg := int64(1); seg <= n; seg++ {
		m := storetest.UnreadMessage(channelID, seg, created)
		d, err := json.Marshal(m.Data)
		if err != nil {
			return err
		}
		rows = append(rows, [6]any{m.MessageID, m.UserID, m.Type, string(d), m.IsDeleted, m.ChannelSegment})
	}
	arg, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	return s.Update(ctx, func(ct chat.Tx) error {
		t := ct.(*tx)
		if _, err := t.exec(ctx, `INSERT INTO messages
			(message_id, channel_id, user_id, type, data, is_deleted, created_at, updated_at, channel_segment)
			SELECT json_extract(value, '$[0]'), ?, json_extract(value, '$[1]'), json_extract(value, '$[2]'),
				json_extract(value, '$[3]'), json_extract(value, '$[4]'), ?, ?, json_extract(value, '$[5]')
			FROM json_each(?)`, channelID, ms(created), ms(created), string(arg)); err != nil {
			return err
		}
		_, err := t.exec(ctx, "UPDATE channels SET message_count = ? WHERE channel_id = ?", n, channelID)
		return err
	})
}

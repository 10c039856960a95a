package sqlite

import (
	"context"
	"testing"

	"github.com/chatengine/chat/store/storetest"
)

// BenchmarkUnread reads a page of 10 of a reader's channels with and
// without unread counts, the reader in 1,000 channels of 10,000 messages
// each (see storetest.BenchUnread), from a database file:
//
//	go test -run '^$' -bench Unread -benchtime 2000x -timeout 30m ./store/sqlite/
func BenchmarkUnread(b *testing.B) {
	s := newStore(b, nil)
	if err := storetest.BuildUnreadFixture(context.Background(), s, storetest.UnreadChannels, storetest.UnreadMessages, nil); err != nil {
		b.Fatal(err)
	}
	storetest.BenchUnread(b, s, storetest.UnreadMessages)
}

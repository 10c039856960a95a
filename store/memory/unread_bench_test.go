package memory_test

import (
	"context"
	"testing"

	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/store/storetest"
)

// BenchmarkUnread reads a page of 10 of a reader's channels with and
// without unread counts, the reader in 1,000 channels of 10,000 messages
// each (see storetest.BenchUnread):
//
//	go test -run '^$' -bench Unread -benchtime 2000x ./store/memory/
func BenchmarkUnread(b *testing.B) {
	s := memory.New()
	defer s.Close()
	if err := storetest.BuildUnreadFixture(context.Background(), s, storetest.UnreadChannels, storetest.UnreadMessages, nil); err != nil {
		b.Fatal(err)
	}
	storetest.BenchUnread(b, s, storetest.UnreadMessages)
}

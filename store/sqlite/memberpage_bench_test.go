package sqlite

import (
	"context"
	"testing"

	"github.com/chatengine/chat/store/storetest"
)

// BenchmarkMemberPages reads a page of a user's channels for users in 10,
// 1,000 and 10,000 channels (see storetest.BenchMemberPages) from a
// database file:
//
//	go test -run '^$' -bench MemberPages ./store/sqlite/
func BenchmarkMemberPages(b *testing.B) {
	s := newStore(b, nil)
	if err := storetest.BuildMemberPageFixture(context.Background(), s); err != nil {
		b.Fatal(err)
	}
	storetest.BenchMemberPages(b, s)
}

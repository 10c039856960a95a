package memory_test

import (
	"context"
	"testing"

	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/store/storetest"
)

// BenchmarkMemberPages reads a page of a user's channels for users in 10,
// 1,000 and 10,000 channels (see storetest.BenchMemberPages):
//
//	go test -run '^$' -bench MemberPages ./store/memory/
func BenchmarkMemberPages(b *testing.B) {
	s := memory.New()
	defer s.Close()
	if err := storetest.BuildMemberPageFixture(context.Background(), s); err != nil {
		b.Fatal(err)
	}
	storetest.BenchMemberPages(b, s)
}

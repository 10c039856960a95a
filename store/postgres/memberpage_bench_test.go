package postgres_test

import (
	"context"
	"testing"

	"github.com/lib/pq"

	"github.com/chatengine/chat/store/storetest"
)

// BenchmarkMemberPages reads a page of a user's channels for users in 10,
// 1,000 and 10,000 channels (see storetest.BenchMemberPages), after
// ANALYZE of the fixture:
//
//	CHAT_TEST_POSTGRES_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//		go test -run '^$' -bench MemberPages ./store/postgres/
func BenchmarkMemberPages(b *testing.B) {
	s := newStore(b)
	ctx := context.Background()
	if err := storetest.BuildMemberPageFixture(ctx, s); err != nil {
		b.Fatal(err)
	}
	if _, err := admin(b).ExecContext(ctx, "ANALYZE "+pq.QuoteIdentifier(s.Schema())+".channels, "+
		pq.QuoteIdentifier(s.Schema())+".channel_users"); err != nil {
		b.Fatal(err)
	}
	storetest.BenchMemberPages(b, s)
}

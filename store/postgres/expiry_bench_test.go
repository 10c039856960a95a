package postgres_test

import (
	"context"
	"testing"

	"github.com/lib/pq"

	"github.com/chatengine/chat/store/storetest"
)

// BenchmarkMuteExpiry measures the idle look of a mute expirer on 10,000
// channels (see storetest.BenchMuteExpiry), after ANALYZE of the fixture:
//
//	CHAT_TEST_POSTGRES_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//		go test -run '^$' -bench MuteExpiry ./store/postgres/
func BenchmarkMuteExpiry(b *testing.B) {
	s := newStore(b)
	ctx := context.Background()
	if err := storetest.BuildMemberPageFixture(ctx, s); err != nil {
		b.Fatal(err)
	}
	if _, err := admin(b).ExecContext(ctx, "ANALYZE "+pq.QuoteIdentifier(s.Schema())+".channels, "+
		pq.QuoteIdentifier(s.Schema())+".channel_users"); err != nil {
		b.Fatal(err)
	}
	storetest.BenchMuteExpiry(b, s)
}

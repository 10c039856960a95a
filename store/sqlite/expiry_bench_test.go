package sqlite

import (
	"context"
	"testing"

	"github.com/chatengine/chat/store/storetest"
)

// BenchmarkMuteExpiry measures the idle look of a mute expirer on 10,000
// channels (see storetest.BenchMuteExpiry):
//
//	go test -run '^$' -bench MuteExpiry ./store/sqlite/
func BenchmarkMuteExpiry(b *testing.B) {
	s := newStore(b, nil)
	if err := storetest.BuildMemberPageFixture(context.Background(), s); err != nil {
		b.Fatal(err)
	}
	storetest.BenchMuteExpiry(b, s)
}

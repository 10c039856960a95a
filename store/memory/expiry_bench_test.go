package memory_test

import (
	"context"
	"testing"

	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/store/storetest"
)

// BenchmarkMuteExpiry measures the idle look of a mute expirer on 10,000
// channels (see storetest.BenchMuteExpiry):
//
//	go test -run '^$' -bench MuteExpiry ./store/memory/
func BenchmarkMuteExpiry(b *testing.B) {
	s := memory.New()
	defer s.Close()
	if err := storetest.BuildMemberPageFixture(context.Background(), s); err != nil {
		b.Fatal(err)
	}
	storetest.BenchMuteExpiry(b, s)
}

package stream

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
)

// BenchmarkOfferEvent is the follower's cost of one event with 1,000 live
// end users' subscriptions that it does not concern (a message in a
// channel where none of them is a member): what deciding, for each
// subscription, whether to queue the event and whether it ends the
// subscription costs, without the queueing. With access, each
// subscription carries an Access (indexed by user).
func BenchmarkOfferEvent(b *testing.B) {
	for _, access := range []bool{false, true} {
		b.Run("access="+strconv.FormatBool(access), func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			svc, err := chat.New(ctx, memory.New(), chat.Config{})
			if err != nil {
				b.Fatal(err)
			}
			h := New(svc, Config{})
			if err := h.Start(ctx); err != nil {
				b.Fatal(err)
			}
			defer func() { _ = h.Stop(context.Background()) }()
			for i := range 1000 {
				f := Filter{UserID: "u" + strconv.Itoa(i)}
				if access {
					f.Access = &chat.Access{UserID: f.UserID}
				}
				if _, err := h.Subscribe(ctx, f, nil); err != nil {
					b.Fatal(err)
				}
			}
			e := &chat.Event{Name: chat.EventMessageDidCreate, ChannelID: "elsewhere", Data: json.RawMessage(`{}`)}
			h.mu.Lock()
			defer h.mu.Unlock()
			base := h.last
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				e.ID = base + int64(i) + 1
				h.offer(e)
			}
		})
	}
}

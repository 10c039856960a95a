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

// BenchmarkOfferSpread is the follower's cost of one message event with
// subs end users' subscriptions open in channels of 10 members, the
// messages going to every channel in turn (so that with many
// subscriptions each event's recipients are cold in the CPU caches): the
// index look-up, the 10 admissions and the 10 queueings, without the
// receivers (the queues are emptied outside the timer's concern, by
// taking the frame back after each offer).
func BenchmarkOfferSpread(b *testing.B) {
	for _, subs := range []int{100, 20000} {
		b.Run("subs="+strconv.Itoa(subs), func(b *testing.B) {
			const size = 10
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			svc, err := chat.New(ctx, memory.New(), chat.Config{})
			if err != nil {
				b.Fatal(err)
			}
			admin, _, err := svc.CreateAdmin(ctx, "", "ops", "")
			if err != nil {
				b.Fatal(err)
			}
			chans := subs / size
			for c := range chans {
				members := make([]string, size)
				for i := range members {
					members[i] = "u" + strconv.Itoa(c*size+i)
				}
				if _, err := svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "c" + strconv.Itoa(c), Type: chat.ChannelTypeStandard, UserIDs: members}); err != nil {
					b.Fatal(err)
				}
			}
			h := New(svc, Config{})
			if err := h.Start(ctx); err != nil {
				b.Fatal(err)
			}
			defer func() { _ = h.Stop(context.Background()) }()
			bySub := make([][]*Subscription, chans)
			for u := range subs {
				s, err := h.Subscribe(ctx, Filter{UserID: "u" + strconv.Itoa(u)}, nil)
				if err != nil {
					b.Fatal(err)
				}
				bySub[u/size] = append(bySub[u/size], s)
			}
			es := make([]*chat.Event, chans)
			for c := range es {
				es[c] = &chat.Event{Name: chat.EventMessageDidCreate, ChannelID: "c" + strconv.Itoa(c), Data: json.RawMessage(`{"messages":[{"text":"hello"}]}`)}
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			base := h.last
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c := i % chans
				e := es[c]
				e.ID = base + int64(i) + 1
				h.offer(e)
				for _, s := range bySub[c] {
					if _, ok := s.dequeue(); !ok {
						b.Fatal("not queued")
					}
					<-s.ready
				}
			}
		})
	}
}

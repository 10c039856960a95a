package stream_test

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/stream"
)

func benchService(b *testing.B) (*chat.Service, string) {
	ctx := context.Background()
	svc, err := chat.New(ctx, memory.New(), chat.Config{})
	if err != nil {
		b.Fatal(err)
	}
	admin, _, err := svc.CreateAdmin(ctx, "ops", "")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := svc.CreateChannel(ctx, admin.UserID, chat.CreateChannel{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice"}}); err != nil {
		b.Fatal(err)
	}
	return svc, admin.UserID
}

func benchPost(b *testing.B, svc *chat.Service) {
	if _, err := svc.CreateMessage(context.Background(), "alice", chat.CreateMessage{ChannelID: "c", Type: chat.MessageTypeText, Data: chat.TextData("hello")}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPostCeiling is the ceiling of BenchmarkFanout1000: posting one
// message with no subscriber (the commit alone, memory store).
func BenchmarkPostCeiling(b *testing.B) {
	svc, _ := benchService(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		benchPost(b, svc)
	}
}

// BenchmarkFanout1000 posts one message at a time to 1,000 in-process
// subscribers (one goroutine each, as a connection has) and measures the
// time from the post to the last subscriber's receipt: p50 and p99.
func BenchmarkFanout1000(b *testing.B) {
	const subs = 1000
	svc, _ := benchService(b)
	hub := stream.New(svc, stream.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := hub.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = hub.Stop(context.Background()) }()
	var got sync.WaitGroup
	for i := 0; i < subs; i++ {
		s, err := hub.Subscribe(ctx, stream.Filter{Admin: true}, nil)
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			for {
				if _, err := s.Next(ctx); err != nil {
					return
				}
				got.Done()
			}
		}()
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got.Add(subs)
		t0 := time.Now()
		benchPost(b, svc)
		got.Wait()
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkFanout1000Users is BenchmarkFanout1000 with 1,000 end users'
// subscriptions, each user a member of the channel: each event is
// admitted by membership. In the access case each subscription carries
// its user token's Access (as the API's streams do), so that it is
// indexed by user and ends with its access.
func BenchmarkFanout1000Users(b *testing.B) {
	b.Run("plain", func(b *testing.B) { benchFanoutUsers(b, false) })
	b.Run("access", func(b *testing.B) { benchFanoutUsers(b, true) })
}

func benchFanoutUsers(b *testing.B, access bool) {
	const subs = 1000
	svc, admin := benchService(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	users := make([]string, subs)
	for i := range users {
		users[i] = "u" + strconv.Itoa(i)
	}
	if _, err := svc.AddUsers(ctx, admin, "c", users); err != nil {
		b.Fatal(err)
	}
	hub := stream.New(svc, stream.Config{})
	if err := hub.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = hub.Stop(context.Background()) }()
	var got sync.WaitGroup
	for _, u := range users {
		f := stream.Filter{UserID: u}
		if access {
			f.Access = &chat.Access{UserID: u}
		}
		s, err := hub.Subscribe(ctx, f, nil)
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			for {
				if _, err := s.Next(ctx); err != nil {
					return
				}
				got.Done()
			}
		}()
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got.Add(subs)
		t0 := time.Now()
		benchPost(b, svc)
		got.Wait()
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkIdleSubscription reports the heap held by an idle
// subscription (its queue and state; no connection).
func BenchmarkIdleSubscription(b *testing.B) {
	svc, _ := benchService(b)
	hub := stream.New(svc, stream.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := hub.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = hub.Stop(context.Background()) }()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	subs := make([]*stream.Subscription, b.N)
	for i := range subs {
		s, err := hub.Subscribe(ctx, stream.Filter{Admin: true}, nil)
		if err != nil {
			b.Fatal(err)
		}
		subs[i] = s
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "heap-B/sub")
	runtime.KeepAlive(subs)
}

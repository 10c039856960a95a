package stream_test

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
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
	admin, _, err := svc.CreateAdmin(ctx, "", "ops", "")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice"}}); err != nil {
		b.Fatal(err)
	}
	return svc, admin.UserID
}

func benchPost(b *testing.B, svc *chat.Service) {
	if _, err := svc.CreateMessage(context.Background(), "alice", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: chat.TextData("hello")}); err != nil {
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

// BenchmarkFanoutChannels measures the cost of one message as the number
// of subscribers grows while its recipients do not: subs end users'
// subscriptions (one goroutine each, as a connection has), in channels of
// 10 members. Each iteration posts one message and waits until the 10
// members of its channel received it; ns/op is that time, from the post
// to the last receipt. In "one" every message goes to the same channel,
// so only the number of other subscribers varies; in "spread" the
// messages go to every channel in turn, so that with many subscribers
// each message's recipients (their state, their goroutines) are cold in
// the CPU caches. "post" is the ceiling of "spread": the same posts to
// the same channels, with no hub.
func BenchmarkFanoutChannels(b *testing.B) {
	for _, mode := range []string{"one", "spread", "post"} {
		for _, subs := range []int{100, 1000, 10000, 20000} {
			b.Run(mode+"/subs="+strconv.Itoa(subs), func(b *testing.B) { benchFanoutChannels(b, subs, mode) })
		}
	}
}

func benchFanoutChannels(b *testing.B, subs int, mode string) {
	const size = 10
	svc, admin := benchService(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	chans := subs / size
	for c := 0; c < chans; c++ {
		members := make([]string, size)
		for i := range members {
			members[i] = "u" + strconv.Itoa(c*size+i)
		}
		if _, err := svc.CreateChannel(ctx, admin, chat.CreateChannelInput{ChannelID: "c" + strconv.Itoa(c), Type: chat.ChannelTypeStandard, UserIDs: members}); err != nil {
			b.Fatal(err)
		}
	}
	var got sync.WaitGroup
	if mode != "post" {
		hub := stream.New(svc, stream.Config{})
		if err := hub.Start(ctx); err != nil {
			b.Fatal(err)
		}
		defer func() { _ = hub.Stop(context.Background()) }()
		for u := 0; u < subs; u++ {
			s, err := hub.Subscribe(ctx, stream.Filter{UserID: "u" + strconv.Itoa(u)}, nil)
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
	}
	lat := make([]time.Duration, 0, b.N)
	runtime.GC()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		c := 0
		if mode != "one" {
			c = i % chans
		}
		if mode != "post" {
			got.Add(size)
		}
		t0 := time.Now()
		if _, err := svc.CreateMessage(ctx, "u"+strconv.Itoa(c*size), chat.CreateMessageInput{ChannelID: "c" + strconv.Itoa(c), Type: chat.MessageTypeText, Data: chat.TextData("hello")}); err != nil {
			b.Fatal(err)
		}
		got.Wait()
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	// The CPU time of the whole process per message (the post, the
	// follower, the 10 receivers and the collector): on a loaded machine
	// the wall time follows the scheduler more than the work.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
}

// cpuTime is the user and system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package stream

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
)

// BenchmarkFanoutStreams is the spread case of BenchmarkFanoutChannels
// (subs end users' subscriptions in channels of 10, each message to the
// next channel in turn, timed from the post to the 10th receipt) with the
// delivery of the WebSocket streams (wsStream) instead of Next: each
// subscription has one parked goroutine (a connection's reader), and the
// hub's kick starts a writer goroutine when it queues a frame, which takes
// what is queued and exits. The socket write is left out.
func BenchmarkFanoutStreams(b *testing.B) {
	for _, subs := range []int{100, 1000, 10000, 20000} {
		b.Run("subs="+strconv.Itoa(subs), func(b *testing.B) { benchFanoutStreams(b, subs) })
	}
}

// benchConn is the writing side of a wsStream without its socket.
type benchConn struct {
	s       *Subscription
	got     *sync.WaitGroup
	mu      sync.Mutex
	running bool
	pending bool
}

func (c *benchConn) kick() {
	c.mu.Lock()
	if c.running {
		c.pending = true
		c.mu.Unlock()
		return
	}
	c.running = true
	c.mu.Unlock()
	go c.pump()
}

func (c *benchConn) release() {
	c.mu.Lock()
	if c.pending {
		c.pending = false
		c.mu.Unlock()
		go c.pump()
		return
	}
	c.running = false
	c.mu.Unlock()
}

func (c *benchConn) pump() {
	for {
		for c.s.Err() == nil {
			f, ok := c.s.dequeue()
			if !ok {
				break
			}
			if len(f.JSON()) == 0 {
				panic("empty frame")
			}
			c.got.Done()
		}
		c.mu.Lock()
		if !c.pending {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.pending = false
		c.mu.Unlock()
	}
}

func benchFanoutStreams(b *testing.B, subs int) {
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
	var got sync.WaitGroup
	for u := range subs {
		c := &benchConn{got: &got, running: true}
		s, err := h.subscribe(ctx, Filter{UserID: "u" + strconv.Itoa(u)}, nil, c.kick)
		if err != nil {
			b.Fatal(err)
		}
		c.s = s
		go func() { <-s.Done() }() // the connection's reader, parked
		c.release()
	}
	lat := make([]time.Duration, 0, b.N)
	runtime.GC()
	b.ResetTimer()
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	for i := 0; i < b.N; i++ {
		c := i % chans
		got.Add(size)
		t0 := time.Now()
		if _, err := svc.CreateMessage(ctx, "u"+strconv.Itoa(c*size), chat.CreateMessageInput{ChannelID: "c" + strconv.Itoa(c), Type: chat.MessageTypeText, Data: chat.TextData("hello")}); err != nil {
			b.Fatal(err)
		}
		got.Wait()
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	var ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
}

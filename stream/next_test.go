package stream_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/stream"
)

type ctxKey struct{}

// nextAsync calls s.Next(ctx) in a goroutine and returns where its
// error arrives.
func nextAsync(s *stream.Subscription, ctx context.Context) <-chan error {
	res := make(chan error, 1)
	go func() {
		_, err := s.Next(ctx)
		res <- err
	}()
	return res
}

func waitErr(t *testing.T, res <-chan error) error {
	t.Helper()
	select {
	case err := <-res:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("Next did not return")
		return nil
	}
}

// TestNextEndsWithItsContext: Next returns when the context it waits
// with ends: the subscription's own context (which ends the
// subscription), a context sharing its cancellation, or another one
// (which leaves the subscription live).
func TestNextEndsWithItsContext(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memory.New(), stream.Config{})
	e.channel("c", "alice", "bob")
	for _, tc := range []struct {
		name string
		wait func(own context.Context) context.Context
	}{
		{"own", func(own context.Context) context.Context { return own }},
		{"derived", func(own context.Context) context.Context { return context.WithValue(own, ctxKey{}, 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			own, cancel := context.WithCancel(e.ctx)
			s, err := e.hub.Subscribe(own, stream.Filter{UserID: "alice"}, nil)
			require.NoError(t, err)
			res := nextAsync(s, tc.wait(own))
			cancel()
			require.ErrorIs(t, waitErr(t, res), context.Canceled)
			<-s.Done()
			require.ErrorIs(t, s.Err(), context.Canceled)
		})
	}
	t.Run("other", func(t *testing.T) {
		s := e.subscribe(stream.Filter{UserID: "bob"}, nil)
		other, cancel := context.WithCancel(context.Background())
		res := nextAsync(s, other)
		cancel()
		require.ErrorIs(t, waitErr(t, res), context.Canceled)
		require.NoError(t, s.Err())
		e.post("alice", "c", "still live")
		require.Equal(t, "still live", text(t, next(t, s)))
	})
}

// TestNextWaitersEnd: every Next waiting on one subscription returns
// when it ends, whichever context each waits with (the subscription's
// own, whose waits take a plain receive, or another).
func TestNextWaitersEnd(t *testing.T) {
	e := newEnv(t, memory.New(), stream.Config{})
	for _, end := range []string{"close", "cancel"} {
		t.Run(end, func(t *testing.T) {
			own, cancel := context.WithCancel(e.ctx)
			defer cancel()
			s, err := e.hub.Subscribe(own, stream.Filter{UserID: "alice"}, nil)
			require.NoError(t, err)
			other, cancelOther := context.WithCancel(context.Background())
			defer cancelOther()
			res := []<-chan error{nextAsync(s, own), nextAsync(s, own), nextAsync(s, own), nextAsync(s, other)}
			// End it once all four wait: three on ready alone, one in
			// a select.
			waitParked(t, map[string]int{"[chan receive": 3, "[select": 1})
			want := stream.ErrClosed
			if end == "close" {
				s.Close()
			} else {
				cancel()
				want = context.Canceled
			}
			for _, r := range res {
				require.ErrorIs(t, waitErr(t, r), want)
			}
		})
	}
}

// waitParked waits until the goroutines started by nextAsync that are
// blocked in Next number want[state] for each goroutine state, as the
// runtime's goroutine dump reports them.
func waitParked(t *testing.T, want map[string]int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		got := map[string]int{}
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			if !strings.Contains(g, "stream_test.nextAsync") || !strings.Contains(g, "stream.(*Subscription).next") {
				continue
			}
			for state := range want {
				if strings.Contains(g, state) {
					got[state]++
				}
			}
		}
		done := true
		for state, n := range want {
			done = done && got[state] >= n
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting in Next: %v, want %v", got, want)
		}
		runtime.Gosched()
	}
}

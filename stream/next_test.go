package stream_test

import (
	"context"
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

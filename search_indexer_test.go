package chat_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
)

// backlogStore is a store whose search index trails: IndexSearch takes at
// most max of its backlog and reports each call's count on calls.
type backlogStore struct {
	chat.Store
	backlog int
	fail    int // calls that fail first
	calls   chan int
}

func (s *backlogStore) IndexSearch(ctx context.Context, max int) (int, error) {
	if s.fail > 0 {
		s.fail--
		s.calls <- -1
		return 0, errors.New("store unavailable")
	}
	n := min(s.backlog, max)
	s.backlog -= n
	s.calls <- n
	return n, nil
}

// TestIndexerCatchesUpInFullBatches: a backlog is read in batches of
// Config.Batch, one after the other without waiting Interval while they
// come back full; the first short batch ends the run of calls.
func TestIndexerCatchesUpInFullBatches(t *testing.T) {
	t.Parallel()
	s := &backlogStore{Store: memory.New(), backlog: 2500, calls: make(chan int, 16)}
	x := chat.NewIndexer(s, chat.IndexerConfig{Interval: time.Hour, Batch: 1000})
	require.NoError(t, x.Start(context.Background()))
	require.Error(t, x.Start(context.Background()), "started twice")
	// An Interval of an hour: only full batches bring the next call.
	for _, want := range []int{1000, 1000, 500} {
		require.Equal(t, want, <-s.calls)
	}
	require.NoError(t, x.Stop(context.Background()))
	require.NoError(t, x.Stop(context.Background()), "stopped twice")
	require.Empty(t, s.calls, "no call after the short batch")
	require.Zero(t, s.backlog)
	require.Error(t, x.Start(context.Background()), "started after Stop")
}

// TestIndexerRetriesAfterError: a failing call is logged and the store is
// asked again after Interval.
func TestIndexerRetriesAfterError(t *testing.T) {
	t.Parallel()
	s := &backlogStore{Store: memory.New(), backlog: 3, fail: 1, calls: make(chan int, 16)}
	x := chat.NewIndexer(s, chat.IndexerConfig{Interval: time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, x.Start(context.Background()))
	require.Equal(t, -1, <-s.calls, "the failing call")
	require.Equal(t, 3, <-s.calls, "asked again")
	require.NoError(t, x.Stop(context.Background()))
}

// TestIndexerWithoutTrailingIndex: with a store that indexes in the
// transaction of the write (the memory store), an Indexer starts and stops
// and does nothing.
func TestIndexerWithoutTrailingIndex(t *testing.T) {
	t.Parallel()
	x := chat.NewIndexer(memory.New(), chat.IndexerConfig{})
	require.NoError(t, x.Stop(context.Background()), "Stop before Start")
	x = chat.NewIndexer(memory.New(), chat.IndexerConfig{})
	require.NoError(t, x.Start(context.Background()))
	require.NoError(t, x.Stop(context.Background()))
}

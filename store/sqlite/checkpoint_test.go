package sqlite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// autoCheckpoint reads the write connection's wal_autocheckpoint.
func autoCheckpoint(t *testing.T, s *Store) int {
	t.Helper()
	s.wlock.Lock()
	defer s.wlock.Unlock()
	var n int
	require.NoError(t, s.wconn.QueryRowContext(context.Background(), "PRAGMA wal_autocheckpoint").Scan(&n))
	return n
}

// The checkpointer copies what commits add to the log into the database
// file, on its own connection; the writer's automatic checkpoint is moved
// out of the way (10,000 pages). Close stops the checkpointer.
func TestCheckpointerCopiesTheLog(t *testing.T) {
	t.Parallel()
	s := newStore(t, &Options{CheckpointDelay: 5 * time.Millisecond})
	require.Equal(t, 10000, autoCheckpoint(t, s))
	for i := range 50 {
		appendEvents(t, s, fmt.Sprintf("e%d", i))
	}
	// Every commit is followed by a checkpoint within CheckpointDelay
	// (and the time to run it): wait for one that found the whole log
	// copied.
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := s.Stats()
		if st.Checkpoints > 0 && st.LastCheckpoint.LogPages > 0 && st.LastCheckpoint.DonePages == st.LastCheckpoint.LogPages {
			break
		}
		require.True(t, time.Now().Before(deadline), "no complete checkpoint: %+v", st)
		time.Sleep(time.Millisecond)
	}
	// The events are all there.
	require.Len(t, readLog(t, s, 0), 50)

	require.NoError(t, s.Close())
	select {
	case <-s.ckptDone:
	default:
		t.Fatal("Close returned before the checkpointer stopped")
	}
}

// With a negative CheckpointDelay the writer checkpoints as SQLite does by
// default (every 1,000 pages of log) and there is no checkpointer.
func TestCheckpointerOff(t *testing.T) {
	t.Parallel()
	s := newStore(t, &Options{CheckpointDelay: -1})
	require.Equal(t, 1000, autoCheckpoint(t, s))
	appendEvents(t, s, "e1", "e2")
	select {
	case <-s.ckptDone:
	default:
		t.Fatal("a checkpointer runs")
	}
	require.Zero(t, s.Stats().Checkpoints)
}

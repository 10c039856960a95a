package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

func testEvent(name string) *chat.Event {
	return &chat.Event{Name: name, ChannelID: "c", UserIDs: []string{"u"},
		Data: []byte(fmt.Sprintf(`{"n":%q}`, name)), CreatedAt: chat.NewTime(t0)}
}

func appendEvents(t *testing.T, s *Store, names ...string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error {
		es := make([]*chat.Event, len(names))
		for i, n := range names {
			es[i] = testEvent(n)
		}
		return tx.AppendEvents(ctx, es)
	}))
}

func readLog(t *testing.T, s *Store, after int64) []*chat.Event {
	t.Helper()
	ctx := context.Background()
	var es []*chat.Event
	require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
		var err error
		es, err = tx.ReadEvents(ctx, after, 0)
		return err
	}))
	return es
}

func names(es []*chat.Event) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Name
	}
	return out
}

// The events a store committed are served from memory as the log holds
// them; what was rolled back never is, even when its id is given again.
func TestRecentEvents(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx := context.Background()
	require.Nil(t, s.RecentEvents(0, 10), "nothing committed")

	appendEvents(t, s, "a", "b", "c")
	got := s.RecentEvents(0, 0)
	require.Equal(t, readLog(t, s, 0), got, "as the log holds them")
	require.Equal(t, []string{"a", "b", "c"}, names(got))
	require.Equal(t, []string{"b"}, names(s.RecentEvents(1, 1)), "limit")
	require.Nil(t, s.RecentEvents(3, 10), "nothing after the last")

	// Copies: changing what was returned changes nothing held.
	got[0].Name = "changed"
	require.Equal(t, "a", s.RecentEvents(0, 1)[0].Name)

	// A transaction that fails after appending: its event is not kept,
	// and the id it had goes to the next committed event.
	boom := errors.New("boom")
	require.ErrorIs(t, s.Update(ctx, func(tx chat.Tx) error {
		if err := tx.AppendEvents(ctx, []*chat.Event{testEvent("rolled back")}); err != nil {
			return err
		}
		return boom
	}), boom)
	require.Nil(t, s.RecentEvents(3, 10))
	appendEvents(t, s, "d")
	require.Equal(t, readLog(t, s, 3), s.RecentEvents(3, 10))
	require.Equal(t, []string{"d"}, names(s.RecentEvents(3, 10)))
}

// In a group commit the members that fail leave no event behind, and the
// store holds exactly the log.
func TestRecentEventsGroupCommit(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx := context.Background()
	const n = 60
	var wg sync.WaitGroup
	// The updates queue while another holds the write connection, so
	// that they are committed in groups.
	require.NoError(t, s.Update(ctx, func(chat.Tx) error {
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = s.Update(ctx, func(tx chat.Tx) error {
					if err := tx.AppendEvents(ctx, []*chat.Event{testEvent(fmt.Sprintf("e%02d", i))}); err != nil {
						return err
					}
					if i%3 == 1 {
						return fmt.Errorf("boom %d", i)
					}
					return nil
				})
			}()
		}
		for len(s.reqs) < 2 {
			runtime.Gosched()
		}
		return nil
	}))
	wg.Wait()
	log := readLog(t, s, 0)
	require.Len(t, log, n-n/3)
	require.Equal(t, log, s.RecentEvents(0, 0))
	for _, e := range log {
		var k int
		_, err := fmt.Sscanf(e.Name, "e%02d", &k)
		require.NoError(t, err)
		require.NotEqual(t, 1, k%3, "a failed member's event")
	}
}

// Events of another process sharing the file are never held: a read
// stops before the first of them, and the log has the rest.
func TestRecentEventsOtherProcess(t *testing.T) {
	t.Parallel()
	requireCgo(t)
	path := filepath.Join(t.TempDir(), "chat.db")
	open := func() *Store {
		s, err := Open(context.Background(), path, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	a, b := open(), open()
	appendEvents(t, a, "a1", "a2") // ids 1, 2
	appendEvents(t, b, "b3")       // id 3
	appendEvents(t, a, "a4")       // id 4
	require.Equal(t, []string{"a1", "a2"}, names(a.RecentEvents(0, 0)), "stops before b's event")
	require.Nil(t, a.RecentEvents(2, 0), "b's event is not held")
	require.Equal(t, []string{"a4"}, names(a.RecentEvents(3, 0)))
	require.Equal(t, []string{"b3"}, names(b.RecentEvents(2, 0)))
	require.Nil(t, b.RecentEvents(0, 0))
	require.Equal(t, []string{"a1", "a2", "b3", "a4"}, names(readLog(t, a, 0)))
}

// The store holds the latest recentSlots events: older ones are read
// from the log.
func TestRecentEventsBounded(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	batch := make([]string, 4) // recentSlots+100 is a multiple
	for i := 0; i < recentSlots+100; i += len(batch) {
		for j := range batch {
			batch[j] = fmt.Sprintf("e%d", i+j+1)
		}
		appendEvents(t, s, batch...)
	}
	last := int64(recentSlots + 100)
	require.Nil(t, s.RecentEvents(0, 0), "the first events were replaced")
	require.Nil(t, s.RecentEvents(99, 0))
	got := s.RecentEvents(100, 0)
	require.Len(t, got, recentSlots)
	require.Equal(t, readLog(t, s, 100), got)
	require.Equal(t, last, got[len(got)-1].ID)
}

// An event whose data is larger than recentMaxData is not held: a read
// stops before it, and the log has it.
func TestRecentEventsLargeData(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx := context.Background()
	big := &chat.Event{Name: "big", ChannelID: "c", Data: []byte(`"` + strings.Repeat("x", recentMaxData) + `"`), CreatedAt: chat.NewTime(t0)}
	appendEvents(t, s, "a")
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error { return tx.AppendEvents(ctx, []*chat.Event{big}) }))
	appendEvents(t, s, "c")
	require.Equal(t, []string{"a"}, names(s.RecentEvents(0, 0)), "stops before the large event")
	require.Nil(t, s.RecentEvents(1, 0))
	require.Equal(t, []string{"c"}, names(s.RecentEvents(2, 0)))
	require.Equal(t, []string{"a", "big", "c"}, names(readLog(t, s, 0)))
}

// A reader woken by the store's signal of a commit finds the commit's
// events in memory: they are kept before the signal.
func TestRecentEventsBeforeSignal(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ch, err := s.WatchEvents(ctx)
	require.NoError(t, err)
	for i := range 20 {
		done := make(chan error, 1)
		go func() {
			done <- s.Update(ctx, func(tx chat.Tx) error {
				return tx.AppendEvents(ctx, []*chat.Event{testEvent(fmt.Sprintf("e%d", i))})
			})
		}()
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatal("no signal")
		}
		es := s.RecentEvents(int64(i), 0)
		require.Len(t, es, 1, "event %d", i+1)
		require.Equal(t, int64(i+1), es[0].ID)
		require.NoError(t, <-done)
	}
}

package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/internal/pgtest"
)

// relayStores opens n stores on one fresh schema, standing for n
// processes.
func relayStores(t *testing.T, n int) []*Store {
	t.Helper()
	dsn := pgtest.URL(t)
	schema := pgtest.SchemaName()
	ctx := context.Background()
	t.Cleanup(func() {
		db, err := sql.Open("postgres", dsn)
		if err == nil {
			_, _ = db.Exec("DROP SCHEMA IF EXISTS " + pq.QuoteIdentifier(schema) + " CASCADE")
			db.Close()
		}
	})
	var out []*Store
	for range n {
		s, err := Open(ctx, dsn, &Options{Schema: schema, MaxOpenConns: 8})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		out = append(out, s)
	}
	return out
}

func relayEvent(name string) *chat.Event {
	return &chat.Event{Name: name, ChannelID: "c", Data: json.RawMessage(`{}`), CreatedAt: chat.NewTime(time.Now())}
}

// orphan commits a pending row as a process would that died between its
// commit and its relay pass, and returns its key.
func orphan(t *testing.T, s *Store, name string) int64 {
	t.Helper()
	var seq int64
	require.NoError(t, s.db.QueryRow(`INSERT INTO `+s.prefix+`events_pending (name, channel_id, user_ids, data, created_at)
		VALUES ($1, 'c', '[]', '{}', now()) RETURNING seq`, name).Scan(&seq))
	return seq
}

// TestRelayOrphanMovedByPoll: events committed by a process that ended
// before relaying them are moved by another process's poll, which starts
// with its first Watch call, and the move signals its event watchers.
func TestRelayOrphanMovedByPoll(t *testing.T) {
	t.Parallel()
	ss := relayStores(t, 1)
	s := ss[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	orphan(t, s, "left.behind")
	ch, err := s.WatchEvents(ctx)
	require.NoError(t, err)
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatal("the orphaned event was not relayed")
	}
	var es []*chat.Event
	require.NoError(t, s.View(ctx, func(tx chat.Tx) (err error) { es, err = tx.ReadEvents(ctx, 0, 0); return }))
	require.Len(t, es, 1)
	require.Equal(t, "left.behind", es[0].Name)
	require.Equal(t, int64(1), es[0].ID)
}

// TestRelayIDsMovedByAnotherProcess: when another process's pass moved a
// writer's rows, the writer reads their ids back by key.
func TestRelayIDsMovedByAnotherProcess(t *testing.T) {
	t.Parallel()
	ss := relayStores(t, 2)
	a, b := ss[0], ss[1]
	ctx := context.Background()
	seq := orphan(t, a, "first") // committed by "a", not relayed yet
	e := relayEvent("second")
	require.NoError(t, b.Update(ctx, func(tx chat.Tx) error { return tx.AppendEvents(ctx, []*chat.Event{e}) }))
	require.Equal(t, int64(2), e.ID, "b's pass moved a's row first, in key order")
	ids, err := a.relayFor(ctx, []int64{seq}, 0)
	require.NoError(t, err)
	require.Equal(t, []int64{1}, ids)
}

// TestRelayAcrossProcesses: writers in three processes append at once
// while a reader follows the log: every id becomes visible in order
// (contiguous, since nothing rolls back), each writer's events get the ids
// they are read with, and no event is lost or doubled.
func TestRelayAcrossProcesses(t *testing.T) {
	t.Parallel()
	ss := relayStores(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const writers, each = 6, 30
	var wg sync.WaitGroup
	var mu sync.Mutex
	given := map[string]int64{}
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := ss[w%len(ss)]
			for i := range each {
				e := relayEvent(strconv.Itoa(w) + "." + strconv.Itoa(i))
				if err := s.Update(ctx, func(tx chat.Tx) error { return tx.AppendEvents(ctx, []*chat.Event{e}) }); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				given[e.Name] = e.ID
				mu.Unlock()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	seen := map[string]int64{}
	var last int64
	for finished := false; !finished || last < writers*each; {
		select {
		case <-done:
			finished = true
		default:
		}
		var es []*chat.Event
		require.NoError(t, ss[0].View(ctx, func(tx chat.Tx) (err error) { es, err = tx.ReadEvents(ctx, last, 0); return }))
		for _, e := range es {
			require.Equal(t, last+1, e.ID, "ids become visible in order")
			last = e.ID
			_, dup := seen[e.Name]
			require.False(t, dup, "event %s read twice", e.Name)
			seen[e.Name] = e.ID
		}
		require.NoError(t, ctx.Err())
	}
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, seen, writers*each)
	require.Equal(t, given, seen, "the ids set by Update are the ids read")
}

package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// requireCgo skips the test, saying why, in a program built without cgo,
// where the SQLite driver does not work (see ErrNeedsCgo). With cgo it does
// nothing, so every SQLite test runs in CI.
func requireCgo(tb testing.TB) {
	tb.Helper()
	if err := needsCgo(); err != nil {
		tb.Skip(err.Error())
	}
}

// newStore opens a fresh store in a temporary directory.
func newStore(t testing.TB, opt *Options) *Store {
	t.Helper()
	requireCgo(t)
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "chat.db"), opt)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

var t0 = time.Date(2024, 5, 6, 7, 8, 9, 123_456_789, time.UTC)

func testChannel(id string) *chat.Channel {
	now := chat.NewTime(t0)
	return &chat.Channel{ChannelID: id, Type: chat.ChannelTypeStandard, DisplayName: id,
		LastActivity: now, CreatedAt: now, UpdatedAt: now}
}

// postMessage allocates the next segment of channelID and creates a
// message there, as the Service does.
func postMessage(ctx context.Context, tx chat.Tx, channelID, id, text string) (*chat.Message, error) {
	c, err := tx.NextSegment(ctx, channelID, t0)
	if err != nil {
		return nil, err
	}
	now := chat.NewTime(t0)
	m := &chat.Message{MessageID: id, ChannelID: channelID, UserID: "u1", Type: chat.MessageTypeText,
		Data: map[string]any{"text": text}, ChannelSegment: c.MessageCount, CreatedAt: now, UpdatedAt: now}
	return m, tx.CreateMessage(ctx, m)
}

func TestOpenOptions(t *testing.T) {
	t.Parallel()
	requireCgo(t)
	ctx := context.Background()
	dir := t.TempDir()
	_, err := Open(ctx, filepath.Join(dir, "a.db"), &Options{Synchronous: "OFF"})
	require.ErrorIs(t, err, chat.ErrBadRequest)
	_, err = Open(ctx, ":memory:", nil)
	require.ErrorIs(t, err, chat.ErrBadRequest)

	s, err := Open(ctx, filepath.Join(dir, "odd?name#%.db"), &Options{Synchronous: "normal"})
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, "NORMAL", s.opt.Synchronous)
	require.Equal(t, 5*time.Second, s.opt.BusyTimeout)
	require.GreaterOrEqual(t, s.opt.MaxReadConns, 4)

	var mode string
	require.NoError(t, s.rdb.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode))
	require.Equal(t, "wal", mode)
	var fk, qo int
	require.NoError(t, s.rdb.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk))
	require.Equal(t, 1, fk)
	require.NoError(t, s.rdb.QueryRowContext(ctx, "PRAGMA query_only").Scan(&qo))
	require.Equal(t, 1, qo)

	// The write connection syncs as configured: FULL is 2, NORMAL 1.
	var sync int
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error {
		return s.wconn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync)
	}))
	require.Equal(t, 1, sync)
	s2 := newStore(t, nil)
	require.NoError(t, s2.Update(ctx, func(tx chat.Tx) error {
		return s2.wconn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync)
	}))
	require.Equal(t, 2, sync, "the default is synchronous=FULL")
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	requireCgo(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "chat.db")
	s, err := Open(ctx, path, nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")

	db, err := sql.Open("sqlite3", path)
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, Migrate(ctx, db), "Migrate is idempotent")
	ms, err := migrations()
	require.NoError(t, err)
	var n int
	var latest int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT count(*), max(version) FROM schema_migrations").Scan(&n, &latest))
	require.Equal(t, len(ms), n)
	require.Equal(t, ms[len(ms)-1].Version, latest)

	// A database from a newer program is refused.
	_, err = db.ExecContext(ctx, "INSERT INTO schema_migrations (version, applied_at) VALUES (?, 'x')", latest+1)
	require.NoError(t, err)
	require.ErrorContains(t, Migrate(ctx, db), "newer")
	_, err = Open(ctx, path, nil)
	require.Error(t, err)
}

func TestTranslate(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error { return tx.CreateChannel(ctx, testChannel("c1")) }))
	err := s.Update(ctx, func(tx chat.Tx) error { return tx.CreateChannel(ctx, testChannel("c1")) })
	require.ErrorIs(t, err, chat.ErrConflict)
	err = s.View(ctx, func(tx chat.Tx) error { _, err := tx.GetChannel(ctx, "nope"); return err })
	require.ErrorIs(t, err, chat.ErrNotFound)
	// Writing in View fails (query_only) without crashing anything.
	err = s.View(ctx, func(tx chat.Tx) error { return tx.CreateChannel(ctx, testChannel("c2")) })
	require.Error(t, err)

	require.Nil(t, translate(nil))
	require.ErrorIs(t, translate(sql.ErrNoRows), chat.ErrNotFound)
	require.ErrorIs(t, translate(context.Canceled), context.Canceled)
	require.Equal(t, chat.CodeInternal, chat.ErrorCode(translate(errors.New("x"))))
	require.Equal(t, chat.CodeUnavailable, chat.ErrorCode(translate(sql.ErrConnDone)))
}

func TestTimesRoundTripAtMillisecond(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx := context.Background()
	c := testChannel("c1")
	c.CreatedAt = chat.Time{Time: t0.In(time.FixedZone("X", 3600))} // not UTC, sub-ms
	mute := chat.Forever
	c.MuteTimeout = &mute
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error { return tx.CreateChannel(ctx, c) }))
	var got *chat.Channel
	require.NoError(t, s.View(ctx, func(tx chat.Tx) (err error) { got, err = tx.GetChannel(ctx, "c1"); return err }))
	require.Equal(t, chat.NewTime(t0), got.CreatedAt)
	require.Equal(t, time.UTC, got.CreatedAt.Location())
	require.Equal(t, chat.Forever, *got.MuteTimeout)
	require.Nil(t, got.Metadata)
	require.Nil(t, got.Tags)
}

// TestGroupCommitIsolation runs many concurrent transactions, a third of
// which fail or panic, and checks that exactly the successful ones are
// committed and that failures leave no trace.
func TestGroupCommitIsolation(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error { return tx.CreateChannel(ctx, testChannel("c")) }))

	const n = 300
	var wg sync.WaitGroup
	var okCount atomic.Int64
	errs := make([]error, n)
	// The updates start while another holds the write connection, and it
	// lets go only once at least two of them wait in the queue: those are
	// then committed together, however the goroutines were scheduled.
	require.NoError(t, s.Update(ctx, func(chat.Tx) error {
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					if p := recover(); p != nil {
						errs[i] = fmt.Errorf("panic: %v", p)
					}
				}()
				errs[i] = s.Update(ctx, func(tx chat.Tx) error {
					if _, err := postMessage(ctx, tx, "c", fmt.Sprintf("m%03d", i), "x"); err != nil {
						return err
					}
					switch i % 3 {
					case 1:
						return fmt.Errorf("boom %d", i)
					case 2:
						if i%2 == 0 {
							panic(fmt.Sprintf("panic %d", i))
						}
						// A duplicate insert: a constraint error inside the savepoint.
						return tx.CreateChannel(ctx, testChannel("c"))
					}
					okCount.Add(1)
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
	st := s.Stats()
	require.Equal(t, okCount.Load()+2, st.Updates)
	require.Less(t, st.Commits, st.Updates, "concurrent updates share commits")
	t.Logf("%d updates in %d commits", st.Updates, st.Commits)
	for i, err := range errs {
		switch {
		case i%3 == 0:
			require.NoError(t, err, i)
		case i%3 == 1:
			require.EqualError(t, err, fmt.Sprintf("boom %d", i))
		case i%2 == 0:
			require.EqualError(t, err, fmt.Sprintf("panic: panic %d", i))
		default:
			require.ErrorIs(t, err, chat.ErrConflict)
		}
	}
	require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
		c, err := tx.GetChannel(ctx, "c")
		require.NoError(t, err)
		require.Equal(t, okCount.Load(), c.MessageCount, "only committed transactions count")
		ms, err := tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: "c"})
		require.NoError(t, err)
		require.Len(t, ms, int(okCount.Load()))
		for i, m := range ms {
			require.Equal(t, int64(i+1), m.ChannelSegment, "segments are gapless")
			var k int
			_, err := fmt.Sscanf(m.MessageID, "m%03d", &k)
			require.NoError(t, err)
			require.Equal(t, 0, k%3)
		}
		return nil
	}))
}

func TestUpdateContext(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error { return tx.CreateChannel(ctx, testChannel("c")) }))

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	ran := false
	err := s.Update(cctx, func(tx chat.Tx) error { ran = true; return nil })
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, ran)

	// Cancelled while fn runs: later statements fail, the writes are undone.
	cctx, cancel = context.WithCancel(ctx)
	err = s.Update(cctx, func(tx chat.Tx) error {
		if _, err := postMessage(cctx, tx, "c", "m1", "x"); err != nil {
			return err
		}
		cancel()
		_, err := postMessage(cctx, tx, "c", "m2", "x")
		return err
	})
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
		c, err := tx.GetChannel(ctx, "c")
		require.NoError(t, err)
		require.Zero(t, c.MessageCount)
		return nil
	}))

	// A Tx used after its function returned fails.
	var leaked chat.Tx
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error { leaked = tx; return nil }))
	_, err = leaked.GetChannel(ctx, "c")
	require.Error(t, err)
}

func TestClosedStore(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx := context.Background()
	w, err := s.WatchOutbox(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, open := <-w
	require.False(t, open, "Close closes watcher channels")
	require.ErrorIs(t, s.Update(ctx, func(tx chat.Tx) error { return nil }), chat.ErrUnavailable)
	require.ErrorIs(t, s.View(ctx, func(tx chat.Tx) error { return nil }), chat.ErrUnavailable)
	_, err = s.WatchOutbox(ctx)
	require.ErrorIs(t, err, chat.ErrUnavailable)
}

func TestWatchOutbox(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := s.WatchOutbox(ctx)
	require.NoError(t, err)
	now := chat.NewTime(t0)
	d := &chat.Delivery{RequestID: "r1", WebhookID: "w", Event: chat.EventMessageDidCreate, Body: []byte("{}"),
		State: chat.DeliveryPending, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}
	// A rolled-back enqueue does not signal.
	_ = s.Update(ctx, func(tx chat.Tx) error {
		require.NoError(t, tx.EnqueueDeliveries(ctx, []*chat.Delivery{d}))
		return errors.New("no")
	})
	select {
	case <-w:
		t.Fatal("signal for a rolled-back enqueue")
	default:
	}
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error { return tx.EnqueueDeliveries(ctx, []*chat.Delivery{d}) }))
	select {
	case <-w:
	case <-time.After(5 * time.Second):
		t.Fatal("no signal after enqueue")
	}
	cancel()
	require.Eventually(t, func() bool {
		select {
		case _, open := <-w:
			return !open
		default:
			return false
		}
	}, 5*time.Second, time.Millisecond)
}

// TestGoexitInUpdate checks that a function that ends its goroutine (as
// t.FailNow does) neither kills the store nor hangs other callers.
func TestGoexitInUpdate(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error { return tx.CreateChannel(ctx, testChannel("c")) }))
	// Inline: the caller's goroutine ends, the transaction is rolled back
	// and the write connection released.
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Update(ctx, func(tx chat.Tx) error {
			if _, err := postMessage(ctx, tx, "c", "gone", "x"); err != nil {
				return err
			}
			runtime.Goexit()
			return nil
		})
	}()
	<-done
	// Queued behind a held write connection, so that the writer goroutine
	// runs them as one batch.
	hold, release := make(chan struct{}), make(chan struct{})
	go func() {
		_ = s.Update(ctx, func(tx chat.Tx) error { close(hold); <-release; return nil })
	}()
	<-hold
	var wg sync.WaitGroup
	errs := make([]error, 40)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Update(ctx, func(tx chat.Tx) error {
				if _, err := postMessage(ctx, tx, "c", fmt.Sprintf("m%d", i), "x"); err != nil {
					return err
				}
				if i%10 == 3 {
					runtime.Goexit()
				}
				return nil
			})
		}()
	}
	// The writer holds one request while it waits for the connection.
	queued := func() bool { return len(s.reqs) >= len(errs)-1 }
	for start := time.Now(); !queued() && time.Since(start) < 10*time.Second; {
		time.Sleep(time.Millisecond)
	}
	allQueued := queued() // before release: the writer drains the queue after it
	close(release)
	require.True(t, allQueued)
	wg.Wait()
	committed := 0
	for i, err := range errs {
		if i%10 == 3 {
			// Run by the writer goroutine, the caller gets errGoexit.
			require.ErrorIs(t, err, errGoexit)
			continue
		}
		if err == nil {
			committed++
		} else {
			require.ErrorIs(t, err, chat.ErrUnavailable, "only batch aborts are allowed")
		}
	}
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error {
		c, err := tx.GetChannel(ctx, "c")
		if err != nil {
			return err
		}
		if c.MessageCount != int64(committed) {
			return fmt.Errorf("messageCount %d, committed %d", c.MessageCount, committed)
		}
		return nil
	}))
}

// TestQueuedUpdateAbandoned checks that a queued Update whose context ends
// before its turn returns at once and never runs.
func TestQueuedUpdateAbandoned(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx := context.Background()
	hold, release := make(chan struct{}), make(chan struct{})
	go func() {
		_ = s.Update(ctx, func(tx chat.Tx) error {
			close(hold)
			<-release
			return tx.CreateChannel(ctx, testChannel("first"))
		})
	}()
	<-hold
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	ran := atomic.Bool{}
	err := s.Update(cctx, func(tx chat.Tx) error { ran.Store(true); return nil })
	require.ErrorIs(t, err, context.DeadlineExceeded)
	close(release)
	// The next Update runs after the first one committed.
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error {
		_, err := tx.GetChannel(ctx, "first")
		return err
	}))
	require.False(t, ran.Load(), "an abandoned Update must not run")
}

// TestViewReadConnections checks the read connection slots: a View waiting
// for a connection gives up when its context ends, a connection comes back
// after every View (including one whose function panicked), so later
// Views reuse it, and a View still running when the store closes finishes
// normally while later ones fail.
func TestViewReadConnections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, &Options{MaxReadConns: 1})
	must(t, s.Update(ctx, func(tx chat.Tx) error { return tx.CreateChannel(ctx, testChannel("c")) }))

	// Sequential Views, one of them panicking, all on the one connection.
	for i := 0; i < 5; i++ {
		if i == 2 {
			require.Panics(t, func() {
				_ = s.View(ctx, func(tx chat.Tx) error { panic("boom") })
			})
			continue
		}
		require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
			_, err := tx.GetChannel(ctx, "c")
			return err
		}))
	}

	// The only connection is taken: a waiting View ends with its context.
	held := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.View(ctx, func(tx chat.Tx) error {
			close(held)
			<-release
			_, err := tx.GetChannel(ctx, "c")
			return err
		})
	}()
	<-held
	cctx, cancel := context.WithCancel(ctx)
	waiting := make(chan error, 1)
	go func() {
		waiting <- s.View(cctx, func(tx chat.Tx) error { return errors.New("must not run") })
	}()
	cancel()
	require.ErrorIs(t, <-waiting, context.Canceled)

	// Close while the View holds the connection: the View completes, and
	// Views after Close fail with CodeUnavailable.
	require.NoError(t, s.Close())
	close(release)
	require.NoError(t, <-done)
	require.ErrorIs(t, s.View(ctx, func(tx chat.Tx) error { return nil }), chat.ErrUnavailable)
}

// Lookups by key run without watching the context (quickCtx), but a
// context that ended before the statement still stops it, inside a View
// as in an Update; unbounded statements keep watching it.
func TestKeyedLookupsCancelled(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error {
		if err := tx.CreateChannel(ctx, testChannel("c")); err != nil {
			return err
		}
		_, err := postMessage(ctx, tx, "c", "m1", "x")
		return err
	}))
	cctx, cancel := context.WithCancel(ctx)
	require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
		c, err := tx.GetChannel(cctx, "c")
		require.NoError(t, err)
		require.Equal(t, "c", c.ChannelID)
		ms, err := tx.QueryMessages(cctx, chat.MessageFilter{ChannelID: "c", Limit: 10})
		require.NoError(t, err)
		require.Len(t, ms, 1)
		cancel()
		for name, call := range map[string]func() error{
			"GetChannel": func() error { _, err := tx.GetChannel(cctx, "c"); return err },
			"GetMessage": func() error { _, err := tx.GetMessage(cctx, "m1"); return err },
			"GetUsers":   func() error { _, err := tx.GetUsers(cctx, []string{"u1"}); return err },
			"page": func() error {
				_, err := tx.QueryMessages(cctx, chat.MessageFilter{ChannelID: "c", Limit: 10})
				return err
			},
			"tagged page": func() error {
				_, err := tx.QueryMessages(cctx, chat.MessageFilter{ChannelID: "c", Tags: []string{"t"}, Limit: 10})
				return err
			},
			"version": func() error { _, err := tx.RulesVersion(cctx); return err },
		} {
			require.ErrorIs(t, call(), context.Canceled, name)
		}
		return nil
	}))
}

// Message rows read their JSON columns' empty values as NULL; what a
// message had (nil or empty tags and reactions, a zero or set hashflag)
// reads back as it was stored, through every read path.
func TestMessageEmptyValuesRoundTrip(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx := context.Background()
	now := chat.NewTime(t0)
	in := []*chat.Message{
		{MessageID: "empty", Tags: []string{}, Reactions: map[string]int{}},
		{MessageID: "nil"},
		{MessageID: "set", Tags: []string{"a", "b"}, Reactions: map[string]int{"like": 2},
			Hashflag: chat.Hashflag{Bits: 64, Hashes: 3, Hash: []uint32{1, 2}}},
		// Not the common values that read as NULL: another type, an
		// updatedAt after the createdAt.
		{MessageID: "custom", Type: chat.MessageTypeCustom, UpdatedAt: chat.NewTime(t0.Add(time.Hour))},
	}
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error {
		if err := tx.CreateChannel(ctx, testChannel("c")); err != nil {
			return err
		}
		for i, m := range in {
			m.ChannelID, m.UserID, m.ChannelSegment = "c", "u1", int64(i+1)
			if m.Type == "" {
				m.Type = chat.MessageTypeText
			}
			m.Data = map[string]any{"text": m.MessageID}
			m.CreatedAt = now
			if m.UpdatedAt.IsZero() {
				m.UpdatedAt = now
			}
			if err := tx.CreateMessage(ctx, m); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
		page, err := tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: "c", Limit: 10})
		require.NoError(t, err)
		byID, err := tx.GetMessages(ctx, []string{"empty", "nil", "set", "custom"})
		require.NoError(t, err)
		require.Len(t, page, len(in))
		require.Len(t, byID, len(in))
		got := map[string]*chat.Message{}
		for _, m := range byID {
			got[m.MessageID] = m
		}
		for i, m := range in {
			one, err := tx.GetMessage(ctx, m.MessageID)
			require.NoError(t, err)
			require.Equal(t, m, one, m.MessageID)
			require.Equal(t, m, page[i], m.MessageID)
			require.Equal(t, m, got[m.MessageID], m.MessageID)
		}
		// Each returned message is its own: changing one changes no other.
		page[0].Tags = append(page[0].Tags, "x")
		page[0].ChannelSegment = 99
		require.Empty(t, page[1].Tags)
		require.EqualValues(t, 2, page[1].ChannelSegment)
		return nil
	}))
}

// TestRawListOnStoreConnections checks that rawList reads through the
// driver connection in a View and in an Update (the store's connections,
// whatever type wraps them), not through database/sql's rows: the
// fallback scanner fails the test.
func TestRawListOnStoreConnections(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx := context.Background()
	viaRows := func(scanner) (string, error) { return "", errors.New("read through database/sql") }
	viaDriver := func(v []driver.Value) (string, error) { return fmt.Sprint(v[0]), nil }
	check := func(stx chat.Tx) error {
		got, err := rawList(stx.(*tx), ctx, viaDriver, viaRows, `SELECT ? UNION ALL SELECT ?`, "a", 7)
		if err != nil {
			return err
		}
		require.Equal(t, []string{"a", "7"}, got)
		return nil
	}
	require.NoError(t, s.View(ctx, check))
	require.NoError(t, s.Update(ctx, check))
}

// TestVersionsInGroupCommit checks the counters of the versions table
// that the Updates of one group commit read: each sees the bumps of the
// members committed before it in the transaction, and none of those of a
// member that failed (its savepoint rolled back), though a member before
// it read the counter already.
func TestVersionsInGroupCommit(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx := context.Background()
	now := chat.NewTime(t0)
	var v0 int64
	require.NoError(t, s.View(ctx, func(tx chat.Tx) (err error) {
		v0, err = tx.WebhooksVersion(ctx)
		return err
	}))
	read := func(got *int64) func(chat.Tx) error {
		return func(tx chat.Tx) (err error) {
			*got, err = tx.WebhooksVersion(ctx)
			return err
		}
	}
	bump := func(id string, fail bool) func(chat.Tx) error {
		return func(tx chat.Tx) error {
			if err := tx.CreateWebhook(ctx, &chat.Webhook{WebhookID: id, URL: "https://example.com/" + id, CreatedAt: now, UpdatedAt: now}); err != nil {
				return err
			}
			if v, err := tx.WebhooksVersion(ctx); err != nil || v != v0+1 {
				return fmt.Errorf("version after the bump %d, %v; want %d", v, err, v0+1)
			}
			if fail {
				return errors.New("rolled back")
			}
			return nil
		}
	}
	var first, afterFailed, afterBump int64
	fns := []func(chat.Tx) error{read(&first), bump("w1", true), read(&afterFailed), bump("w2", false), read(&afterBump)}
	commits := s.Stats().Commits
	// Queued in this order, from one goroutine, while an Update holds the
	// writer: the writer takes them in this order into one transaction.
	rs := make([]*request, len(fns))
	require.NoError(t, s.Update(ctx, func(chat.Tx) error {
		for i, fn := range fns {
			rs[i] = &request{ctx: ctx, fn: fn, done: make(chan struct{})}
			s.reqs <- rs[i]
		}
		return nil
	}))
	errs := make([]error, len(fns))
	for i, r := range rs {
		<-r.done
		errs[i] = r.err
	}
	require.Equal(t, commits+2, s.Stats().Commits, "the holder's commit, then one for the group")
	require.NoError(t, errs[0])
	require.EqualError(t, errs[1], "rolled back")
	require.NoError(t, errs[2])
	require.NoError(t, errs[3])
	require.NoError(t, errs[4])
	require.Equal(t, v0, first)
	require.Equal(t, v0, afterFailed, "the failed member's bump is rolled back")
	require.Equal(t, v0+1, afterBump)
	require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
		v, err := tx.WebhooksVersion(ctx)
		require.Equal(t, v0+1, v)
		return err
	}))
}

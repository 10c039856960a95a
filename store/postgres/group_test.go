package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/postgres"
)

// Tests of the write lane (group.go): batches, savepoints, pipelined
// commits over several connections, connection failures and idle release.

// openLaneStore opens a store over a fresh schema whose connections carry
// their own application_name, so a test can find (and kill) exactly them.
func openLaneStore(t *testing.T, opt postgres.Options) (*postgres.Store, string) {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	app := "chat_lane_" + hex.EncodeToString(b[:])
	u, err := url.Parse(testDSN(t))
	require.NoError(t, err)
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	opt.Schema = newSchema(t)
	s, err := postgres.Open(context.Background(), u.String(), &opt)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s, app
}

func appendTo(ctx context.Context, tx chat.Tx, id, channelID string) error {
	m := message(id, channelID, "u", 0)
	_, err := chat.AppendMessage(ctx, tx, m, time.Now())
	return err
}

// Many concurrent Updates form batches; the ones that fail (by returning
// an error after writing, or by a statement the server refuses) leave
// nothing behind, and the others are all committed with gapless segments.
func TestLaneBatchesIsolateFailures(t *testing.T) {
	t.Parallel()
	s, _ := openLaneStore(t, postgres.Options{MaxOpenConns: 8})
	require.Greater(t, s.LaneConns(), 1, "commits are pipelined over several connections")
	ctx := ctxT(t)
	for _, c := range []string{"a", "b", "c", "d"} {
		update(t, s, func(tx chat.Tx) error { return tx.CreateChannel(ctx, channel(c, at(0))) })
	}
	errFn := errors.New("fn failed")
	const n = 400
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ch := string(rune('a' + i%4))
			errs[i] = s.Update(ctx, func(tx chat.Tx) error {
				if err := appendTo(ctx, tx, "m"+strconv.Itoa(i), ch); err != nil {
					return err
				}
				switch i % 5 {
				case 1:
					return errFn
				case 2:
					// Refused by the server (duplicate channel): the
					// savepoint of this call is rolled back.
					return tx.CreateChannel(ctx, channel("a", at(0)))
				}
				return nil
			})
		}()
	}
	wg.Wait()
	want := map[string]int64{}
	for i, err := range errs {
		id := "m" + strconv.Itoa(i)
		switch i % 5 {
		case 1:
			require.ErrorIs(t, err, errFn, id)
		case 2:
			require.Equal(t, chat.CodeConflict, chat.ErrorCode(err), "%s: %v", id, err)
		default:
			require.NoError(t, err, id)
			want[string(rune('a'+i%4))]++
		}
	}
	view(t, s, func(tx chat.Tx) error {
		for ch, count := range want {
			c, err := tx.GetChannel(ctx, ch)
			require.NoError(t, err)
			require.Equal(t, count, c.MessageCount, "channel %s", ch)
			ms, err := tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: ch})
			require.NoError(t, err)
			require.Len(t, ms, int(count))
			for j, m := range ms {
				require.EqualValues(t, j+1, m.ChannelSegment, "gapless in %s", ch)
				i, _ := strconv.Atoi(m.MessageID[1:])
				require.Contains(t, []int{0, 3, 4}, i%5, "only successful calls are stored: %s", m.MessageID)
			}
		}
		return nil
	})
}

// Transactions that lock two rows in opposite orders never deadlock inside
// one Store: only one batch at a time runs its functions, and a batch whose
// COMMIT is in flight waits for no lock. Retries are off, so a deadlock
// (or any retried conflict) would surface as an error.
func TestLaneOppositeLockOrders(t *testing.T) {
	t.Parallel()
	s, _ := openLaneStore(t, postgres.Options{MaxOpenConns: 8, Retries: -1})
	ctx := ctxT(t)
	update(t, s, func(tx chat.Tx) error { return tx.CreateChannel(ctx, channel("x", at(0))) })
	update(t, s, func(tx chat.Tx) error { return tx.CreateChannel(ctx, channel("y", at(0))) })
	const workers, each = 8, 40
	err := runGroup(workers, func(w int) error {
		first, second := "x", "y"
		if w%2 == 1 {
			first, second = "y", "x"
		}
		for i := 0; i < each; i++ {
			if err := s.Update(ctx, func(tx chat.Tx) error {
				if _, err := tx.NextSegment(ctx, first, time.Now()); err != nil {
					return err
				}
				_, err := tx.NextSegment(ctx, second, time.Now())
				return err
			}); err != nil {
				return fmt.Errorf("worker %d, update %d: %w", w, i, err)
			}
		}
		return nil
	})
	require.NoError(t, err)
	view(t, s, func(tx chat.Tx) error {
		for _, ch := range []string{"x", "y"} {
			c, err := tx.GetChannel(ctx, ch)
			require.NoError(t, err)
			require.EqualValues(t, workers*each, c.MessageCount, ch)
		}
		return nil
	})
}

// Killing the store's connections while writers run loses nothing that
// was acknowledged: every Update that returned nil is in the database, and
// the store recovers (new connections) once the killing stops.
func TestLaneConnectionsKilled(t *testing.T) {
	t.Parallel()
	s, app := openLaneStore(t, postgres.Options{MaxOpenConns: 8})
	ctx := ctxT(t)
	update(t, s, func(tx chat.Tx) error { return tx.CreateChannel(ctx, channel("k", at(0))) })

	stop := make(chan struct{})
	var killed atomic.Int64
	killer := make(chan error, 1)
	go func() {
		defer close(killer)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			var n int64
			err := admin(t).QueryRow(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE application_name = $1 AND pid <> pg_backend_pid()`, app).Scan(&n)
			if err != nil {
				killer <- err
				return
			}
			killed.Add(n)
		}
	}()

	var mu sync.Mutex
	var acked []string
	var failed atomic.Int64
	deadline := time.Now().Add(1500 * time.Millisecond)
	err := runGroup(6, func(w int) error {
		for i := 0; time.Now().Before(deadline); i++ {
			id := fmt.Sprintf("w%d-%d", w, i)
			err := s.Update(ctx, func(tx chat.Tx) error { return appendTo(ctx, tx, id, "k") })
			if err != nil {
				failed.Add(1)
				continue
			}
			mu.Lock()
			acked = append(acked, id)
			mu.Unlock()
		}
		return nil
	})
	close(stop)
	require.NoError(t, err)
	require.NoError(t, <-killer)
	require.Positive(t, killed.Load(), "connections were killed")
	require.NotEmpty(t, acked, "writes went through between the kills")
	t.Logf("%d acknowledged, %d failed, %d backends killed", len(acked), failed.Load(), killed.Load())

	// Recovery: the store works again.
	update(t, s, func(tx chat.Tx) error { return appendTo(ctx, tx, "after", "k") })
	var c *chat.Channel
	var stored map[string]bool
	view(t, s, func(tx chat.Tx) error {
		var err error
		c, err = tx.GetChannel(ctx, "k")
		require.NoError(t, err)
		ms, err := tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: "k"})
		require.NoError(t, err)
		stored = make(map[string]bool, len(ms))
		for j, m := range ms {
			stored[m.MessageID] = true
			require.EqualValues(t, j+1, m.ChannelSegment, "gapless")
		}
		return nil
	})
	for _, id := range acked {
		require.True(t, stored[id], "acknowledged message %s is stored", id)
	}
	require.True(t, stored["after"])
	require.EqualValues(t, len(stored), c.MessageCount, "messageCount matches the stored messages")
}

// Sessions the server ends while they sit idle (a restart, a failover,
// pg_terminate_backend) cost no request an error: the lane drops its
// connections after the first failure and runs the Update again on a
// checked one, and View begins again on another pooled connection.
func TestSessionsEndedWhileIdle(t *testing.T) {
	t.Parallel()
	s, app := openLaneStore(t, postgres.Options{MaxOpenConns: 8})
	ctx := ctxT(t)
	update(t, s, func(tx chat.Tx) error { return tx.CreateChannel(ctx, channel("e", at(0))) })
	warm := func(round int) {
		// Concurrent Updates and Views leave lane and pool connections
		// open and idle.
		require.NoError(t, runGroup(8, func(w int) error {
			if err := s.Update(ctx, func(tx chat.Tx) error {
				return appendTo(ctx, tx, fmt.Sprintf("r%d-w%d", round, w), "e")
			}); err != nil {
				return err
			}
			return s.View(ctx, func(tx chat.Tx) error {
				_, err := tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: "e"})
				return err
			})
		}))
	}
	for round := 0; round < 3; round++ {
		warm(round)
		var killed int
		require.NoError(t, admin(t).QueryRow(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE application_name = $1 AND state = 'idle'`, app).Scan(&killed))
		require.Greater(t, killed, 2, "idle sessions of the store were ended")
		require.Eventually(t, func() bool {
			var left int
			require.NoError(t, admin(t).QueryRow(`SELECT count(*) FROM pg_stat_activity
				WHERE application_name = $1 AND state = 'idle'`, app).Scan(&left))
			return left == 0
		}, 5*time.Second, 5*time.Millisecond)
		id := fmt.Sprintf("after-%d", round)
		require.NoError(t, s.Update(ctx, func(tx chat.Tx) error { return appendTo(ctx, tx, id, "e") }))
		require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
			m, err := tx.GetMessage(ctx, id)
			if err == nil && m.MessageID != id {
				err = fmt.Errorf("got message %s", m.MessageID)
			}
			return err
		}))
	}
	var c *chat.Channel
	view(t, s, func(tx chat.Tx) error {
		var err error
		c, err = tx.GetChannel(ctx, "e")
		return err
	})
	require.EqualValues(t, 3*9, c.MessageCount, "every acknowledged post is stored once")
}

// After the lane has been idle, its connections go back to the pool without
// the statements the lane prepared on them, and later Updates prepare
// afresh.
func TestLaneIdleRelease(t *testing.T) {
	t.Parallel()
	s, _ := openLaneStore(t, postgres.Options{MaxOpenConns: 2})
	s.SetLaneIdle(50 * time.Millisecond)
	ctx := ctxT(t)
	update(t, s, func(tx chat.Tx) error { return tx.CreateChannel(ctx, channel("i", at(0))) })
	for round := 0; round < 3; round++ {
		for i := 0; i < 5; i++ {
			update(t, s, func(tx chat.Tx) error { return appendTo(ctx, tx, fmt.Sprintf("r%d-%d", round, i), "i") })
		}
		// Wait for the release, then look at every connection of the
		// pool: none keeps a statement of the lane.
		require.Eventually(t, func() bool {
			return s.DB().Stats().InUse == 0 && s.DB().Stats().Idle > 0
		}, 10*time.Second, 10*time.Millisecond)
		time.Sleep(200 * time.Millisecond)
		conns := make([]interface{ Close() error }, 0, 2)
		for i := 0; i < s.DB().Stats().Idle; i++ {
			c, err := s.DB().Conn(ctx)
			require.NoError(t, err)
			conns = append(conns, c)
			var n int
			require.NoError(t, c.QueryRowContext(ctx, `SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'chat\_%'`).Scan(&n))
			require.Zero(t, n, "round %d: a pooled connection keeps the lane's prepared statements", round)
		}
		for _, c := range conns {
			c.Close()
		}
	}
	var n int
	view(t, s, func(tx chat.Tx) error {
		c, err := tx.GetChannel(ctx, "i")
		n = int(c.MessageCount)
		return err
	})
	require.Equal(t, 15, n)
}

// runGroup runs fn(0..n-1) concurrently and returns the first error.
func runGroup(n int, fn func(i int) error) error {
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- fn(i)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

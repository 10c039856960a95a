package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/postgres"
)

func appendTo(ctx context.Context, tx chat.Tx, id, channelID string) error {
	m := message(id, channelID, "u", 0)
	_, err := chat.AppendMessage(ctx, tx, m, time.Now())
	return err
}

// Many concurrent Updates post to four channels; the ones that fail after
// posting (by returning an error, or by a statement the server refuses)
// leave nothing behind, and the others are all committed with gapless
// segments.
func TestConcurrentUpdatesFailAlone(t *testing.T) {
	t.Parallel()
	s, _ := openNamed(t, newSchema(t), postgres.Options{MaxOpenConns: 8})
	ctx := ctxT(t)
	for _, c := range []string{"a", "b", "c", "d"} {
		update(t, s, func(tx chat.Tx) error { return tx.CreateChannel(ctx, channel(c, at(0))) })
	}
	errFn := errors.New("fn failed")
	const n = 200
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
					// Refused by the server: the message id exists.
					return appendTo(ctx, tx, "m"+strconv.Itoa(i), ch)
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

// Killing the store's connections while writers run loses nothing that
// was acknowledged: every Update that returned nil is in the database, the
// others report CodeUnavailable, and the store works again (on new
// connections) once the killing stops.
func TestConnectionsKilled(t *testing.T) {
	t.Parallel()
	s, app := openNamed(t, newSchema(t), postgres.Options{MaxOpenConns: 8})
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
	var other []error
	deadline := time.Now().Add(1500 * time.Millisecond)
	err := runGroup(6, func(w int) error {
		for i := 0; time.Now().Before(deadline); i++ {
			id := fmt.Sprintf("w%d-%d", w, i)
			err := s.Update(ctx, func(tx chat.Tx) error { return appendTo(ctx, tx, id, "k") })
			mu.Lock()
			switch {
			case err == nil:
				acked = append(acked, id)
			case chat.ErrorCode(err) == chat.CodeUnavailable:
				failed.Add(1)
			default:
				other = append(other, err)
			}
			mu.Unlock()
		}
		return nil
	})
	close(stop)
	require.NoError(t, err)
	require.NoError(t, <-killer)
	require.Empty(t, other, "a lost connection is CodeUnavailable")
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

// Sessions the server ends while they sit idle in the pool (a restart, a
// failover, pg_terminate_backend) cost no request an error: Update and
// View begin again on another connection before their function runs.
func TestSessionsEndedWhileIdle(t *testing.T) {
	t.Parallel()
	s, app := openNamed(t, newSchema(t), postgres.Options{MaxOpenConns: 8})
	ctx := ctxT(t)
	update(t, s, func(tx chat.Tx) error { return tx.CreateChannel(ctx, channel("e", at(0))) })
	warm := func(round int) {
		// Concurrent Updates and Views leave pool connections open and
		// idle.
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
		require.Greater(t, killed, 1, "idle sessions of the store were ended")
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

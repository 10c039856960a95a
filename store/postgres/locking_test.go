package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/lib/pq/pqerror"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/postgres"
)

// Tests of the concurrency the store gets from Postgres: row locks taken
// by the Lock methods (chat.LockStore) in Update transactions, none taken
// by the Get methods, the second run of a transaction that wrote a user it
// read without a lock, and retries after deadlocks.

// openNamed opens a store over schema whose connections carry their own
// application_name, so that a test can see in pg_stat_activity what its
// sessions wait for (or end them).
func openNamed(t *testing.T, schema string, opt postgres.Options) (*postgres.Store, string) {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	app := "chat_test_" + hex.EncodeToString(b[:])
	u, err := url.Parse(testDSN(t))
	require.NoError(t, err)
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	opt.Schema = schema
	s, err := postgres.Open(context.Background(), u.String(), &opt)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s, app
}

// waitingForLock waits until a session of app waits for a lock (a row
// lock shows as a wait on the holder's transaction id).
func waitingForLock(t *testing.T, app string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, admin(t).QueryRow(`SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event_type = 'Lock'`, app).Scan(&n))
		return n > 0
	}, 30*time.Second, 5*time.Millisecond, "a session of %s waits for a lock", app)
}

// lockFixture creates a channel c with member u, a user u, a message m and
// a webhook w.
func lockFixture(t *testing.T, s chat.Store) {
	ctx := ctxT(t)
	c := channel("c", at(0))
	c.MessageCount = 1 // m
	update(t, s, func(tx chat.Tx) error {
		require.NoError(t, tx.CreateChannel(ctx, c))
		require.NoError(t, tx.CreateChannel(ctx, channel("c2", at(0))))
		require.NoError(t, tx.CreateUser(ctx, &chat.User{UserID: "u", DisplayName: "U", CreatedAt: at(0), UpdatedAt: at(0)}))
		require.NoError(t, tx.CreateMessage(ctx, message("m", "c", "u", 1)))
		require.NoError(t, tx.PutChannelUser(ctx, &chat.ChannelUser{ChannelID: "c", UserID: "u", Membership: chat.MembershipMember, CreatedAt: at(0), UpdatedAt: at(0)}))
		require.NoError(t, tx.SetMemberCount(ctx, "c", 1))
		return tx.CreateWebhook(ctx, &chat.Webhook{WebhookID: "w", URL: "https://x", Secret: "s", CreatedAt: at(0), UpdatedAt: at(0)})
	})
}

// holdWhile runs read in an Update of s and keeps that transaction open
// until the returned release is called; release returns the Update's
// error.
func holdWhile(t *testing.T, s chat.Store, read func(ctx context.Context, tx chat.Tx) error) (release func() error) {
	t.Helper()
	ctx := ctxT(t)
	held := make(chan struct{})
	rel := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Update(ctx, func(tx chat.Tx) error {
			if err := read(ctx, tx); err != nil {
				return err
			}
			close(held)
			<-rel
			return nil
		})
	}()
	select {
	case <-held:
	case err := <-done:
		t.Fatalf("the holding transaction failed: %v", err)
	}
	return func() error {
		close(rel)
		return <-done
	}
}

// TestLockMethodsHoldRows: in an Update, LockChannel, LockChannelUser (of
// a present or a missing relation), LockChannelUsers, LockMessage,
// LockUser and LockWebhook hold their rows: a writer of that row in
// another store (another process) waits for the lock until the reader's
// transaction ends, then goes through.
func TestLockMethodsHoldRows(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	s := openStore(t, schema)
	other, app := openNamed(t, schema, postgres.Options{MaxOpenConns: 4})
	lockFixture(t, s)
	rel := func(user string, membership chat.Membership) *chat.ChannelUser {
		return &chat.ChannelUser{ChannelID: "c", UserID: user, Membership: membership, CreatedAt: at(0), UpdatedAt: at(0)}
	}
	cases := []struct {
		name  string
		read  func(ctx context.Context, tx chat.Tx) error
		write func(ctx context.Context, tx chat.Tx) error
	}{
		{"LockChannel", func(ctx context.Context, tx chat.Tx) error {
			_, err := tx.LockChannel(ctx, "c")
			return err
		}, func(ctx context.Context, tx chat.Tx) error {
			_, err := tx.NextSegment(ctx, "c", t0)
			return err
		}},
		{"LockChannelUser", func(ctx context.Context, tx chat.Tx) error {
			_, err := tx.LockChannelUser(ctx, "c", "u")
			return err
		}, func(ctx context.Context, tx chat.Tx) error {
			return tx.PutChannelUser(ctx, rel("u", chat.MembershipBanned))
		}},
		{"LockChannelUser of a missing relation", func(ctx context.Context, tx chat.Tx) error {
			_, err := tx.LockChannelUser(ctx, "c", "nobody")
			if chat.ErrorCode(err) == chat.CodeNotFound {
				return nil
			}
			return fmt.Errorf("want not found, got %v", err)
		}, func(ctx context.Context, tx chat.Tx) error {
			return tx.PutChannelUser(ctx, rel("nobody", chat.MembershipBanned))
		}},
		{"LockChannelUsers", func(ctx context.Context, tx chat.Tx) error {
			_, err := tx.LockChannelUsers(ctx, "c", nil)
			return err
		}, func(ctx context.Context, tx chat.Tx) error {
			return tx.DeleteChannelUser(ctx, "c", "nobody")
		}},
		{"LockMessage", func(ctx context.Context, tx chat.Tx) error {
			_, err := tx.LockMessage(ctx, "m")
			return err
		}, func(ctx context.Context, tx chat.Tx) error {
			m := message("m", "c", "u", 1)
			m.FlagCount = 3
			return tx.UpdateMessage(ctx, m)
		}},
		{"LockUser", func(ctx context.Context, tx chat.Tx) error {
			_, err := tx.LockUser(ctx, "u")
			return err
		}, func(ctx context.Context, tx chat.Tx) error {
			return tx.UpdateUser(ctx, &chat.User{UserID: "u", DisplayName: "Locked", CreatedAt: at(0), UpdatedAt: at(1)})
		}},
		{"LockWebhook", func(ctx context.Context, tx chat.Tx) error {
			_, err := tx.LockWebhook(ctx, "w")
			return err
		}, func(ctx context.Context, tx chat.Tx) error {
			return tx.UpdateWebhook(ctx, &chat.Webhook{WebhookID: "w", URL: "https://y", Secret: "s", CreatedAt: at(0), UpdatedAt: at(1)})
		}},
	}
	for _, c := range cases {
		ctx := ctxT(t)
		release := holdWhile(t, s, c.read)
		wrote := make(chan error, 1)
		go func() { wrote <- other.Update(ctx, func(tx chat.Tx) error { return c.write(ctx, tx) }) }()
		waitingForLock(t, app)
		select {
		case err := <-wrote:
			t.Fatalf("%s: a write went through a locked row: %v", c.name, err)
		default:
		}
		require.NoError(t, release(), c.name)
		require.NoError(t, <-wrote, c.name)
	}
}

// TestGetReadsDoNotLock: in an Update, the Get and List methods hold no
// rows: while a transaction that read the channel, its relations, the
// message and the webhooks that way is open, writes of each of those rows
// in another store go through.
func TestGetReadsDoNotLock(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	s := openStore(t, schema)
	other := openStore(t, schema)
	lockFixture(t, s)
	ctx := ctxT(t)
	release := holdWhile(t, s, func(ctx context.Context, tx chat.Tx) error {
		if _, err := tx.GetChannel(ctx, "c"); err != nil {
			return err
		}
		if _, err := tx.GetChannels(ctx, []string{"c"}); err != nil {
			return err
		}
		if _, err := tx.GetChannelUser(ctx, "c", "u"); err != nil {
			return err
		}
		if _, err := tx.GetChannelUsers(ctx, "c", nil); err != nil {
			return err
		}
		if _, err := tx.GetMessage(ctx, "m"); err != nil {
			return err
		}
		if _, err := tx.GetMessages(ctx, []string{"m"}); err != nil {
			return err
		}
		if _, err := tx.GetWebhook(ctx, "w"); err != nil {
			return err
		}
		_, err := tx.ListWebhooks(ctx)
		return err
	})
	require.NoError(t, other.Update(ctx, func(tx chat.Tx) error {
		c := channel("c", at(0))
		c.DisplayName = "renamed"
		if err := tx.UpdateChannel(ctx, c); err != nil {
			return err
		}
		if _, err := tx.NextSegment(ctx, "c", t0); err != nil {
			return err
		}
		if err := tx.PutChannelUser(ctx, &chat.ChannelUser{ChannelID: "c", UserID: "u", Membership: chat.MembershipBanned, CreatedAt: at(0), UpdatedAt: at(0)}); err != nil {
			return err
		}
		m := message("m", "c", "u", 1)
		m.FlagCount = 3
		if err := tx.UpdateMessage(ctx, m); err != nil {
			return err
		}
		return tx.UpdateWebhook(ctx, &chat.Webhook{WebhookID: "w", URL: "https://y", Secret: "s", CreatedAt: at(0), UpdatedAt: at(1)})
	}), "written while the reader is open")
	require.NoError(t, release())
}

// TestUpdateReadsOfUsersDoNotLock: users are read without a lock, so
// transactions that read the same user (an author posting to two channels
// at once) and a write of that user do not wait for each other.
func TestUpdateReadsOfUsersDoNotLock(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	s := openStore(t, schema)
	other := openStore(t, schema)
	lockFixture(t, s)
	ctx := ctxT(t)
	post := func(ctx context.Context, tx chat.Tx, id, channelID string) error {
		if _, err := tx.GetUser(ctx, "u"); err != nil {
			return err
		}
		if _, err := tx.GetUsers(ctx, []string{"u"}); err != nil {
			return err
		}
		if _, err := tx.EnsureUsers(ctx, []string{"u"}, t0); err != nil {
			return err
		}
		_, err := chat.AppendMessage(ctx, tx, message(id, channelID, "u", 0), t0)
		return err
	}
	release := holdWhile(t, s, func(ctx context.Context, tx chat.Tx) error { return post(ctx, tx, "first", "c") })
	// While the first transaction is open: the same author posts to
	// another channel, and the user is written (not read first).
	require.NoError(t, other.Update(ctx, func(tx chat.Tx) error { return post(ctx, tx, "second", "c2") }))
	require.NoError(t, other.Update(ctx, func(tx chat.Tx) error {
		return tx.UpdateUser(ctx, &chat.User{UserID: "u", DisplayName: "Renamed", CreatedAt: at(0), UpdatedAt: at(5)})
	}))
	require.NoError(t, release())
	view(t, s, func(tx chat.Tx) error {
		ms, err := tx.GetMessages(ctx, []string{"first", "second"})
		require.NoError(t, err)
		require.Len(t, ms, 2)
		u, err := tx.GetUser(ctx, "u")
		require.NoError(t, err)
		require.Equal(t, "Renamed", u.DisplayName)
		return nil
	})
}

// TestReadModifyWrite runs concurrent read-modify-write transactions from
// two stores (two processes) on one row of each kind: no update is lost.
// Rows read with the Lock methods are held, so each function runs exactly
// once; a function that writes a user it read with GetUser runs exactly
// twice (the first run, which read the user without a lock, is rolled
// back).
func TestReadModifyWrite(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	stores := []*postgres.Store{openStore(t, schema), openStore(t, schema)}
	lockFixture(t, stores[0])
	ctx := ctxT(t)
	const n = 16
	// run runs fn in n concurrent Updates, alternating the stores, and
	// returns how many times fn ran.
	run := func(fn func(i int, tx chat.Tx) error) int {
		var runs atomic.Int64
		err := runGroup(n, func(i int) error {
			return stores[i%2].Update(ctx, func(tx chat.Tx) error {
				runs.Add(1)
				return fn(i, tx)
			})
		})
		require.NoError(t, err)
		return int(runs.Load())
	}

	runs := run(func(_ int, tx chat.Tx) error {
		m, err := tx.LockMessage(ctx, "m")
		if err != nil {
			return err
		}
		m.FlagCount++
		return tx.UpdateMessage(ctx, m)
	})
	require.Equal(t, n, runs, "message: each function ran once")

	// join adds a member as the Service does: the new memberCount is
	// computed from the channel's row held by LockChannel.
	join := func(tx chat.Tx, cu *chat.ChannelUser) error {
		c, err := tx.LockChannel(ctx, "c")
		if err != nil {
			return err
		}
		if err := tx.PutChannelUser(ctx, cu); err != nil {
			return err
		}
		return tx.SetMemberCount(ctx, "c", c.MemberCount+1)
	}

	// Renames count in metadata while other transactions add members:
	// the counters that UpdateChannel does not write are kept.
	runs = run(func(i int, tx chat.Tx) error {
		if i%2 == 1 {
			return join(tx, &chat.ChannelUser{ChannelID: "c", UserID: fmt.Sprintf("m%d", i),
				Membership: chat.MembershipMember, CreatedAt: at(0), UpdatedAt: at(0)})
		}
		c, err := tx.LockChannel(ctx, "c")
		if err != nil {
			return err
		}
		k, _ := c.Metadata["renames"].(float64)
		c.Metadata = map[string]any{"renames": k + 1}
		return tx.UpdateChannel(ctx, c)
	})
	require.Equal(t, n, runs, "channel: each function ran once")

	// A relation read as missing stays missing until the reader writes
	// it: the first transaction creates it, the others extend it.
	runs = run(func(_ int, tx chat.Tx) error {
		cu, err := tx.LockChannelUser(ctx, "c", "late")
		switch {
		case chat.ErrorCode(err) == chat.CodeNotFound:
			mute := at(0)
			return join(tx, &chat.ChannelUser{ChannelID: "c", UserID: "late", Membership: chat.MembershipMember,
				MuteTimeout: &mute, CreatedAt: at(0), UpdatedAt: at(0)})
		case err != nil:
			return err
		default:
			next := chat.NewTime(cu.MuteTimeout.Add(time.Millisecond))
			cu.MuteTimeout = &next
		}
		return tx.PutChannelUser(ctx, cu)
	})
	require.Equal(t, n, runs, "relation: each function ran once")

	runs = run(func(i int, tx chat.Tx) error {
		w, err := tx.LockWebhook(ctx, "w")
		if err != nil {
			return err
		}
		w.Events = append(w.Events, fmt.Sprintf("e%02d", i))
		return tx.UpdateWebhook(ctx, w)
	})
	require.Equal(t, n, runs, "webhook: each function ran once")

	runs = run(func(_ int, tx chat.Tx) error {
		u, err := tx.GetUser(ctx, "u")
		if err != nil {
			return err
		}
		u.FlagCount++
		return tx.UpdateUser(ctx, u)
	})
	require.Equal(t, 2*n, runs, "user read with GetUser: each function ran twice")

	runs = run(func(_ int, tx chat.Tx) error {
		u, err := tx.LockUser(ctx, "u")
		if err != nil {
			return err
		}
		u.FlagCount++
		return tx.UpdateUser(ctx, u)
	})
	require.Equal(t, n, runs, "user read with LockUser: each function ran once")

	view(t, stores[1], func(tx chat.Tx) error {
		m, err := tx.GetMessage(ctx, "m")
		require.NoError(t, err)
		require.Equal(t, n, m.FlagCount)
		c, err := tx.GetChannel(ctx, "c")
		require.NoError(t, err)
		require.Equal(t, float64(n/2), c.Metadata["renames"])
		require.Equal(t, 1+n/2+1, c.MemberCount, "u, the added members and late")
		cu, err := tx.GetChannelUser(ctx, "c", "late")
		require.NoError(t, err)
		require.Equal(t, at(n-1), *cu.MuteTimeout)
		w, err := tx.GetWebhook(ctx, "w")
		require.NoError(t, err)
		require.Len(t, w.Events, n)
		u, err := tx.GetUser(ctx, "u")
		require.NoError(t, err)
		require.Equal(t, 2*n, u.FlagCount)
		return nil
	})
}

// TestDeadlockRetried makes two transactions lock two channel rows in
// opposite orders. Postgres detects the deadlock and aborts one of them
// (40P01); Update runs that one again and both succeed. With retries
// disabled, the aborted one reports CodeUnavailable.
func TestDeadlockRetried(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	for k, opt := range []postgres.Options{{MaxOpenConns: 4}, {MaxOpenConns: 4, Retries: -1}} {
		s, _ := openNamed(t, schema, opt)
		retry := opt.Retries == 0
		ctx := ctxT(t)
		x, y := fmt.Sprintf("x%d", k), fmt.Sprintf("y%d", k)
		update(t, s, func(tx chat.Tx) error {
			require.NoError(t, tx.CreateChannel(ctx, channel(x, at(0))))
			return tx.CreateChannel(ctx, channel(y, at(0)))
		})
		var runs atomic.Int64
		var locked sync.WaitGroup
		locked.Add(2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for w, order := range [][2]string{{x, y}, {y, x}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				first := true
				errs[w] = s.Update(ctx, func(tx chat.Tx) error {
					runs.Add(1)
					if _, err := tx.NextSegment(ctx, order[0], t0); err != nil {
						return err
					}
					if first {
						// Both hold their first row before asking for
						// the other's.
						first = false
						locked.Done()
						locked.Wait()
					}
					_, err := tx.NextSegment(ctx, order[1], t0)
					return err
				})
			}()
		}
		wg.Wait()
		if retry {
			require.NoError(t, errs[0])
			require.NoError(t, errs[1])
			// Under load the deadlock detector may fire again on the rerun, so
			// the aborted function runs at least once more.
			require.GreaterOrEqual(t, runs.Load(), int64(3), "the aborted transaction ran again")
		} else {
			failed := errs[0]
			if failed == nil {
				failed = errs[1]
			} else {
				require.NoError(t, errs[1])
			}
			require.Equal(t, chat.CodeUnavailable, chat.ErrorCode(failed), "%v", failed)
			var pe *pq.Error
			require.True(t, errors.As(failed, &pe), "%v", failed)
			require.Equal(t, pqerror.Code("40P01"), pe.Code)
			require.EqualValues(t, 2, runs.Load())
		}
		want := int64(2)
		if !retry {
			want = 1
		}
		view(t, s, func(tx chat.Tx) error {
			for _, id := range []string{x, y} {
				c, err := tx.GetChannel(ctx, id)
				require.NoError(t, err)
				require.Equal(t, want, c.MessageCount, id)
			}
			return nil
		})
	}
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

// Concurrent reactions on one message through two stores, each counted as
// the Service counts it (AddMessageReaction on the message held by
// LockMessage), and then half of them removed: the counters stay exact.
func TestConcurrentReactionCounts(t *testing.T) {
	stores, ctx := twoLockStores(t)
	const n = 16
	require.NoError(t, runGroup(n, func(i int) error {
		return stores[i%2].Update(ctx, func(tx chat.Tx) error {
			_, _, err := react(ctx, tx, &chat.Reaction{ReactionID: fmt.Sprintf("r%d", i), ReferenceID: "m",
				ReferenceType: "message", ReactionName: []string{"like", "love"}[i%2], UserID: fmt.Sprintf("u%d", i), CreatedAt: at(int64(i))})
			return err
		})
	}))
	require.NoError(t, runGroup(n/2, func(i int) error {
		return stores[i%2].Update(ctx, func(tx chat.Tx) error {
			_, err := unreact(ctx, tx, fmt.Sprintf("u%d", 2*i), "m", "like")
			return err
		})
	}))
	view(t, stores[1], func(tx chat.Tx) error {
		m, err := tx.GetMessage(ctx, "m")
		require.NoError(t, err)
		require.Equal(t, map[string]int{"love": n / 2}, m.Reactions)
		require.Equal(t, n/2, m.ReactionsCount)
		top, err := tx.MostReacted(ctx, "love", "c", 10)
		require.NoError(t, err)
		require.Equal(t, []string{"m"}, msgIDs(top))
		top, err = tx.MostReacted(ctx, "like", "c", 10)
		require.NoError(t, err)
		require.Empty(t, top, "the like count went back to 0")
		return nil
	})
}

// Concurrent comments on one message through two stores, each counted as
// the Service counts it (the parent read by LockMessage, then
// SetChildrenNumber with its count plus one, the comment's append held
// back after PrefetchPost): the parent's childrenNumber is exact.
func TestConcurrentChildrenNumber(t *testing.T) {
	stores, ctx := twoLockStores(t)
	const n = 16
	require.NoError(t, runGroup(n, func(i int) error {
		return stores[i%2].Update(ctx, func(tx chat.Tx) error {
			if err := tx.(chat.PostPrefetcher).PrefetchPost(ctx, "c", "u"); err != nil {
				return err
			}
			p, err := tx.LockMessage(ctx, "m")
			if err != nil {
				return err
			}
			m := message(fmt.Sprintf("r%d", i), "c", "u", 0)
			m.ParentID = "m"
			if _, err := chat.AppendMessage(ctx, tx, m, at(int64(i)).Time); err != nil {
				return err
			}
			return tx.SetChildrenNumber(ctx, "m", p.ChildrenNumber+1)
		})
	}))
	view(t, stores[1], func(tx chat.Tx) error {
		m, err := tx.GetMessage(ctx, "m")
		require.NoError(t, err)
		require.Equal(t, n, m.ChildrenNumber)
		c, err := tx.GetChannel(ctx, "c")
		require.NoError(t, err)
		require.EqualValues(t, n+1, c.MessageCount)
		return nil
	})
}

// twoLockStores opens two stores on a new schema holding lockFixture.
func twoLockStores(t *testing.T) ([]*postgres.Store, context.Context) {
	t.Parallel()
	schema := newSchema(t)
	stores := []*postgres.Store{openStore(t, schema), openStore(t, schema)}
	lockFixture(t, stores[0])
	return stores, ctxT(t)
}

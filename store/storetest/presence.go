package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

var presenceCases = []tcase{
	{"Leases", testPresenceLeases},
	{"Streams", testPresenceStreams},
	{"UserState", testPresenceUserState},
	{"Lapsed", testPresenceLapsed},
	{"RolledBack", testPresenceRollback},
	{"ConcurrentLapsed", testPresenceConcurrentLapsed},
}

func (e *env) putProcess(id string, renewed, expires int64) {
	e.t.Helper()
	e.update(func(tx chat.Tx) error {
		return tx.PutPresenceProcess(e.ctx, &chat.PresenceProcess{ProcessID: id, RenewedAt: at(renewed), ExpiresAt: at(expires)})
	})
}

func (e *env) expiredProcesses(now int64, limit int) []chat.PresenceProcess {
	e.t.Helper()
	ps := read(e, func(tx chat.Tx) ([]*chat.PresenceProcess, error) {
		return tx.ExpiredPresenceProcesses(e.ctx, at(now).Time, limit)
	})
	out := []chat.PresenceProcess{}
	for _, p := range ps {
		requireUTC(e.t, p.RenewedAt, p.ExpiresAt)
		out = append(out, *p)
	}
	return out
}

func requireUTC(t *testing.T, ts ...chat.Time) {
	t.Helper()
	for _, v := range ts {
		require.Equal(t, "UTC", v.Location().String())
	}
}

func (e *env) live(now int64, ids ...string) []string {
	e.t.Helper()
	out := read(e, func(tx chat.Tx) ([]string, error) { return tx.LivePresence(e.ctx, ids, at(now).Time) })
	if out == nil {
		out = []string{}
	}
	return out
}

func (e *env) presence(id string) chat.PresenceState {
	e.t.Helper()
	return *read(e, func(tx chat.Tx) (*chat.PresenceState, error) { return tx.LockPresence(e.ctx, id) })
}

func (e *env) setPresence(s chat.PresenceState) {
	e.t.Helper()
	e.update(func(tx chat.Tx) error { return tx.SetPresence(e.ctx, &s) })
}

func testPresenceLeases(t *testing.T, e *env) {
	e.putProcess("p2", 0, 3000)
	e.putProcess("p1", 0, 1000)
	e.putProcess("p3", 0, 3000)
	renew := func(id string, now, until int64) bool {
		return write(e, func(tx chat.Tx) (bool, error) {
			return tx.RenewPresenceProcess(e.ctx, id, at(now).Time, at(until).Time)
		})
	}
	require.Empty(t, e.expiredProcesses(999, 0), "a lease is live before it expires")
	require.True(t, renew("p1", 500, 2000), "a live lease is renewed")
	require.Empty(t, e.expiredProcesses(1999, 0))
	require.Equal(t, []chat.PresenceProcess{{ProcessID: "p1", RenewedAt: at(500), ExpiresAt: at(2000)}}, e.expiredProcesses(2000, 0),
		"a lease is expired at its expiry")
	require.False(t, renew("p1", 2000, 4000), "an expired lease is not renewed")
	require.Equal(t, []chat.PresenceProcess{{ProcessID: "p1", RenewedAt: at(500), ExpiresAt: at(2000)}}, e.expiredProcesses(2000, 0),
		"a failed renewal changes nothing")
	require.False(t, renew("nobody", 0, 4000), "an unknown process has no lease to renew")
	require.Len(t, e.expiredProcesses(2000, 0), 1, "a failed renewal creates nothing")

	// Earliest expiry first, then by id; the limit bounds the count.
	require.Equal(t, []chat.PresenceProcess{
		{ProcessID: "p1", RenewedAt: at(500), ExpiresAt: at(2000)},
		{ProcessID: "p2", RenewedAt: at(0), ExpiresAt: at(3000)},
		{ProcessID: "p3", RenewedAt: at(0), ExpiresAt: at(3000)},
	}, e.expiredProcesses(5000, 0))
	require.Len(t, e.expiredProcesses(5000, 2), 2)

	// Put replaces an existing lease, expired or not.
	e.putProcess("p1", 6000, 9000)
	require.Equal(t, []string{"p2", "p3"}, processIDs(e.expiredProcesses(6000, 0)))
}

func processIDs(ps []chat.PresenceProcess) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.ProcessID)
	}
	return out
}

func testPresenceStreams(t *testing.T, e *env) {
	e.putProcess("p1", 0, 1000)
	e.putProcess("p2", 0, 2000)
	e.update(func(tx chat.Tx) error {
		for _, r := range [][2]string{{"p1", "alice"}, {"p1", "alice"}, {"p1", "bob"}, {"p2", "alice"}, {"p3", "carol"}} {
			if err := tx.AddPresenceStream(e.ctx, r[0], r[1]); err != nil {
				return err
			}
		}
		return nil
	})
	require.Equal(t, []string{"alice", "bob"}, e.live(500, "bob", "carol", "alice", "dave", "alice"),
		"each user once, ascending; a process without a lease holds nothing")
	require.Equal(t, []string{"alice"}, e.live(1000, "alice", "bob"), "the rows of an expired lease do not count")
	require.Empty(t, e.live(2000, "alice", "bob"))
	require.Empty(t, e.live(0))

	e.update(func(tx chat.Tx) error {
		if err := tx.RemovePresenceStream(e.ctx, "p2", "alice"); err != nil {
			return err
		}
		return tx.RemovePresenceStream(e.ctx, "p2", "nobody") // absent: no-op
	})
	require.Empty(t, e.live(1000, "alice"), "alice's row on p2 is gone")
	require.Equal(t, []string{"alice", "bob"}, e.live(500, "alice", "bob"), "p1's rows stay")

	us := write(e, func(tx chat.Tx) ([]string, error) { return tx.DeletePresenceProcess(e.ctx, "p1") })
	require.Equal(t, []string{"alice", "bob"}, us, "the users of the deleted rows, ascending")
	require.Empty(t, e.live(500, "alice", "bob"))
	require.Equal(t, []string{"p2"}, processIDs(e.expiredProcesses(5000, 0)), "the lease is deleted too")
	us = write(e, func(tx chat.Tx) ([]string, error) { return tx.DeletePresenceProcess(e.ctx, "p1") })
	require.Empty(t, us, "deleting again finds nothing")

	// A process that holds a user again after its rows were deleted.
	e.putProcess("p1", 0, 1000)
	e.update(func(tx chat.Tx) error { return tx.AddPresenceStream(e.ctx, "p1", "bob") })
	require.Equal(t, []string{"bob"}, e.live(500, "alice", "bob"))
}

func testPresenceUserState(t *testing.T, e *env) {
	e.createUsers(newUser("alice", "Alice"), newUser("bob", "Bob"))
	u := e.user("alice")
	require.False(t, u.Online)
	require.Nil(t, u.LastActiveAt)
	require.Equal(t, chat.PresenceState{UserID: "alice"}, e.presence("alice"), "a new user is offline, never active")

	e.setPresence(chat.PresenceState{UserID: "alice", Online: true, LastActiveAt: atp(100)})
	require.Equal(t, chat.PresenceState{UserID: "alice", Online: true, LastActiveAt: atp(100)}, e.presence("alice"))
	check := func(u *chat.User) {
		t.Helper()
		require.True(t, u.Online)
		require.NotNil(t, u.LastActiveAt)
		require.True(t, u.LastActiveAt.Equal(at(100).Time))
		requireUTC(t, *u.LastActiveAt)
	}
	check(e.user("alice"))
	us := read(e, func(tx chat.Tx) ([]*chat.User, error) { return tx.GetUsers(e.ctx, []string{"bob", "alice"}) })
	require.Len(t, us, 2)
	require.False(t, us[0].Online)
	check(us[1])
	us = read(e, func(tx chat.Tx) ([]*chat.User, error) { return tx.QueryUsers(e.ctx, chat.UserFilter{Limit: 10}) })
	require.Len(t, us, 2)
	check(us[0])
	us = write(e, func(tx chat.Tx) ([]*chat.User, error) {
		return tx.EnsureUsers(e.ctx, []string{"alice", "carol"}, at(5).Time)
	})
	check(us[0])
	require.False(t, us[1].Online)

	// UpdateUser and CreateUser leave presence alone.
	u = e.user("alice")
	u.DisplayName, u.Online, u.LastActiveAt = "Alice Again", false, nil
	e.update(func(tx chat.Tx) error { return tx.UpdateUser(e.ctx, u) })
	check(e.user("alice"))
	require.Equal(t, "Alice Again", e.user("alice").DisplayName)
	d := newUser("dave", "Dave")
	d.Online, d.LastActiveAt = true, atp(7)
	e.createUsers(d)
	require.False(t, e.user("dave").Online)
	require.Nil(t, e.user("dave").LastActiveAt)

	// SetPresence writes the three fields and nothing else.
	e.setPresence(chat.PresenceState{UserID: "alice", Online: true, LastActiveAt: atp(200), OfflineSince: atp(200)})
	require.Equal(t, chat.PresenceState{UserID: "alice", Online: true, LastActiveAt: atp(200), OfflineSince: atp(200)}, e.presence("alice"))
	require.Equal(t, "Alice Again", e.user("alice").DisplayName)
	e.setPresence(chat.PresenceState{UserID: "alice", LastActiveAt: atp(200)})
	require.Equal(t, chat.PresenceState{UserID: "alice", LastActiveAt: atp(200)}, e.presence("alice"))

	_, err := readErr(e, func(tx chat.Tx) (*chat.PresenceState, error) { return tx.LockPresence(e.ctx, "nobody") })
	requireNotFound(t, err)
	err = e.s.Update(e.ctx, func(tx chat.Tx) error {
		return tx.SetPresence(e.ctx, &chat.PresenceState{UserID: "nobody", Online: true})
	})
	requireNotFound(t, err)
}

func testPresenceLapsed(t *testing.T, e *env) {
	e.createUsers(newUser("a", "A"), newUser("b", "B"), newUser("c", "C"), newUser("d", "D"), newUser("e", "E"))
	e.setPresence(chat.PresenceState{UserID: "a", Online: true, LastActiveAt: atp(300), OfflineSince: atp(300)})
	e.setPresence(chat.PresenceState{UserID: "b", Online: true, LastActiveAt: atp(100), OfflineSince: atp(100)})
	e.setPresence(chat.PresenceState{UserID: "c", Online: true, LastActiveAt: atp(100)})                        // has a stream
	e.setPresence(chat.PresenceState{UserID: "d", Online: false, LastActiveAt: atp(50), OfflineSince: atp(50)}) // not online
	e.setPresence(chat.PresenceState{UserID: "e", Online: true, LastActiveAt: atp(900), OfflineSince: atp(900)})
	lapsed := func(cutoff int64, limit int) []chat.PresenceState {
		ss := read(e, func(tx chat.Tx) ([]*chat.PresenceState, error) {
			return tx.LapsedPresence(e.ctx, at(cutoff).Time, limit)
		})
		out := []chat.PresenceState{}
		for _, s := range ss {
			out = append(out, *s)
		}
		return out
	}
	require.Empty(t, lapsed(99, 0))
	require.Equal(t, []chat.PresenceState{
		{UserID: "b", Online: true, LastActiveAt: atp(100), OfflineSince: atp(100)},
		{UserID: "a", Online: true, LastActiveAt: atp(300), OfflineSince: atp(300)},
	}, lapsed(300, 0), "earliest first, the cutoff included")
	require.Len(t, lapsed(1000, 2), 2)
	require.Len(t, lapsed(1000, 0), 3)
}

func testPresenceRollback(t *testing.T, e *env) {
	e.createUsers(newUser("alice", "Alice"))
	e.putProcess("p1", 0, 1000)
	boom := errors.New("boom")
	err := e.s.Update(e.ctx, func(tx chat.Tx) error {
		if err := tx.PutPresenceProcess(e.ctx, &chat.PresenceProcess{ProcessID: "p2", ExpiresAt: at(1000)}); err != nil {
			return err
		}
		if err := tx.AddPresenceStream(e.ctx, "p1", "alice"); err != nil {
			return err
		}
		if _, err := tx.RenewPresenceProcess(e.ctx, "p1", at(0).Time, at(5000).Time); err != nil {
			return err
		}
		if err := tx.SetPresence(e.ctx, &chat.PresenceState{UserID: "alice", Online: true, LastActiveAt: atp(1), OfflineSince: atp(1)}); err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.Equal(t, chat.PresenceState{UserID: "alice"}, e.presence("alice"))
	require.Empty(t, e.live(500, "alice"))
	require.Equal(t, []chat.PresenceProcess{{ProcessID: "p1", RenewedAt: at(0), ExpiresAt: at(1000)}}, e.expiredProcesses(5000, 0))

	e.update(func(tx chat.Tx) error { return tx.AddPresenceStream(e.ctx, "p1", "alice") })
	err = e.s.Update(e.ctx, func(tx chat.Tx) error {
		if _, err := tx.DeletePresenceProcess(e.ctx, "p1"); err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.Equal(t, []string{"alice"}, e.live(500, "alice"), "a rolled back delete leaves the rows")
}

// testPresenceConcurrentLapsed: several sweepers at once take every lapsed
// user offline, each user exactly once (a user taken twice would be
// announced twice).
func testPresenceConcurrentLapsed(t *testing.T, e *env) {
	const users, sweepers = 30, 4
	var us []*chat.User
	for i := range users {
		us = append(us, newUser(fmt.Sprintf("u%02d", i), "U"))
	}
	e.createUsers(us...)
	for i := range users {
		e.setPresence(chat.PresenceState{UserID: fmt.Sprintf("u%02d", i), Online: true, LastActiveAt: atp(int64(i)), OfflineSince: atp(int64(i))})
	}
	var mu sync.Mutex
	taken := map[string]int{}
	var wg sync.WaitGroup
	errs := make([]error, sweepers)
	start := make(chan struct{})
	for w := range sweepers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for {
				var got []string
				err := e.s.Update(e.ctx, func(tx chat.Tx) error {
					got = got[:0]
					ss, err := tx.LapsedPresence(e.ctx, at(1000).Time, 5)
					if err != nil {
						return err
					}
					for _, s := range ss {
						s.Online, s.OfflineSince = false, nil
						if err := tx.SetPresence(e.ctx, s); err != nil {
							return err
						}
						got = append(got, s.UserID)
					}
					return nil
				})
				if err != nil {
					errs[w] = err
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, u := range got {
					taken[u]++
				}
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, taken, users)
	for u, n := range taken {
		require.Equal(t, 1, n, "user %s taken offline %d times", u, n)
	}
}

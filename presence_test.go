package chat_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
)

// TestOnlineReadsTheStore: Online answers for any number of ids, from
// the stream rows of every process sharing the store (a second Service
// with no Presence of its own sees the first one's streams), and for this
// process's streams before they are written.
func TestOnlineReadsTheStore(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	svc, err := chat.New(ctx, st, chat.Config{})
	require.NoError(t, err)
	other, err := chat.New(ctx, st, chat.Config{})
	require.NoError(t, err)
	ids := make([]string, 2500)
	for i := range ids {
		ids[i] = fmt.Sprintf("u%04d", i)
	}
	require.NoError(t, st.Update(ctx, func(tx chat.Tx) error {
		_, err := tx.EnsureUsers(ctx, ids, time.Now())
		return err
	}))
	p := chat.NewPresence(svc, chat.PresenceConfig{Grace: time.Hour})
	p.Open("u2400") // before Start: written by the first sync
	require.NoError(t, p.Start(ctx))
	defer func() { require.NoError(t, p.Stop(ctx)) }()
	m, err := svc.Online(ctx, ids)
	require.NoError(t, err)
	require.Len(t, m, len(ids))
	require.True(t, m["u2400"], "this process's stream counts at once")
	require.NoError(t, p.Sync(ctx))
	m, err = other.Online(ctx, append(ids, "nobody"))
	require.NoError(t, err)
	require.Len(t, m, len(ids)+1)
	for id, on := range m {
		require.Equal(t, id == "u2400", on, id)
	}
	p.Close("u2400")
	require.NoError(t, p.Sync(ctx))
	m, err = other.Online(ctx, []string{"u2400"})
	require.NoError(t, err)
	require.False(t, m["u2400"], "no open stream, grace period or not")
	require.NoError(t, st.View(ctx, func(tx chat.Tx) error {
		u, err := tx.GetUser(ctx, "u2400")
		require.True(t, u.Online, "online during the grace period")
		return err
	}))
}

// TestPresenceLostLease: a process whose lease expired while it ran (its
// rows were deleted by another process) writes its users again at its
// next renewal, and they stay online. The renewal waits for the test's
// gate, so that the sweep always comes first, as it does when a process
// loses the store for longer than its lease.
func TestPresenceLostLease(t *testing.T) {
	ctx := context.Background()
	gate := &gatedStore{Store: memory.New(), op: "presence.renew", open: make(chan struct{})}
	st := gate.Store
	clk := &clock{t: time.Now()}
	svc, err := chat.New(ctx, gate, chat.Config{Now: clk.Now})
	require.NoError(t, err)
	require.NoError(t, st.Update(ctx, func(tx chat.Tx) error {
		_, err := tx.EnsureUsers(ctx, []string{"alice"}, clk.Now())
		return err
	}))
	p := chat.NewPresence(svc, chat.PresenceConfig{Grace: time.Hour, Lease: 300 * time.Millisecond})
	require.NoError(t, p.Start(ctx))
	defer func() { require.NoError(t, p.Stop(ctx)) }()
	defer gate.release() // before Stop, which waits for a renewal in progress
	sweeper := chat.NewPresence(svc, chat.PresenceConfig{Grace: time.Hour})
	p.Open("alice")
	require.NoError(t, p.Sync(ctx))
	state := func() *chat.PresenceState {
		var s *chat.PresenceState
		require.NoError(t, st.View(ctx, func(tx chat.Tx) (err error) { s, err = tx.LockPresence(ctx, "alice"); return err }))
		return s
	}
	require.True(t, state().Online)
	require.Nil(t, state().OfflineSince)

	// The clock passes the lease; another process sweeps p's rows.
	clk.Add(time.Second)
	require.NoError(t, sweeper.Sweep(ctx))
	s := state()
	require.True(t, s.Online)
	require.NotNil(t, s.OfflineSince, "alice's grace period started: p's rows are gone")
	// p's next renewal (its goroutine, every Lease/3) finds the lease
	// lost and writes alice again.
	gate.release()
	require.Eventually(t, func() bool {
		s := state()
		m, err := svc.Online(ctx, []string{"alice"})
		return err == nil && s.Online && s.OfflineSince == nil && m["alice"]
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, st.View(ctx, func(tx chat.Tx) error {
		live, err := tx.LivePresence(ctx, []string{"alice"}, clk.Now())
		require.Equal(t, []string{"alice"}, live, "the row is back, under a live lease")
		return err
	}))
}

// gatedStore holds the write transactions of one operation until release.
type gatedStore struct {
	chat.Store
	op   string
	open chan struct{}
	once sync.Once
}

func (g *gatedStore) Update(ctx context.Context, fn func(chat.Tx) error) error {
	if chat.Operation(ctx) == g.op {
		select {
		case <-g.open:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.Store.Update(ctx, fn)
}

func (g *gatedStore) release() { g.once.Do(func() { close(g.open) }) }

// countingStore counts the write transactions of each operation.
type countingStore struct {
	chat.Store
	mu  sync.Mutex
	ops map[string]int
}

func (c *countingStore) Update(ctx context.Context, fn func(chat.Tx) error) error {
	c.mu.Lock()
	c.ops[chat.Operation(ctx)]++
	c.mu.Unlock()
	return c.Store.Update(ctx, fn)
}

// TestPresenceWritesInBatches: a burst of first streams (a restart's
// reconnects, here all opened before Start) is written 100 users to a
// transaction; every user ends online, then, its streams closed, in its
// grace period.
func TestPresenceWritesInBatches(t *testing.T) {
	ctx := context.Background()
	st := &countingStore{Store: memory.New(), ops: map[string]int{}}
	svc, err := chat.New(ctx, st, chat.Config{})
	require.NoError(t, err)
	ids := make([]string, 250)
	for i := range ids {
		ids[i] = fmt.Sprintf("u%03d", i)
	}
	require.NoError(t, st.Update(ctx, func(tx chat.Tx) error {
		_, err := tx.EnsureUsers(ctx, ids, time.Now())
		return err
	}))
	p := chat.NewPresence(svc, chat.PresenceConfig{Grace: time.Hour})
	for _, u := range append(ids, "nobody") {
		p.Open(u)
	}
	require.NoError(t, p.Start(ctx))
	defer func() { require.NoError(t, p.Stop(ctx)) }()
	require.NoError(t, p.Sync(ctx))
	st.mu.Lock()
	require.Equal(t, 3, st.ops["presence.open"], "251 users in batches of 100")
	st.mu.Unlock()
	users, err := svc.Online(ctx, append(ids, "nobody"))
	require.NoError(t, err)
	for _, u := range ids {
		require.True(t, users[u], u)
	}
	require.NoError(t, st.View(ctx, func(tx chat.Tx) error {
		_, err := tx.GetUser(ctx, "nobody")
		require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err), "no user made for a stream")
		return nil
	}))
	for _, u := range ids {
		p.Close(u)
	}
	// The closes race with the background sync, which may take them in
	// parts: only the end state is certain.
	require.NoError(t, p.Sync(ctx))
	require.NoError(t, st.View(ctx, func(tx chat.Tx) error {
		for _, u := range ids {
			usr, err := tx.GetUser(ctx, u)
			require.NoError(t, err)
			require.True(t, usr.Online, "online during the grace period")
		}
		return nil
	}))
	users, err = svc.Online(ctx, ids)
	require.NoError(t, err)
	for _, u := range ids {
		require.False(t, users[u], u)
	}
}

package stream_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/internal/pgtest"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/store/postgres"
	"github.com/chatengine/chat/store/sqlite"
	"github.com/chatengine/chat/stream"
)

// presenceProc is one server process for the presence tests: a Service,
// its Presence and a hub that reports to it.
type presenceProc struct {
	svc  *chat.Service
	pres *chat.Presence
	hub  *stream.Hub
}

// startPresence starts a Presence and a hub over svc, stopped at the end
// of the test (hub first, as the example server does).
func startPresence(t *testing.T, ctx context.Context, svc *chat.Service, cfg chat.PresenceConfig) *presenceProc {
	t.Helper()
	p := chat.NewPresence(svc, cfg)
	require.NoError(t, p.Start(ctx))
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	hub := stream.New(svc, stream.Config{Presence: p})
	require.NoError(t, hub.Start(ctx))
	t.Cleanup(func() { _ = hub.Stop(context.Background()) })
	return &presenceProc{svc: svc, pres: p, hub: hub}
}

func (p *presenceProc) subscribe(t *testing.T, ctx context.Context, f stream.Filter) *stream.Subscription {
	t.Helper()
	s, err := p.hub.Subscribe(ctx, f, nil)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// nextPresence returns the data of the next user.didChangePresence frame
// of s, passing over logged events (a bound of 10 s, not a timing).
func nextPresence(t *testing.T, s *stream.Subscription) chat.PresenceEventData {
	t.Helper()
	for {
		f := next(t, s)
		if f.Event != chat.EventUserDidChangePresence {
			require.NotEmpty(t, f.ID, "an ephemeral frame other than presence: %s", f.Event)
			continue
		}
		require.Empty(t, f.ID, "presence events are not in the log")
		var d chat.PresenceEventData
		require.NoError(t, json.Unmarshal(f.Data, &d))
		return d
	}
}

func userOf(t *testing.T, ctx context.Context, svc *chat.Service, admin, id string) chat.User {
	t.Helper()
	l, err := svc.GetUser(ctx, admin, id)
	require.NoError(t, err)
	require.Len(t, l.Users, 1)
	return l.Users[0]
}

func online(t *testing.T, ctx context.Context, svc *chat.Service, ids ...string) map[string]bool {
	t.Helper()
	m, err := svc.Online(ctx, ids)
	require.NoError(t, err)
	return m
}

// TestPresencePostgresTwoProcesses: two processes on one Postgres schema.
// alice connects to one; bob, a member of alice's channel, connected to
// the other, sees her online, and so do reads through the other; carol,
// who shares no channel with her, is told nothing. When alice's stream
// closes, bob sees her offline once the grace period has passed.
func TestPresencePostgresTwoProcesses(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stores := pgStores(t, ctx, 2)
	cfg := chat.PresenceConfig{Grace: 200 * time.Millisecond, Interval: 20 * time.Millisecond}
	var procs [2]*presenceProc
	for i, st := range stores {
		svc, err := chat.New(ctx, st, chat.Config{})
		require.NoError(t, err)
		procs[i] = startPresence(t, ctx, svc, cfg)
	}
	a, b := procs[0], procs[1]
	admin, _, err := a.svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	for c, members := range map[string][]string{"c": {"alice", "bob"}, "d": {"carol", "dave"}} {
		_, err := a.svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: c, Type: chat.ChannelTypeStandard, UserIDs: members})
		require.NoError(t, err)
	}

	bob := b.subscribe(t, ctx, stream.Filter{UserID: "bob"})
	carol := b.subscribe(t, ctx, stream.Filter{UserID: "carol"})
	watch := b.subscribe(t, ctx, stream.Filter{Admin: true})
	require.False(t, userOf(t, ctx, b.svc, admin.UserID, "alice").Online)

	aliceCtx, closeAlice := context.WithCancel(ctx)
	_, err = a.hub.Subscribe(aliceCtx, stream.Filter{UserID: "alice"}, nil)
	require.NoError(t, err)
	got := nextPresence(t, bob)
	require.Equal(t, "alice", got.UserID)
	require.True(t, got.Online)
	require.NotNil(t, got.LastActiveAt)
	for {
		d := nextPresence(t, watch) // admins see every user's presence (bob's and carol's too)
		if d.UserID == "alice" {
			require.True(t, d.Online)
			break
		}
	}
	u := userOf(t, ctx, b.svc, admin.UserID, "alice")
	require.True(t, u.Online, "read through the other process")
	require.NotNil(t, u.LastActiveAt)
	require.Equal(t, map[string]bool{"alice": true, "carol": true, "dave": false}, online(t, ctx, b.svc, "alice", "carol", "dave"))

	// carol shares no channel with alice: the next frame she gets is
	// dave's presence, sent after alice's.
	_, err = b.hub.Subscribe(ctx, stream.Filter{UserID: "dave"}, nil)
	require.NoError(t, err)
	got = nextPresence(t, carol)
	require.Equal(t, "dave", got.UserID)
	require.True(t, got.Online)

	closeAlice()
	got = nextPresence(t, bob)
	require.Equal(t, "alice", got.UserID)
	require.False(t, got.Online)
	require.NotNil(t, got.LastActiveAt)
	u = userOf(t, ctx, a.svc, admin.UserID, "alice")
	require.False(t, u.Online)
	require.Equal(t, got.LastActiveAt.Time, u.LastActiveAt.Time, "lastActiveAt is when her last stream closed")
	require.Equal(t, map[string]bool{"alice": false}, online(t, ctx, a.svc, "alice"))
}

// pgStores opens n stores on one fresh schema: n processes.
func pgStores(t *testing.T, ctx context.Context, n int) []*postgres.Store {
	t.Helper()
	dsn := pgtest.URL(t)
	schema := pgtest.SchemaName()
	t.Cleanup(func() {
		db, err := sql.Open("postgres", dsn)
		if err == nil {
			_, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE")
			db.Close()
		}
	})
	var out []*postgres.Store
	for range n {
		st, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: schema, MaxOpenConns: 4})
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		out = append(out, st)
	}
	return out
}

// TestPresencePostgresCrash: a process that stops without cleaning up (it
// loses its store: no deregistration, no renewal) leaves its users online
// only until its lease expires and the grace period passes; then another
// process takes them offline and announces it.
func TestPresencePostgresCrash(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stores := pgStores(t, ctx, 2)
	svcA, err := chat.New(ctx, stores[0], chat.Config{})
	require.NoError(t, err)
	svcB, err := chat.New(ctx, stores[1], chat.Config{})
	require.NoError(t, err)
	a := startPresence(t, ctx, svcA, chat.PresenceConfig{Grace: time.Hour, Lease: time.Second})
	b := startPresence(t, ctx, svcB, chat.PresenceConfig{Grace: 100 * time.Millisecond, Interval: 20 * time.Millisecond})
	admin, _, err := svcA.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	_, err = svcA.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice", "bob"}})
	require.NoError(t, err)
	bob := b.subscribe(t, ctx, stream.Filter{UserID: "bob"})
	a.subscribe(t, ctx, stream.Filter{UserID: "alice"})
	got := nextPresence(t, bob)
	require.Equal(t, chat.PresenceEventData{UserID: "alice", Online: true, LastActiveAt: got.LastActiveAt}, got)

	// The crash: process A's store goes away under its Presence and hub.
	require.NoError(t, stores[0].Close())
	got = nextPresence(t, bob)
	require.Equal(t, "alice", got.UserID)
	require.False(t, got.Online, "offline once A's lease expired and B's grace passed")
	u := userOf(t, ctx, svcB, admin.UserID, "alice")
	require.False(t, u.Online)
	require.NotNil(t, u.LastActiveAt)
	require.Equal(t, map[string]bool{"alice": false}, online(t, ctx, svcB, "alice"))

	// A restarted process has a new id: alice online again through it.
	a2 := startPresence(t, ctx, svcB, chat.PresenceConfig{Grace: time.Hour})
	require.NotEqual(t, a.pres.ProcessID(), a2.pres.ProcessID())
	a2.subscribe(t, ctx, stream.Filter{UserID: "alice"})
	got = nextPresence(t, bob)
	require.Equal(t, "alice", got.UserID)
	require.True(t, got.Online)
}

// TestPresenceFlapAnnouncesNothing: a stream that closes and opens again
// within the grace period announces nothing, whether the close reached
// the store or not. The marker is another user's presence, which goes
// through the same queue after anything alice's flaps would have sent.
func TestPresenceFlapAnnouncesNothing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	svc, err := chat.New(ctx, memory.New(), chat.Config{})
	require.NoError(t, err)
	p := startPresence(t, ctx, svc, chat.PresenceConfig{Grace: time.Hour})
	admin, _, err := svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	_, err = svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice", "bob", "dave"}})
	require.NoError(t, err)
	bob := p.subscribe(t, ctx, stream.Filter{UserID: "bob"})
	s1, err := p.hub.Subscribe(ctx, stream.Filter{UserID: "alice"}, nil)
	require.NoError(t, err)
	require.NoError(t, p.pres.Sync(ctx))
	require.Equal(t, "alice", nextPresence(t, bob).UserID)

	// Closed and written: alice is in her grace period.
	s1.Close()
	require.NoError(t, p.pres.Sync(ctx))
	require.True(t, userOf(t, ctx, svc, admin.UserID, "alice").Online, "online during the grace period")
	require.Equal(t, map[string]bool{"alice": false}, online(t, ctx, svc, "alice"), "no open stream")
	s2, err := p.hub.Subscribe(ctx, stream.Filter{UserID: "alice"}, nil)
	require.NoError(t, err)
	require.NoError(t, p.pres.Sync(ctx))
	require.NoError(t, p.pres.Sweep(ctx))
	require.Equal(t, map[string]bool{"alice": true}, online(t, ctx, svc, "alice"))

	// Closed and opened between two syncs.
	s2.Close()
	_, err = p.hub.Subscribe(ctx, stream.Filter{UserID: "alice"}, nil)
	require.NoError(t, err)
	require.NoError(t, p.pres.Sync(ctx))
	require.NoError(t, p.pres.Sweep(ctx))

	p.subscribe(t, ctx, stream.Filter{UserID: "dave"})
	require.NoError(t, p.pres.Sync(ctx))
	got := nextPresence(t, bob)
	require.Equal(t, "dave", got.UserID, "alice's flaps sent nothing before dave's presence")
	require.True(t, userOf(t, ctx, svc, admin.UserID, "alice").Online)
}

// TestPresenceSingleProcess: the memory and SQLite stores serve one
// process: online at the first stream, still online while another stream
// of the user remains, offline after the grace period; the user's own
// streams and admins' streams do not count.
func TestPresenceSingleProcess(t *testing.T) {
	t.Parallel()
	stores := map[string]func(t *testing.T) chat.Store{
		"memory": func(*testing.T) chat.Store { return memory.New() },
		"sqlite": func(t *testing.T) chat.Store {
			st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "chat.db"), nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			return st
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			svc, err := chat.New(ctx, open(t), chat.Config{})
			require.NoError(t, err)
			p := startPresence(t, ctx, svc, chat.PresenceConfig{Grace: 100 * time.Millisecond, Interval: 10 * time.Millisecond})
			admin, _, err := svc.CreateAdmin(ctx, "", "ops", "")
			require.NoError(t, err)
			_, err = svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice", "bob"}})
			require.NoError(t, err)
			p.subscribe(t, ctx, stream.Filter{Admin: true})
			require.NoError(t, p.pres.Sync(ctx))
			require.False(t, userOf(t, ctx, svc, admin.UserID, admin.UserID).Online, "an admin's stream does not count")

			// alice's announcement is made before bob's (written first,
			// or in the same sync in user order): the first she hears is
			// bob's, never her own.
			first := p.subscribe(t, ctx, stream.Filter{UserID: "alice"})
			second := p.subscribe(t, ctx, stream.Filter{UserID: "alice"})
			bob := p.subscribe(t, ctx, stream.Filter{UserID: "bob"})
			got := nextPresence(t, first)
			require.Equal(t, chat.PresenceEventData{UserID: "bob", Online: true, LastActiveAt: got.LastActiveAt}, got)
			require.NotNil(t, got.LastActiveAt)
			require.True(t, userOf(t, ctx, svc, admin.UserID, "alice").Online)
			l, err := svc.QueryUsers(ctx, admin.UserID, chat.UserQuery{})
			require.NoError(t, err)
			for _, u := range l.Users {
				require.Equal(t, u.UserID == "alice" || u.UserID == "bob", u.Online, "user %s", u.UserID)
			}

			first.Close()
			require.NoError(t, p.pres.Sync(ctx))
			require.NoError(t, p.pres.Sweep(ctx))
			require.Equal(t, map[string]bool{"alice": true}, online(t, ctx, svc, "alice"), "one stream remains")
			second.Close()
			// bob may or may not have been there for alice's going online.
			for got = nextPresence(t, bob); got.Online; got = nextPresence(t, bob) {
				require.Equal(t, "alice", got.UserID)
			}
			require.Equal(t, "alice", got.UserID)
			u := userOf(t, ctx, svc, admin.UserID, "alice")
			require.False(t, u.Online)
			require.NotNil(t, u.LastActiveAt)
		})
	}
}

// TestPresenceBlocked: a user who blocks another is not told of its
// presence; the other members of the channel are.
func TestPresenceBlocked(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	svc, err := chat.New(ctx, memory.New(), chat.Config{})
	require.NoError(t, err)
	p := startPresence(t, ctx, svc, chat.PresenceConfig{Grace: time.Hour})
	admin, _, err := svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	_, err = svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice", "bob", "carol", "dave"}})
	require.NoError(t, err)
	_, err = svc.BlockUser(ctx, "carol", "carol", "alice")
	require.NoError(t, err)
	bob := p.subscribe(t, ctx, stream.Filter{UserID: "bob"})
	carol := p.subscribe(t, ctx, stream.Filter{UserID: "carol"})
	require.NoError(t, p.pres.Sync(ctx))
	p.subscribe(t, ctx, stream.Filter{UserID: "alice"})
	require.NoError(t, p.pres.Sync(ctx))
	for got := nextPresence(t, bob); got.UserID != "alice"; got = nextPresence(t, bob) {
		require.Equal(t, "carol", got.UserID)
	}
	p.subscribe(t, ctx, stream.Filter{UserID: "dave"})
	require.NoError(t, p.pres.Sync(ctx))
	for got := nextPresence(t, carol); got.UserID != "dave"; got = nextPresence(t, carol) {
		require.Equal(t, "bob", got.UserID, "carol blocks alice: never told of her")
	}
}

// TestPresenceLargeChannel: the presence of a user goes to the members of
// its channels of at most Config.PresenceMaxMembers members; a member of
// only a larger channel is not told (it reads User.Online instead), and
// admins' streams without a filter still are.
func TestPresenceLargeChannel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	svc, err := chat.New(ctx, memory.New(), chat.Config{})
	require.NoError(t, err)
	pres := chat.NewPresence(svc, chat.PresenceConfig{Grace: time.Hour})
	require.NoError(t, pres.Start(ctx))
	t.Cleanup(func() { _ = pres.Stop(context.Background()) })
	hub := stream.New(svc, stream.Config{Presence: pres, PresenceMaxMembers: 2})
	require.NoError(t, hub.Start(ctx))
	t.Cleanup(func() { _ = hub.Stop(context.Background()) })
	p := &presenceProc{svc: svc, pres: pres, hub: hub}
	admin, _, err := svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	for c, members := range map[string][]string{"big": {"alice", "bob", "carol"}, "small": {"alice", "dave"}, "pair": {"bob", "eve"}} {
		_, err := svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: c, Type: chat.ChannelTypeStandard, UserIDs: members})
		require.NoError(t, err)
	}
	bob := p.subscribe(t, ctx, stream.Filter{UserID: "bob"})
	dave := p.subscribe(t, ctx, stream.Filter{UserID: "dave"})
	watch := p.subscribe(t, ctx, stream.Filter{Admin: true})
	require.NoError(t, pres.Sync(ctx))
	p.subscribe(t, ctx, stream.Filter{UserID: "alice"})
	require.NoError(t, pres.Sync(ctx))
	got := nextPresence(t, dave) // "small" has two members
	require.Equal(t, "alice", got.UserID)
	require.True(t, got.Online)
	for got = nextPresence(t, watch); got.UserID != "alice"; got = nextPresence(t, watch) {
	}
	// eve comes online after alice; events are delivered in order, so
	// bob's first presence frame would be alice's had "big" counted.
	p.subscribe(t, ctx, stream.Filter{UserID: "eve"})
	require.NoError(t, pres.Sync(ctx))
	got = nextPresence(t, bob)
	require.Equal(t, "eve", got.UserID, "bob shares only a channel of three with alice")
	require.True(t, online(t, ctx, svc, "alice")["alice"], "bob can read alice's presence")
}

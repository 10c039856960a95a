package stream_test

import (
	"context"
	"database/sql"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/broker"
	"github.com/chatengine/chat/internal/pgtest"
	"github.com/chatengine/chat/store/postgres"
	"github.com/chatengine/chat/stream"
)

// TestPostgresAcrossStores: two stores on one Postgres schema stand for
// two server processes. Messages posted through one reach a subscriber of
// the other's hub, all of them and in order, woken by LISTEN/NOTIFY (the
// hub's poll interval is an hour, so no poll can deliver them).
func TestPostgresAcrossStores(t *testing.T) {
	t.Parallel()
	dsn := pgtest.URL(t)
	schema := pgtest.SchemaName()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	open := func() *postgres.Store {
		st, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: schema, MaxOpenConns: 4})
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	a := open()
	b := open()
	t.Cleanup(func() {
		db, err := sql.Open("postgres", dsn)
		if err == nil {
			_, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE")
			db.Close()
		}
	})
	svcA, err := chat.New(ctx, a, chat.Config{})
	require.NoError(t, err)
	svcB, err := chat.New(ctx, b, chat.Config{})
	require.NoError(t, err)
	// The Postgres broker, named (the default with a Postgres store).
	hub := stream.New(svcB, stream.Config{Broker: broker.Postgres(b, time.Hour)})
	require.NoError(t, hub.Start(ctx))
	defer func() { _ = hub.Stop(context.Background()) }()
	sub, err := hub.Subscribe(ctx, stream.Filter{Admin: true}, nil)
	require.NoError(t, err)
	defer sub.Close()

	admin, _, err := svcA.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	_, err = svcA.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice"}})
	require.NoError(t, err)
	const n = 50
	go func() {
		for i := 1; i <= n; i++ {
			if _, err := svcA.CreateMessage(ctx, "alice", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: chat.TextData(strconv.Itoa(i))}); err != nil {
				return // the receiving side fails on the missing message
			}
		}
	}()
	var last int64
	want := 1
	for want <= n {
		f := next(t, sub)
		v := id(t, f)
		require.Greater(t, v, last)
		last = v
		if f.Event != chat.EventMessageDidCreate {
			continue // user and channel creation
		}
		require.Equal(t, strconv.Itoa(want), text(t, f))
		want++
	}
}

// clock is a settable clock for the Services of a test.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}

func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// process is one of two server processes on one Postgres schema: its own
// store, Service and hub.
type process struct {
	st  *postgres.Store
	svc *chat.Service
	hub *stream.Hub
}

// twoProcesses opens two stores on one fresh schema, each with its
// Service (sharing clk) and a started hub.
func twoProcesses(t *testing.T, ctx context.Context, clk *clock, cfg stream.Config) (a, b *process, admin string) {
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
	open := func() *process {
		st, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: schema, MaxOpenConns: 4})
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		svc, err := chat.New(ctx, st, chat.Config{Now: clk.Now})
		require.NoError(t, err)
		hub := stream.New(svc, cfg)
		require.NoError(t, hub.Start(ctx))
		t.Cleanup(func() { _ = hub.Stop(context.Background()) })
		return &process{st: st, svc: svc, hub: hub}
	}
	a, b = open(), open()
	ad, _, err := a.svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	return a, b, ad.UserID
}

// TestPostgresTicketAcrossProcesses: a ticket issued by one process opens
// a stream on the other, once; of two processes redeeming one ticket at
// once, one succeeds; an expired ticket opens nothing, and the retention
// job deletes it.
func TestPostgresTicketAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	clk := newClock()
	a, b, _ := twoProcesses(t, ctx, clk, stream.Config{EventRetention: 50 * time.Millisecond})

	tk, exp, err := a.hub.IssueTicket(ctx, stream.Caller{UserID: "alice"})
	require.NoError(t, err)
	require.True(t, clk.Now().Add(60*time.Second).Truncate(time.Millisecond).Equal(exp), "expiry %v", exp)
	c, ok, err := b.hub.RedeemTicket(ctx, tk)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "alice", c.UserID)
	require.False(t, c.Admin)
	require.NotNil(t, c.Access, "a user's ticket carries the access it was issued under")
	require.Equal(t, "alice", c.Access.UserID)
	for _, p := range []*process{a, b} {
		_, ok, err = p.hub.RedeemTicket(ctx, tk)
		require.NoError(t, err)
		require.False(t, ok, "a ticket is single use across processes")
	}

	for range 10 {
		tk, _, err := b.hub.IssueTicket(ctx, stream.Caller{UserID: "ops-user", Admin: true})
		require.NoError(t, err)
		var wins atomic.Int64
		var wg sync.WaitGroup
		for _, p := range []*process{a, b, a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, ok, err := p.hub.RedeemTicket(ctx, tk)
				if err != nil {
					t.Error(err)
				}
				if ok {
					require.Equal(t, stream.Caller{UserID: "ops-user", Admin: true}, c)
					wins.Add(1)
				}
			}()
		}
		wg.Wait()
		require.Equal(t, int64(1), wins.Load())
	}

	late, _, err := a.hub.IssueTicket(ctx, stream.Caller{UserID: "alice"})
	require.NoError(t, err)
	_, _, err = a.hub.IssueTicket(ctx, stream.Caller{UserID: "bob"}) // never redeemed
	require.NoError(t, err)
	clk.Advance(61 * time.Second)
	_, ok, err = b.hub.RedeemTicket(ctx, late)
	require.NoError(t, err)
	require.False(t, ok, "expired")
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, a.st.DB().QueryRowContext(ctx, "SELECT count(*) FROM "+a.st.Schema()+".stream_tickets").Scan(&n))
		return n == 0
	}, 20*time.Second, 10*time.Millisecond, "the retention job deletes expired tickets")
}

// TestPostgresTypingAcrossProcesses: a user typing on one process reaches
// the streams of the channel's other members on the other process, through
// NOTIFY, once; the typist's own stream does not get it.
func TestPostgresTypingAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, b, admin := twoProcesses(t, ctx, newClock(), stream.Config{PollInterval: time.Hour})
	_, err := a.svc.CreateChannel(ctx, admin, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice", "bob"}})
	require.NoError(t, err)
	bob, err := b.hub.Subscribe(ctx, stream.Filter{UserID: "bob"}, nil)
	require.NoError(t, err)
	defer bob.Close()
	alice, err := a.hub.Subscribe(ctx, stream.Filter{UserID: "alice"}, nil)
	require.NoError(t, err)
	defer alice.Close()
	watch, err := a.hub.Subscribe(ctx, stream.Filter{Admin: true}, nil)
	require.NoError(t, err)
	defer watch.Close()

	require.NoError(t, a.svc.Typing(ctx, "alice", "c"))
	_, err = a.svc.CreateMessage(ctx, "alice", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: chat.TextData("after typing")})
	require.NoError(t, err)

	// The typing notification and the message's commit come by different
	// routes, so either may be first.
	got := map[string]stream.Frame{}
	for range 2 {
		f := next(t, bob)
		got[f.Event] = f
	}
	f := got[chat.EventChannelDidStartTyping]
	require.JSONEq(t, `{"channelId":"c","userId":"alice"}`, string(f.Data))
	require.Empty(t, f.ID, "ephemeral: no event id")
	require.Equal(t, "after typing", text(t, got[chat.EventMessageDidCreate]))

	require.Equal(t, "after typing", text(t, next(t, alice)), "the typist's own stream has no typing event")

	// The admin stream on the typist's process gets the event once (from
	// NOTIFY, not also in process).
	var names []string
	for len(names) < 2 {
		names = append(names, next(t, watch).Event)
	}
	require.ElementsMatch(t, []string{chat.EventChannelDidStartTyping, chat.EventMessageDidCreate}, names)
	require.NoError(t, a.svc.Typing(ctx, "bob", "c")) // a marker: the next typing event
	f = next(t, watch)
	require.Equal(t, chat.EventChannelDidStartTyping, f.Event)
	require.JSONEq(t, `{"channelId":"c","userId":"bob"}`, string(f.Data), "alice's typing came twice")
}

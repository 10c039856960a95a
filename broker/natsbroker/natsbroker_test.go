package natsbroker

import (
	"context"
	"database/sql"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/internal/natstest"
	"github.com/chatengine/chat/internal/pgtest"
	"github.com/chatengine/chat/store/postgres"
	"github.com/chatengine/chat/stream"
)

// proc is one server process: its store on the shared schema, its NATS
// broker, Service and hub.
type proc struct {
	st  *postgres.Store
	br  *Broker
	svc *chat.Service
	hub *stream.Hub
}

// deployment is Postgres (a fresh schema) and one nats-server.
type deployment struct {
	t      *testing.T
	ctx    context.Context
	dsn    string
	schema string
	ns     *natstest.Server
}

func newDeployment(t *testing.T, ctx context.Context) *deployment {
	t.Helper()
	ns := natstest.Start(t)
	dsn := pgtest.URL(t)
	schema := pgtest.SchemaName()
	t.Cleanup(func() {
		db, err := sql.Open("postgres", dsn)
		if err == nil {
			_, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE")
			db.Close()
		}
	})
	return &deployment{t: t, ctx: ctx, dsn: dsn, schema: schema, ns: ns}
}

// start starts a process; publish says whether it is a publisher's
// candidate, hooks runs before its candidate starts.
func (d *deployment) start(publish bool, hooks func(*Broker)) *proc {
	t := d.t
	st, err := postgres.Open(d.ctx, d.dsn, &postgres.Options{Schema: d.schema, MaxOpenConns: 4})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	br, err := New(d.ctx, Config{URLs: []string{d.ns.URL()}, Store: st, PollInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = br.Close() })
	if hooks != nil {
		hooks(br)
	}
	if publish {
		br.cfg.Leaser = st
		br.startCandidate()
	}
	svc, err := chat.New(d.ctx, st, chat.Config{EphemeralBroker: br})
	require.NoError(t, err)
	hub := stream.New(svc, stream.Config{Broker: br, PollInterval: time.Hour})
	require.NoError(t, hub.Start(d.ctx))
	t.Cleanup(func() { _ = hub.Stop(context.Background()) })
	return &proc{st: st, br: br, svc: svc, hub: hub}
}

func next(t *testing.T, s *stream.Subscription) stream.Frame {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f, err := s.Next(ctx)
	require.NoError(t, err)
	return f
}

func text(t *testing.T, f stream.Frame) string {
	t.Helper()
	require.Equal(t, chat.EventMessageDidCreate, f.Event)
	var d chat.MessageEventData
	require.NoError(t, json.Unmarshal(f.Data, &d))
	s, _ := d.Messages[0].Text()
	return s
}

func post(t *testing.T, ctx context.Context, p *proc, user, channel, txt string) {
	t.Helper()
	_, err := p.svc.CreateMessage(ctx, user, chat.CreateMessageInput{ChannelID: channel, Type: chat.MessageTypeText, Data: chat.TextData(txt)})
	require.NoError(t, err)
}

// expectTexts reads frames until it has the texts want of message events
// in order, each once, ids increasing; other events are skipped.
func expectTexts(t *testing.T, s *stream.Subscription, want []string) {
	t.Helper()
	var last int64
	for i := 0; i < len(want); {
		f := next(t, s)
		if f.ID != "" {
			v, err := strconv.ParseInt(f.ID, 10, 64)
			require.NoError(t, err)
			require.Greater(t, v, last, "ids increase: no repeat")
			last = v
		}
		if f.Event != chat.EventMessageDidCreate {
			continue
		}
		require.Equal(t, want[i], text(t, f))
		i++
	}
}

func texts(prefix string, n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, prefix+strconv.Itoa(i))
	}
	return out
}

// TestAcrossProcesses: events committed on one process reach a stream on
// the other through NATS, all of them, in order, once; the hubs never
// poll the log (PollInterval is an hour). A stream that resumes on the
// other process from an id it got on the first continues with no gap and
// no repeat: ids mean the same everywhere.
func TestAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d := newDeployment(t, ctx)
	a := d.start(true, nil)
	b := d.start(true, nil)
	admin, _, err := a.svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	_, err = a.svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice"}})
	require.NoError(t, err)
	sub, err := b.hub.Subscribe(ctx, stream.Filter{UserID: "alice"}, nil)
	require.NoError(t, err)
	defer sub.Close()
	want := texts("m", 40)
	go func() {
		for _, w := range want {
			if _, err := a.svc.CreateMessage(ctx, "alice", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: chat.TextData(w)}); err != nil {
				return // the reader fails on the missing message
			}
		}
	}()
	var mid string
	for i := 0; i < 20; {
		f := next(t, sub)
		if f.Event == chat.EventMessageDidCreate {
			require.Equal(t, want[i], text(t, f))
			i++
			mid = f.ID
		}
	}
	sub.Close()
	after, err := strconv.ParseInt(mid, 10, 64)
	require.NoError(t, err)
	resumed, err := a.hub.Subscribe(ctx, stream.Filter{UserID: "alice"}, &after)
	require.NoError(t, err)
	defer resumed.Close()
	require.True(t, resumed.Resumed)
	expectTexts(t, resumed, want[20:])

	// An admin without a filter follows everything.
	all, err := a.hub.Subscribe(ctx, stream.Filter{Admin: true}, nil)
	require.NoError(t, err)
	defer all.Close()
	post(t, ctx, b, "alice", "c", "to all")
	expectTexts(t, all, []string{"to all"})
}

// TestInterest: a process receives only the subjects of what its streams
// follow: the messages of a channel where its only stream's user is not a
// member never reach it, counted by the broker's received messages.
func TestInterest(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d := newDeployment(t, ctx)
	a := d.start(true, nil)
	b := d.start(false, nil)
	admin, _, err := a.svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	for _, c := range []string{"mine", "other"} {
		_, err = a.svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: c, Type: chat.ChannelTypeStandard, UserIDs: []string{"alice", "bob"}})
		require.NoError(t, err)
	}
	err = a.svc.RemoveUsers(ctx, admin.UserID, "other", []string{"alice"})
	require.NoError(t, err)
	sub, err := b.hub.Subscribe(ctx, stream.Filter{UserID: "alice"}, nil)
	require.NoError(t, err)
	defer sub.Close()
	// Once the stream has a marker, everything before it was published
	// (in id order): the count starts after it.
	post(t, ctx, a, "bob", "mine", "marker")
	expectTexts(t, sub, []string{"marker"})
	before := b.br.Received()
	for _, w := range texts("o", 30) {
		post(t, ctx, a, "bob", "other", w)
	}
	want := texts("m", 5)
	for _, w := range want {
		post(t, ctx, a, "bob", "mine", w)
	}
	expectTexts(t, sub, want)
	require.Equal(t, int64(len(want)), b.br.Received()-before,
		"the process received the 5 messages of its stream's channel, none of the 30 of the other")
	require.Zero(t, a.br.Received(), "a process without streams receives nothing")
}

// TestJoinFollowsChannel: an end user's live stream on a process that
// follows no other stream of a channel gets that channel's events from
// the one that adds the user on, with no gap, while messages keep coming.
func TestJoinFollowsChannel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d := newDeployment(t, ctx)
	a := d.start(true, nil)
	b := d.start(false, nil)
	admin, _, err := a.svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	_, err = a.svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"bob"}})
	require.NoError(t, err)
	sub, err := b.hub.Subscribe(ctx, stream.Filter{UserID: "alice"}, nil)
	require.NoError(t, err)
	defer sub.Close()
	stop := make(chan struct{})
	done := make(chan struct{})
	var posted atomic.Int64
	go func() {
		defer close(done)
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := a.svc.CreateMessage(ctx, "bob", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: chat.TextData("n" + strconv.Itoa(i))}); err != nil {
				return
			}
			posted.Store(int64(i))
		}
	}()
	require.Eventually(t, func() bool { return posted.Load() >= 5 }, 20*time.Second, time.Millisecond)
	_, err = a.svc.AddUsers(ctx, admin.UserID, "c", []string{"alice"})
	require.NoError(t, err)
	f := next(t, sub)
	require.Equal(t, chat.EventChannelDidAddUsers, f.Event)
	// The writer posts n1, n2, ... one after the other: after the add,
	// the stream must get consecutive numbers.
	prev := 0
	for range 30 {
		f := next(t, sub)
		require.Equal(t, chat.EventMessageDidCreate, f.Event)
		n, err := strconv.Atoi(text(t, f)[1:])
		require.NoError(t, err)
		if prev != 0 {
			require.Equal(t, prev+1, n, "no gap, no repeat after the user joined")
		}
		prev = n
	}
	close(stop)
	<-done
}

// crashTest: process a publishes until crash is set, then dies at the
// hook; process b, a candidate from then on, takes the lease over and
// publishes what a did not. A stream on b gets every message once, in
// order; the JetStream stream keeps each (event, subject) once.
func crashTest(t *testing.T, at func(b *Broker, crash *atomic.Bool)) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d := newDeployment(t, ctx)
	var crash atomic.Bool
	a := d.start(true, func(b *Broker) { at(b, &crash) })
	require.Eventually(t, a.br.Publishing, 20*time.Second, 5*time.Millisecond)
	b := d.start(true, nil)
	admin, _, err := a.svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	_, err = a.svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice"}})
	require.NoError(t, err)
	sub, err := b.hub.Subscribe(ctx, stream.Filter{UserID: "alice"}, nil)
	require.NoError(t, err)
	defer sub.Close()
	expectTexts(t, sub, nil)
	before := texts("before", 3)
	for _, w := range before {
		post(t, ctx, a, "alice", "c", w)
	}
	expectTexts(t, sub, before)
	require.True(t, a.br.Publishing(), "a still publishes")
	crash.Store(true)
	after := texts("after", 10)
	for _, w := range after {
		post(t, ctx, a, "alice", "c", w)
	}
	expectTexts(t, sub, after)
	require.False(t, a.br.Publishing())
	require.Eventually(t, b.br.Publishing, 20*time.Second, 5*time.Millisecond, "b took the lease over")

	// JetStream holds each event once per subject.
	var es []*chat.Event
	require.NoError(t, a.st.View(ctx, func(tx chat.Tx) (err error) {
		es, err = tx.ReadEvents(ctx, 0, 1000)
		return err
	}))
	want := 0
	for _, e := range es {
		want += len(b.br.subjects(e))
	}
	s, err := b.br.js.Stream(ctx, b.br.cfg.Stream)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		info, err := s.Info(ctx)
		require.NoError(t, err)
		return info.State.Msgs == uint64(want)
	}, 20*time.Second, 10*time.Millisecond, "%d messages, no duplicate", want)
}

// TestCrashBeforePublish: the events committed after the publisher died
// before publishing them are published by the next one.
func TestCrashBeforePublish(t *testing.T) {
	t.Parallel()
	crashTest(t, func(b *Broker, crash *atomic.Bool) {
		b.beforePublish = func() error {
			if crash.Load() {
				return errAbandon
			}
			return nil
		}
	})
}

// TestCrashBeforeAdvance: a publisher that died after publishing and
// before recording it: the next one publishes the same events again, and
// the stream still gets each once (dropped by id), JetStream keeps each
// once (Nats-Msg-Id).
func TestCrashBeforeAdvance(t *testing.T) {
	t.Parallel()
	crashTest(t, func(b *Broker, crash *atomic.Bool) {
		b.beforeAdvance = func() error {
			if crash.Load() {
				return errAbandon
			}
			return nil
		}
	})
}

// TestEphemeralAcrossProcesses: typing on one process reaches the stream
// of the channel's other member on the other, through NATS, once; the
// typist's stream does not get it; a read marker reaches the user's own
// stream on the other process.
func TestEphemeralAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d := newDeployment(t, ctx)
	a := d.start(true, nil)
	b := d.start(false, nil)
	admin, _, err := a.svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	_, err = a.svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice", "bob"}})
	require.NoError(t, err)
	bob, err := b.hub.Subscribe(ctx, stream.Filter{UserID: "bob"}, nil)
	require.NoError(t, err)
	defer bob.Close()
	alice, err := b.hub.Subscribe(ctx, stream.Filter{UserID: "alice"}, nil)
	require.NoError(t, err)
	defer alice.Close()

	got := make(chan chat.EphemeralEvent, 10)
	cancelEph := b.svc.SubscribeEphemeral(func(ev chat.EphemeralEvent) { got <- ev })
	defer cancelEph()

	require.NoError(t, a.svc.Typing(ctx, "alice", "c"))
	select {
	case ev := <-got:
		require.Equal(t, chat.EventChannelDidStartTyping, ev.Event)
		require.Equal(t, "alice", ev.UserID)
	case <-time.After(20 * time.Second):
		t.Fatal("the Service on the other process got no ephemeral event")
	}
	f := next(t, bob)
	require.Equal(t, chat.EventChannelDidStartTyping, f.Event)
	require.JSONEq(t, `{"channelId":"c","userId":"alice"}`, string(f.Data))
	require.Empty(t, f.ID)

	post(t, ctx, a, "bob", "c", "hi")
	require.Equal(t, "hi", text(t, next(t, alice)), "the typist's own stream has no typing event")
	require.Equal(t, "hi", text(t, next(t, bob)), "the typing came once")

	_, err = a.svc.MarkRead(ctx, "alice", "c", 0)
	require.NoError(t, err)
	f = next(t, alice)
	require.Equal(t, chat.EventChannelDidMarkRead, f.Event)
}

// TestRevocationAcrossProcesses: revoking a user's tokens on one process
// ends that user's stream on the other (the internal event reaches the
// process through the user's subject), and rotating an admin's token ends
// that admin's channel-filtered stream (through the admin's subject).
func TestRevocationAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d := newDeployment(t, ctx)
	a := d.start(true, nil)
	b := d.start(false, nil)
	admin, _, err := a.svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	ut, err := b.svc.IssueUserToken(ctx, "", "alice", time.Hour)
	require.NoError(t, err)
	ua, err := b.svc.UserTokenAccess(ut.Token)
	require.NoError(t, err)
	sub, err := b.hub.Subscribe(ctx, stream.Filter{UserID: "alice", Access: &ua}, nil)
	require.NoError(t, err)
	defer sub.Close()
	ops2, _, err := a.svc.CreateAdmin(ctx, "", "ops2", "")
	require.NoError(t, err)
	aa := chat.AdminAccess(ops2)
	adm, err := b.hub.Subscribe(ctx, stream.Filter{Admin: true, ChannelIDs: []string{"c"}, Access: &aa}, nil)
	require.NoError(t, err)
	defer adm.Close()

	require.NoError(t, a.svc.RevokeUserTokens(ctx, admin.UserID, "alice"))
	wait, cancelWait := context.WithTimeout(ctx, 20*time.Second)
	defer cancelWait()
	_, err = sub.Next(wait)
	require.ErrorIs(t, err, stream.ErrRevoked)

	_, err = a.svc.RotateAdmin(ctx, "", "ops2")
	require.NoError(t, err)
	_, err = adm.Next(wait)
	require.ErrorIs(t, err, stream.ErrAdminRevoked, "the admin's subject brought admin.didRevokeToken")
}

// TestServerRestart: the NATS server dies and comes back while messages
// are posted; the stream on the other process gets every one, in order,
// once: the new connection's Epoch, the barrier and a read of the log
// close the gap.
func TestServerRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	d := newDeployment(t, ctx)
	a := d.start(true, nil)
	b := d.start(false, nil)
	admin, _, err := a.svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	_, err = a.svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice"}})
	require.NoError(t, err)
	sub, err := b.hub.Subscribe(ctx, stream.Filter{UserID: "alice"}, nil)
	require.NoError(t, err)
	defer sub.Close()
	want := texts("m", 30)
	for i, w := range want {
		if i == 10 {
			d.ns.Stop()
		}
		if i == 20 {
			d.ns.Restart()
		}
		post(t, ctx, a, "alice", "c", w)
	}
	expectTexts(t, sub, want)
}

// BenchmarkAcross: one message posted on a process until a stream on the
// other has it, over the NATS broker and over the Postgres broker.
func BenchmarkAcross(b *testing.B) {
	for _, kind := range []string{"nats", "postgres"} {
		b.Run(kind, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			ns := natstest.Start(b)
			dsn := pgtest.URL(b)
			schema := pgtest.SchemaName()
			b.Cleanup(func() {
				db, err := sql.Open("postgres", dsn)
				if err == nil {
					_, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE")
					db.Close()
				}
			})
			var svcs []*chat.Service
			var hubs []*stream.Hub
			for range 2 {
				st, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: schema, MaxOpenConns: 4})
				require.NoError(b, err)
				b.Cleanup(func() { _ = st.Close() })
				cfg := chat.Config{}
				var hcfg stream.Config
				if kind == "nats" {
					br, err := New(ctx, Config{URLs: []string{ns.URL()}, Store: st, Leaser: st})
					require.NoError(b, err)
					b.Cleanup(func() { _ = br.Close() })
					cfg.EphemeralBroker, hcfg.Broker = br, br
				}
				svc, err := chat.New(ctx, st, cfg)
				require.NoError(b, err)
				hub := stream.New(svc, hcfg)
				require.NoError(b, hub.Start(ctx))
				b.Cleanup(func() { _ = hub.Stop(context.Background()) })
				svcs, hubs = append(svcs, svc), append(hubs, hub)
			}
			admin, _, err := svcs[0].CreateAdmin(ctx, "", "ops", "")
			require.NoError(b, err)
			_, err = svcs[0].CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice"}})
			require.NoError(b, err)
			sub, err := hubs[1].Subscribe(ctx, stream.Filter{UserID: "alice"}, nil)
			require.NoError(b, err)
			defer sub.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, err := svcs[0].CreateMessage(ctx, "alice", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: chat.TextData("x")})
				require.NoError(b, err)
				for {
					f, err := sub.Next(ctx)
					require.NoError(b, err)
					if f.Event == chat.EventMessageDidCreate {
						break
					}
				}
			}
		})
	}
}

// TestPresenceAcrossProcesses: a user who opens a stream on one process is
// announced online to a member of its channel whose stream is on the
// other, over the broker (user.didChangePresence is of no channel: it
// travels on the presence subject that every process with end-user
// streams follows), and offline after the grace period once it closes.
func TestPresenceAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d := newDeployment(t, ctx)
	a := d.start(true, nil)
	b := d.start(false, nil)
	admin, _, err := a.svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	_, err = a.svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice", "bob"}})
	require.NoError(t, err)

	// Process a's hub tells a Presence; process b's hub delivers.
	pres := chat.NewPresence(a.svc, chat.PresenceConfig{Grace: 200 * time.Millisecond})
	require.NoError(t, pres.Start(ctx))
	t.Cleanup(func() { _ = pres.Stop(context.Background()) })
	hubA := stream.New(a.svc, stream.Config{Broker: a.br, PollInterval: time.Hour, Presence: pres})
	require.NoError(t, hubA.Start(ctx))
	t.Cleanup(func() { _ = hubA.Stop(context.Background()) })

	bob, err := b.hub.Subscribe(ctx, stream.Filter{UserID: "bob"}, nil)
	require.NoError(t, err)
	defer bob.Close()
	alice, err := hubA.Subscribe(ctx, stream.Filter{UserID: "alice"}, nil)
	require.NoError(t, err)

	presence := func() chat.PresenceEventData {
		t.Helper()
		f := next(t, bob)
		require.Equal(t, chat.EventUserDidChangePresence, f.Event)
		require.Empty(t, f.ID, "not stored")
		var p chat.PresenceEventData
		require.NoError(t, json.Unmarshal(f.Data, &p))
		return p
	}
	p := presence()
	require.Equal(t, "alice", p.UserID)
	require.True(t, p.Online)
	alice.Close()
	p = presence()
	require.Equal(t, "alice", p.UserID)
	require.False(t, p.Online)
	require.NotNil(t, p.LastActiveAt)
}

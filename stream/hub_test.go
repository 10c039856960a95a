package stream_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/stream"
)

type env struct {
	t     *testing.T
	ctx   context.Context
	svc   *chat.Service
	hub   *stream.Hub
	admin string
}

func newEnv(t *testing.T, store chat.Store, cfg stream.Config) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	svc, err := chat.New(ctx, store, chat.Config{})
	require.NoError(t, err)
	admin, _, err := svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	hub := stream.New(svc, cfg)
	require.NoError(t, hub.Start(ctx))
	t.Cleanup(func() { require.NoError(t, hub.Stop(context.Background())) })
	return &env{t: t, ctx: ctx, svc: svc, hub: hub, admin: admin.UserID}
}

func (e *env) channel(id string, members ...string) {
	e.t.Helper()
	_, err := e.svc.CreateChannel(e.ctx, e.admin, chat.CreateChannelInput{ChannelID: id, Type: chat.ChannelTypeStandard, UserIDs: members})
	require.NoError(e.t, err)
}

func (e *env) post(author, channelID, text string) {
	e.t.Helper()
	_, err := e.svc.CreateMessage(e.ctx, author, chat.CreateMessageInput{ChannelID: channelID, Type: chat.MessageTypeText, Data: chat.TextData(text)})
	require.NoError(e.t, err)
}

func (e *env) subscribe(f stream.Filter, after *int64) *stream.Subscription {
	e.t.Helper()
	s, err := e.hub.Subscribe(e.ctx, f, after)
	require.NoError(e.t, err)
	e.t.Cleanup(s.Close)
	return s
}

func next(t *testing.T, s *stream.Subscription) stream.Frame {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f, err := s.Next(ctx)
	require.NoError(t, err)
	return f
}

// text returns the text of a message.didCreate frame.
func text(t *testing.T, f stream.Frame) string {
	t.Helper()
	require.Equal(t, chat.EventMessageDidCreate, f.Event)
	var d chat.MessageEventData
	require.NoError(t, json.Unmarshal(f.Data, &d))
	s, _ := d.Messages[0].Text()
	return s
}

func id(t *testing.T, f stream.Frame) int64 {
	t.Helper()
	v, err := strconv.ParseInt(f.ID, 10, 64)
	require.NoError(t, err, "frame id %q", f.ID)
	return v
}

// TestResumeNoGapNoRepeat reconnects a subscriber every few frames while
// a writer keeps posting: across all the connections, every message
// arrives exactly once and in order.
func TestResumeNoGapNoRepeat(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memory.New(), stream.Config{})
	e.channel("c", "alice")
	const n = 300
	s := e.subscribe(stream.Filter{Admin: true}, nil)
	done := make(chan error, 1)
	go func() {
		for i := 1; i <= n; i++ {
			if _, err := e.svc.CreateMessage(e.ctx, "alice", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: chat.TextData(strconv.Itoa(i))}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	var last int64
	want := 1
	resumes := 0
	for want <= n {
		f := next(t, s)
		v := id(t, f)
		require.Greater(t, v, last, "ids increase: no repeat")
		last = v
		require.Equal(t, strconv.Itoa(want), text(t, f), "no gap")
		want++
		if want%37 == 0 {
			s.Close()
			after := last
			s = e.subscribe(stream.Filter{Admin: true}, &after)
			require.True(t, s.Resumed)
			resumes++
		}
	}
	require.NoError(t, <-done)
	require.Equal(t, n/37, resumes)
}

// TestSlowConsumerClosed: a subscriber that reads nothing is closed when
// its queue is full, while another that keeps up receives everything. The
// writer waits for the fast subscriber after each message, so the fast
// queue never holds more than one frame: what closes the slow one is the
// bound, not the timing.
func TestSlowConsumerClosed(t *testing.T) {
	t.Parallel()
	const queue = 5
	e := newEnv(t, memory.New(), stream.Config{QueueSize: queue})
	e.channel("c", "alice")
	slow := e.subscribe(stream.Filter{Admin: true}, nil)
	fast := e.subscribe(stream.Filter{Admin: true}, nil)
	for i := 1; i <= 3*queue; i++ {
		e.post("alice", "c", strconv.Itoa(i))
		require.Equal(t, strconv.Itoa(i), text(t, next(t, fast)))
		if i <= queue {
			require.NoError(t, slow.Err(), "a full queue is not yet too slow")
		}
	}
	<-slow.Done()
	require.ErrorIs(t, slow.Err(), stream.ErrTooSlow)
	_, err := slow.Next(e.ctx)
	require.ErrorIs(t, err, stream.ErrTooSlow)
	require.NoError(t, fast.Err())
}

// TestUserVisibility: a user receives its channels' events and events
// about itself, as its membership changes, and nothing else.
func TestUserVisibility(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memory.New(), stream.Config{})
	e.channel("mine", "alice", "bob")
	e.channel("other", "bob")
	alice := e.subscribe(stream.Filter{UserID: "alice"}, nil)
	bob := e.subscribe(stream.Filter{UserID: "bob"}, nil)

	e.post("bob", "other", "not for alice")
	e.post("bob", "mine", "one")
	require.Equal(t, "one", text(t, next(t, alice)))
	require.Equal(t, "not for alice", text(t, next(t, bob)))
	require.Equal(t, "one", text(t, next(t, bob)))

	// Typing reaches the other members only, and without an id.
	require.NoError(t, e.svc.Typing(e.ctx, "bob", "mine"))
	f := next(t, alice)
	require.Equal(t, chat.EventChannelDidStartTyping, f.Event)
	require.Empty(t, f.ID)
	e.post("bob", "mine", "two")
	require.Equal(t, "two", text(t, next(t, bob)), "bob does not receive his own typing")
	require.Equal(t, "two", text(t, next(t, alice)))

	// A read marker reaches the streams of the member whose marker moved
	// (all of them: her other tabs and devices) and admins, never the
	// other members.
	alice2 := e.subscribe(stream.Filter{UserID: "alice"}, nil)
	admin := e.subscribe(stream.Filter{Admin: true}, nil)
	elsewhere := e.subscribe(stream.Filter{Admin: true, ChannelIDs: []string{"other"}}, nil)
	_, err := e.svc.MarkRead(e.ctx, "alice", "mine", 0)
	require.NoError(t, err)
	for _, s := range []*stream.Subscription{alice, alice2, admin} {
		f = next(t, s)
		require.Equal(t, chat.EventChannelDidMarkRead, f.Event)
		require.Empty(t, f.ID)
		require.JSONEq(t, `{"channelId":"mine","userId":"alice","readToSegment":2}`, string(f.Data))
	}
	_, err = e.svc.MarkRead(e.ctx, "bob", "mine", 0)
	require.NoError(t, err)
	require.Equal(t, chat.EventChannelDidMarkRead, next(t, bob).Event)
	f = next(t, admin)
	require.JSONEq(t, `{"channelId":"mine","userId":"bob","readToSegment":2}`, string(f.Data))
	e.post("bob", "mine", "after the markers")
	for _, s := range []*stream.Subscription{alice, alice2, bob, admin} {
		require.Equal(t, "after the markers", text(t, next(t, s)), "no other member's marker")
	}
	e.post("bob", "other", "elsewhere")
	require.Equal(t, "elsewhere", text(t, next(t, elsewhere)), "not a marker of a channel it did not name")
	require.Equal(t, "elsewhere", text(t, next(t, bob)))
	require.Equal(t, "elsewhere", text(t, next(t, admin)))
	alice2.Close()
	admin.Close()
	elsewhere.Close()

	// Added to "other": the event about her, then its messages.
	_, err = e.svc.AddUsers(e.ctx, e.admin, "other", []string{"alice"})
	require.NoError(t, err)
	require.Equal(t, chat.EventChannelDidAddUsers, next(t, alice).Event)
	e.post("bob", "other", "now for alice")
	require.Equal(t, "now for alice", text(t, next(t, alice)))

	// Removed: the event about her, then nothing of that channel.
	require.NoError(t, e.svc.RemoveUsers(e.ctx, e.admin, "other", []string{"alice"}))
	require.Equal(t, chat.EventChannelDidRemoveUsers, next(t, alice).Event)
	e.post("bob", "other", "not for alice again")
	e.post("bob", "mine", "three")
	require.Equal(t, "three", text(t, next(t, alice)))

	// Globally banned: the event, then the end of the stream.
	require.NoError(t, e.svc.GlobalBan(e.ctx, e.admin, "alice", false))
	require.Equal(t, chat.EventUserDidGlobalBan, next(t, alice).Event)
	_, err = alice.Next(e.ctx)
	require.ErrorIs(t, err, stream.ErrBanned)
	_, err = e.hub.Subscribe(e.ctx, stream.Filter{UserID: "alice"}, nil)
	require.Equal(t, chat.CodeGlobalBanned, chat.ErrorCode(err), "a banned user gets no new stream")
}

// TestAdminChannelFilter: an admin filtered by channel gets those
// channels' events only.
func TestAdminChannelFilter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memory.New(), stream.Config{})
	e.channel("a", "alice")
	e.channel("b", "alice")
	s := e.subscribe(stream.Filter{Admin: true, ChannelIDs: []string{"b"}}, nil)
	e.post("alice", "a", "x")
	e.post("alice", "b", "y")
	require.Equal(t, "y", text(t, next(t, s)))
}

// TestResumeBounds: after beyond the log is refused; after an id that
// retention deleted starts live with Resumed false.
func TestResumeBounds(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	store := memory.New()
	ctx := context.Background()
	svc, err := chat.New(ctx, store, chat.Config{Now: clock})
	require.NoError(t, err)
	admin, _, err := svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	_, err = svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice"}})
	require.NoError(t, err)
	var first int64
	require.NoError(t, store.View(ctx, func(tx chat.Tx) (err error) { first, err = tx.LastEventID(ctx); return }))

	mu.Lock()
	now = now.Add(48 * time.Hour)
	mu.Unlock()
	hub := stream.New(svc, stream.Config{})
	require.NoError(t, hub.Start(ctx)) // the retention job deletes the first event
	defer func() { _ = hub.Stop(ctx) }()

	beyond := first + 10
	_, err = hub.Subscribe(ctx, stream.Filter{Admin: true}, &beyond)
	require.ErrorIs(t, err, chat.ErrBadRequest)

	require.Eventually(t, func() bool {
		var es []*chat.Event
		_ = store.View(ctx, func(tx chat.Tx) (err error) { es, err = tx.ReadEvents(ctx, 0, 0); return })
		return len(es) == 0
	}, 10*time.Second, 10*time.Millisecond, "retention deletes the old event")
	s, err := hub.Subscribe(ctx, stream.Filter{Admin: true}, &first)
	require.NoError(t, err)
	defer s.Close()
	require.False(t, s.Resumed)
	_, err = svc.CreateMessage(ctx, "alice", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: chat.TextData("live")})
	require.NoError(t, err)
	require.Equal(t, "live", text(t, next(t, s)))
}

package stream

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
)

// offered is one call of Hub.offered.
type offered struct {
	id               int64 // 0: ephemeral
	event, channelID string
}

// offerLog records, through Hub.offered, what the hub offers to each
// subscription.
type offerLog struct {
	mu  sync.Mutex
	got map[*Subscription][]offered
}

func (l *offerLog) record(s *Subscription, id int64, event, channelID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got[s] = append(l.got[s], offered{id, event, channelID})
}

// in returns what was offered to s in channelID.
func (l *offerLog) in(s *Subscription, channelID string) []offered {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []offered
	for _, o := range l.got[s] {
		if o.channelID == channelID {
			out = append(out, o)
		}
	}
	return out
}

type indexEnv struct {
	t     *testing.T
	ctx   context.Context
	svc   *chat.Service
	h     *Hub
	admin string
	log   *offerLog
}

func newIndexEnv(t *testing.T) *indexEnv {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	svc, err := chat.New(ctx, memory.New(), chat.Config{})
	require.NoError(t, err)
	admin, _, err := svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	h := New(svc, Config{})
	log := &offerLog{got: map[*Subscription][]offered{}}
	h.offered = log.record
	require.NoError(t, h.Start(ctx))
	t.Cleanup(func() { _ = h.Stop(context.Background()) })
	return &indexEnv{t: t, ctx: ctx, svc: svc, h: h, admin: admin.UserID, log: log}
}

func (e *indexEnv) channel(id string, members ...string) {
	e.t.Helper()
	_, err := e.svc.CreateChannel(e.ctx, e.admin, chat.CreateChannelInput{ChannelID: id, Type: chat.ChannelTypeStandard, UserIDs: members})
	require.NoError(e.t, err)
}

func (e *indexEnv) post(author, channelID, text string) {
	e.t.Helper()
	_, err := e.svc.CreateMessage(e.ctx, author, chat.CreateMessageInput{ChannelID: channelID, Type: chat.MessageTypeText, Data: chat.TextData(text)})
	require.NoError(e.t, err)
}

func (e *indexEnv) subscribe(f Filter, after *int64) *Subscription {
	e.t.Helper()
	s, err := e.h.Subscribe(e.ctx, f, after)
	require.NoError(e.t, err)
	e.t.Cleanup(s.Close)
	return s
}

// next returns the next frame of s: its event name, and its text for a
// message.
func (e *indexEnv) next(s *Subscription) (Frame, string) {
	e.t.Helper()
	f, err := s.Next(e.ctx)
	require.NoError(e.t, err)
	if f.Event != chat.EventMessageDidCreate {
		return f, f.Event
	}
	var d chat.MessageEventData
	require.NoError(e.t, json.Unmarshal(f.Data, &d))
	text, _ := d.Messages[0].Text()
	return f, text
}

// indexed reports whether s is in the hub's index under channelID.
func (e *indexEnv) indexed(channelID string, s *Subscription) bool {
	e.h.mu.Lock()
	defer e.h.mu.Unlock()
	_, ok := e.h.byChannel[channelID][s]
	return ok
}

// agrees checks what offerTo's fast path relies on: a subscription in
// the index under a channel is a member of it (an end user's) or names it
// (an admin's), and an end user's subscription is indexed under each of
// its member channels.
func (e *indexEnv) agrees() {
	e.t.Helper()
	e.h.mu.Lock()
	defer e.h.mu.Unlock()
	for c, set := range e.h.byChannel {
		for s := range set {
			if s.f.Admin {
				require.True(e.t, s.chans[c], "an admin's subscription indexed under %s, which it does not name", c)
			} else {
				require.True(e.t, s.members[c], "%s's subscription indexed under %s, not a member", s.f.UserID, c)
			}
		}
	}
	for s := range e.h.live {
		if s.f.Admin {
			continue
		}
		for c := range s.members {
			_, ok := e.h.byChannel[c][s]
			require.True(e.t, ok, "%s's subscription not indexed under its channel %s", s.f.UserID, c)
		}
	}
}

func names(os []offered) []string {
	var out []string
	for _, o := range os {
		out = append(out, o.event)
	}
	return out
}

// TestOfferFollowsChannels: an event of channel A is offered to the
// subscriptions that follow A (its members, admins naming A, admins
// without a filter) and to no subscription that follows only channel B,
// logged or ephemeral; a subscription found twice (a member's own read
// marker: by channel and by user) is offered the event once.
func TestOfferFollowsChannels(t *testing.T) {
	e := newIndexEnv(t)
	e.channel("A", "alice", "carol")
	e.channel("B", "bob")
	alice := e.subscribe(Filter{UserID: "alice"}, nil)
	bob := e.subscribe(Filter{UserID: "bob"}, nil)
	adminA := e.subscribe(Filter{Admin: true, ChannelIDs: []string{"A"}}, nil)
	adminB := e.subscribe(Filter{Admin: true, ChannelIDs: []string{"B"}}, nil)
	all := e.subscribe(Filter{Admin: true}, nil)

	// With the memory store an ephemeral event is offered before the
	// call that publishes it returns; a logged one when the follower
	// reads it: wait for it.
	e.post("carol", "A", "in A")
	_, got := e.next(alice)
	require.Equal(t, "in A", got)
	require.NoError(t, e.svc.Typing(e.ctx, "carol", "A"))
	_, err := e.svc.MarkRead(e.ctx, "alice", "A", 0)
	require.NoError(t, err)
	e.post("bob", "B", "in B")
	for _, want := range []string{chat.EventChannelDidStartTyping, chat.EventChannelDidMarkRead} {
		_, got := e.next(alice)
		require.Equal(t, want, got)
	}
	for _, s := range []*Subscription{bob, adminB} {
		_, got := e.next(s)
		require.Equal(t, "in B", got, "the first frame of a subscription following B alone")
	}
	// Everything of A was offered before "in B" was posted; the offer of
	// "in B" ends before the hub's lock is free.
	e.h.mu.Lock()
	//lint:ignore SA2001 taking the lock waits for the offer in progress
	e.h.mu.Unlock()
	require.Empty(t, e.log.in(bob, "A"))
	require.Empty(t, e.log.in(adminB, "A"))
	want := []string{chat.EventMessageDidCreate, chat.EventChannelDidStartTyping, chat.EventChannelDidMarkRead}
	require.Equal(t, want, names(e.log.in(alice, "A")), "alice's own read marker is offered to her once")
	require.Equal(t, want, names(e.log.in(adminA, "A")))
	require.Equal(t, want, names(e.log.in(all, "A")))
	require.Equal(t, []string{chat.EventMessageDidCreate}, names(e.log.in(all, "B")))
	require.Empty(t, e.log.in(alice, "B"))
}

// TestIndexMoves: an end user's membership events move its subscription
// in the channel index. The event that adds the user (added, joined) is
// delivered to it and the channel's next events are; the event that
// removes it (removed, banned, closed) is delivered to it and the
// channel's next events are not offered to it at all.
func TestIndexMoves(t *testing.T) {
	e := newIndexEnv(t)
	e.channel("A", "alice")
	e.channel("X", "carol")
	e.channel("Y", "carol", "alice")
	carol := e.subscribe(Filter{UserID: "carol"}, nil)
	adminY := e.subscribe(Filter{Admin: true, ChannelIDs: []string{"Y"}}, nil)
	require.True(t, e.indexed("X", carol))
	require.True(t, e.indexed("Y", carol))
	require.False(t, e.indexed("A", carol))
	expect := func(want ...string) {
		t.Helper()
		for _, w := range want {
			_, got := e.next(carol)
			require.Equal(t, w, got)
		}
	}

	// Added: receives the addition and what follows.
	_, err := e.svc.AddUsers(e.ctx, e.admin, "A", []string{"carol"})
	require.NoError(t, err)
	expect(chat.EventChannelDidAddUsers)
	require.True(t, e.indexed("A", carol))
	e.agrees()
	e.post("alice", "A", "A 1")
	expect("A 1")

	// Removed: receives the removal, then nothing of A.
	require.NoError(t, e.svc.RemoveUsers(e.ctx, e.admin, "A", []string{"carol"}))
	expect(chat.EventChannelDidRemoveUsers)
	require.False(t, e.indexed("A", carol))
	e.agrees()
	e.post("alice", "A", "A 2")
	e.post("carol", "X", "X 1")
	expect("X 1")

	// Joined, then banned: the same.
	_, err = e.svc.JoinChannel(e.ctx, "carol", "A")
	require.NoError(t, err)
	expect(chat.EventChannelDidJoin)
	require.True(t, e.indexed("A", carol))
	e.agrees()
	e.post("alice", "A", "A 3")
	expect("A 3")
	require.NoError(t, e.svc.BanUsers(e.ctx, e.admin, "A", []string{"carol"}))
	expect(chat.EventChannelDidBanUsers)
	require.False(t, e.indexed("A", carol))
	e.agrees()
	e.post("alice", "A", "A 4")
	e.post("carol", "X", "X 2")
	expect("X 2")

	// Closed: the members leave the index, an admin naming the channel
	// stays.
	require.NoError(t, e.svc.CloseChannel(e.ctx, e.admin, "Y"))
	expect(chat.EventChannelDidClose)
	require.False(t, e.indexed("Y", carol))
	require.True(t, e.indexed("Y", adminY))
	e.agrees()

	require.Equal(t, []string{
		chat.EventChannelDidAddUsers, chat.EventMessageDidCreate, chat.EventChannelDidRemoveUsers,
		chat.EventChannelDidJoin, chat.EventMessageDidCreate, chat.EventChannelDidBanUsers,
	}, names(e.log.in(carol, "A")), "A 2 and A 4 were not offered to carol")

	// Leaving the live set leaves the index.
	carol.Close()
	require.False(t, e.indexed("X", carol))
	e.h.mu.Lock()
	_, byUser := e.h.byUser["carol"]
	e.h.mu.Unlock()
	require.False(t, byUser)
}

// TestResumeAcrossMembershipChange: a subscription resumed after the user
// was added to one channel and removed from another joins the index with
// its membership at the end of the replay: it follows the first channel
// live, and the second one's messages are not offered to it.
func TestResumeAcrossMembershipChange(t *testing.T) {
	e := newIndexEnv(t)
	e.channel("A", "alice")
	e.channel("B", "bob", "carol")
	first := e.subscribe(Filter{UserID: "carol"}, nil)
	e.post("bob", "B", "B 1")
	f, got := e.next(first)
	require.Equal(t, "B 1", got)
	first.Close()
	after, err := strconv.ParseInt(f.ID, 10, 64)
	require.NoError(t, err)

	_, err = e.svc.AddUsers(e.ctx, e.admin, "A", []string{"carol"})
	require.NoError(t, err)
	e.post("alice", "A", "A away")
	require.NoError(t, e.svc.RemoveUsers(e.ctx, e.admin, "B", []string{"carol"}))
	e.post("bob", "B", "B away")

	s := e.subscribe(Filter{UserID: "carol"}, &after)
	require.True(t, s.Resumed)
	for _, want := range []string{chat.EventChannelDidAddUsers, "A away", chat.EventChannelDidRemoveUsers} {
		_, got := e.next(s)
		require.Equal(t, want, got)
	}
	// The replay runs in the background: post until a message is offered
	// to s live (it joined the live set), each one received in order.
	for i := 1; len(e.log.in(s, "A")) == 0; i++ {
		require.Less(t, i, 1000, "the resumed subscription never went live")
		text := "A live " + strconv.Itoa(i)
		e.post("alice", "A", text)
		_, got := e.next(s)
		require.Equal(t, text, got)
	}
	require.True(t, e.indexed("A", s))
	require.False(t, e.indexed("B", s))
	e.post("bob", "B", "B live")
	e.post("alice", "A", "A end")
	_, got = e.next(s)
	require.Equal(t, "A end", got)
	// When the hub's follower was behind the subscription's position,
	// the subscription joined the live set early and was offered the
	// rest live, the removal from B included: never B's messages.
	require.NotContains(t, names(e.log.in(s, "B")), chat.EventMessageDidCreate)
}

package stream_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/stream"
)

// requireNothing checks that nothing is queued for s.
func requireNothing(t *testing.T, s *stream.Subscription) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	f, err := s.Next(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "unexpected frame %s", f.Event)
}

// events returns the names of the next n frames of s.
func events(t *testing.T, s *stream.Subscription, n int) []string {
	t.Helper()
	var out []string
	for range n {
		out = append(out, next(t, s).Event)
	}
	return out
}

// TestBlockedUserSilenced: a blocker's streams do not carry the blocked
// user's messages, reactions (its own, and those on its messages) or
// typing, whether the block was made before the stream opened or while
// it is open; unblocking lets them through again; other members' streams
// carry everything.
func TestBlockedUserSilenced(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memory.New(), stream.Config{})
	e.channel("c", "alice", "bob", "carol", "mallory")
	bobMsg, err := e.svc.CreateMessage(e.ctx, "bob", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: chat.TextData("hello")})
	require.NoError(t, err)
	_, err = e.svc.BlockUser(e.ctx, "alice", "alice", "mallory")
	require.NoError(t, err)

	alice := e.subscribe(stream.Filter{UserID: "alice"}, nil) // blocked before
	carol := e.subscribe(stream.Filter{UserID: "carol"}, nil)
	bob := e.subscribe(stream.Filter{UserID: "bob"}, nil)

	e.post("mallory", "c", "m1")
	require.NoError(t, e.svc.Typing(e.ctx, "mallory", "c"))
	_, err = e.svc.AddReaction(e.ctx, "mallory", bobMsg.Messages[0].MessageID, chat.ReferenceTypeMessage, "like")
	require.NoError(t, err)
	e.post("bob", "c", "b1")
	require.Equal(t, "b1", text(t, next(t, alice)), "nothing of mallory's before")
	requireNothing(t, alice)
	// Typing is sent at once, the logged events as the log is followed.
	all := []string{chat.EventChannelDidStartTyping, chat.EventMessageDidCreate, chat.EventReactionDidAdd, chat.EventMessageDidCreate}
	require.ElementsMatch(t, all, events(t, carol, 4))

	// Blocked while open: bob blocks mallory now.
	_, err = e.svc.BlockUser(e.ctx, "bob", "bob", "mallory")
	require.NoError(t, err)
	require.ElementsMatch(t, all, events(t, bob, 4), "what came before the block")
	e.post("mallory", "c", "m2")
	e.post("carol", "c", "c1")
	require.Equal(t, "c1", text(t, next(t, bob)), "m2 left out")
	require.Equal(t, "c1", text(t, next(t, alice)))

	// Unblocked: mallory is heard again.
	_, err = e.svc.UnblockUser(e.ctx, "alice", "alice", "mallory")
	require.NoError(t, err)
	e.post("mallory", "c", "m4")
	require.Equal(t, "m4", text(t, next(t, alice)))
	requireNothing(t, bob)
	e.post("bob", "c", "b2")
	require.Equal(t, "b2", text(t, next(t, bob)))
}

// TestBlockResume: a stream resuming from before a block gets the blocked
// user's messages sent before the block and not those after it.
func TestBlockResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memory.New(), stream.Config{})
	e.channel("c", "alice", "bob", "mallory")
	evs, err := e.svc.RecentEvents(e.ctx, 1)
	require.NoError(t, err)
	from := evs[0].ID
	e.post("mallory", "c", "before")
	_, err = e.svc.BlockUser(e.ctx, "alice", "alice", "mallory")
	require.NoError(t, err)
	e.post("mallory", "c", "after")
	e.post("bob", "c", "end")
	alice := e.subscribe(stream.Filter{UserID: "alice"}, &from)
	require.True(t, alice.Resumed)
	require.Equal(t, "before", text(t, next(t, alice)))
	require.Equal(t, "end", text(t, next(t, alice)))
	requireNothing(t, alice)
}

package stream_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/stream"
)

// frameText returns a frame's message text, or its event name for other
// events.
func frameText(t *testing.T, f stream.Frame) string {
	t.Helper()
	if f.Event == chat.EventMessageDidCreate {
		return text(t, f)
	}
	return f.Event
}

// TestResumeMembershipAtEventTime: a resumed user stream replays each
// event by the user's membership when it happened, not by the membership
// at reconnection: messages of a channel it left since are replayed up to
// the leave, those of a channel it joined since only from the join, and a
// channel closed since is replayed up to and with its close.
func TestResumeMembershipAtEventTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memory.New(), stream.Config{})
	e.channel("left", "alice", "bob")
	e.channel("joined", "bob")
	e.channel("closed", "alice", "bob")
	e.channel("banned", "alice", "bob")
	e.channel("never", "bob")
	after := lastID(t, e)

	e.post("bob", "left", "left: before the leave")
	require.NoError(t, e.svc.LeaveChannel(e.ctx, "alice", "left"))
	e.post("bob", "left", "left: after the leave")
	e.post("bob", "joined", "joined: before the join")
	_, err := e.svc.AddUsers(e.ctx, e.admin, "joined", []string{"alice"})
	require.NoError(t, err)
	e.post("bob", "joined", "joined: after the join")
	e.post("bob", "closed", "closed: before the close")
	require.NoError(t, e.svc.CloseChannel(e.ctx, e.admin, "closed"))
	e.post("bob", "never", "never: not hers")
	e.post("bob", "banned", "banned: before the ban")
	require.NoError(t, e.svc.BanUsers(e.ctx, e.admin, "banned", []string{"alice"}))
	e.post("bob", "banned", "banned: after the ban")
	e.post("bob", "joined", "the end")

	s := e.subscribe(stream.Filter{UserID: "alice"}, &after)
	require.True(t, s.Resumed)
	var got []string
	for len(got) == 0 || got[len(got)-1] != "the end" {
		got = append(got, frameText(t, next(t, s)))
	}
	require.Equal(t, []string{
		"left: before the leave",
		chat.EventChannelDidRemoveUsers,
		chat.EventChannelDidAddUsers,
		"joined: after the join",
		"closed: before the close",
		chat.EventChannelDidClose,
		// A ban names non-members too, so the replay cannot tell that she
		// was a member before it: the messages before a ban are left out
		// (the safe side), the ban about her is sent.
		chat.EventChannelDidBanUsers,
		"the end",
	}, got)

	// Bob, a member of every channel throughout but "closed" after its
	// close, resumes from the same id and gets all of it.
	live := e.subscribe(stream.Filter{UserID: "bob"}, &after)
	require.True(t, live.Resumed)
	var bob []string
	for len(bob) == 0 || bob[len(bob)-1] != "the end" {
		bob = append(bob, frameText(t, next(t, live)))
	}
	require.Contains(t, bob, "never: not hers", "bob is in every channel throughout")
	require.Contains(t, bob, "banned: after the ban")
}

func lastID(t *testing.T, e *env) int64 {
	t.Helper()
	last, err := e.svc.LastEventID(e.ctx)
	require.NoError(t, err)
	return last
}

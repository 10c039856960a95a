package stream_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/stream"
)

// TestUnmuteEventsReachMembers: the expiry of a member's mute reaches the
// members of that channel (the member included) and no one else.
func TestUnmuteEventsReachMembers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memory.New(), stream.Config{})
	e.channel("mine", "alice", "bob")
	e.channel("other", "bob")
	alice := e.subscribe(stream.Filter{UserID: "alice"}, nil)

	require.NoError(t, e.svc.MuteUsers(e.ctx, e.admin, "other", []string{"bob"}, time.Millisecond))
	require.NoError(t, e.svc.MuteUsers(e.ctx, e.admin, "mine", []string{"alice"}, time.Millisecond))
	require.Equal(t, chat.EventChannelDidMute, next(t, alice).Event)
	announced := 0
	require.Eventually(t, func() bool {
		n, _, _, err := e.svc.ExpireMutes(e.ctx)
		require.NoError(t, err)
		announced += n
		return announced == 2
	}, 20*time.Second, time.Millisecond, "both mutes end")

	f := next(t, alice)
	require.Equal(t, chat.EventChannelDidUnmuteUsers, f.Event)
	var d chat.ChannelEventData
	require.NoError(t, json.Unmarshal(f.Data, &d))
	require.Equal(t, "mine", d.Channel.ChannelID)
	require.Equal(t, []string{"alice"}, d.UserIDs)
	require.Equal(t, chat.UnmuteExpired, d.Reason)

	// Nothing about bob in "other" came first or comes now.
	e.post("bob", "mine", "after")
	require.Equal(t, "after", text(t, next(t, alice)))
}

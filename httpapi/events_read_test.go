package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/stream"
)

// TestEventsMarkRead: channel.didMarkRead (without an id: it is not in the
// log) reaches every stream of the user whose marker moved, so that its
// other tabs stay in sync, and never the streams of the other members.
func TestEventsMarkRead(t *testing.T) {
	t.Parallel()
	f := newStreamFixture(t, stream.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := f.svc.AddUsers(ctx, f.admin, "c", []string{"bob"})
	require.NoError(t, err)
	f.post(t, "one")
	dial := func(userID string) *websocket.Conn {
		ut, err := f.svc.IssueUserToken(ctx, "", userID, time.Hour)
		require.NoError(t, err)
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(f.srv.URL, "http")+"/events",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + ut.Token}}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.CloseNow() })
		require.Equal(t, stream.EventDidConnect, readWS(t, ctx, c).Event)
		return c
	}
	bob1, bob2, alice := dial("bob"), dial("bob"), dial("alice")

	_, err = f.svc.MarkRead(ctx, "bob", "c", 0)
	require.NoError(t, err)
	for _, c := range []*websocket.Conn{bob1, bob2} {
		fr := readWS(t, ctx, c)
		require.Equal(t, chat.EventChannelDidMarkRead, fr.Event)
		require.Empty(t, fr.ID, "ephemeral: no event id")
		var d chat.MarkReadEventData
		require.NoError(t, json.Unmarshal(fr.Data, &d))
		require.Equal(t, chat.MarkReadEventData{ChannelID: "c", UserID: "bob", ReadToSegment: 1}, d)
	}

	// Alice, the other member, does not receive bob's marker: her next
	// frame is her own marker, then the message posted after it. Bob's
	// streams do not receive hers.
	_, err = f.svc.MarkRead(ctx, "alice", "c", 0)
	require.NoError(t, err)
	f.post(t, "two")
	fr := readWS(t, ctx, alice)
	require.Equal(t, chat.EventChannelDidMarkRead, fr.Event)
	require.JSONEq(t, `{"channelId":"c","userId":"alice","readToSegment":1}`, string(fr.Data))
	for _, c := range []*websocket.Conn{alice, bob1, bob2} {
		fr := readWS(t, ctx, c)
		require.Equal(t, chat.EventMessageDidCreate, fr.Event)
		require.Contains(t, string(fr.Data), `"two"`)
	}
}

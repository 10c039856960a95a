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

// TestEventsMarkRead: a member's stream receives the read markers of the
// other members as they move (channel.didMarkRead, without an id: it is
// not in the log), never its own.
func TestEventsMarkRead(t *testing.T) {
	t.Parallel()
	f := newStreamFixture(t, stream.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := f.svc.AddUsers(ctx, f.admin, "c", []string{"bob"})
	require.NoError(t, err)
	f.post(t, "one")
	ut, err := f.svc.MintUserToken(ctx, "alice", time.Hour)
	require.NoError(t, err)
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(f.srv.URL, "http")+"/events",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + ut.Token}}})
	require.NoError(t, err)
	defer c.CloseNow()
	require.Equal(t, stream.EventDidConnect, readWS(t, ctx, c).Event)

	_, err = f.svc.MarkRead(ctx, "bob", "c", 0)
	require.NoError(t, err)
	fr := readWS(t, ctx, c)
	require.Equal(t, chat.EventChannelDidMarkRead, fr.Event)
	require.Empty(t, fr.ID, "ephemeral: no event id")
	var d chat.MarkReadEventData
	require.NoError(t, json.Unmarshal(fr.Data, &d))
	require.Equal(t, chat.MarkReadEventData{ChannelID: "c", UserID: "bob", ReadToSegment: 1}, d)

	// Alice's own marker is not sent to her: the next frame is the
	// message posted after it.
	_, err = f.svc.MarkRead(ctx, "alice", "c", 0)
	require.NoError(t, err)
	f.post(t, "two")
	require.Equal(t, chat.EventMessageDidCreate, readWS(t, ctx, c).Event)
}

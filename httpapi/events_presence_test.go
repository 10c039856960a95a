package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/httpapi"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/stream"
)

// TestEventsPresence: over the wire, a user's WebSocket makes it online
// for a member of its channel (a user.didChangePresence frame without an
// id, and "online" on GET /users/:userId), and closing it makes it
// offline once the grace period has passed.
func TestEventsPresence(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc, err := chat.New(ctx, memory.New(), chat.Config{})
	require.NoError(t, err)
	a, adminToken, err := svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	pres := chat.NewPresence(svc, chat.PresenceConfig{Grace: 100 * time.Millisecond, Interval: 10 * time.Millisecond})
	require.NoError(t, pres.Start(ctx))
	hub := stream.New(svc, stream.Config{Presence: pres})
	require.NoError(t, hub.Start(ctx))
	srv := httptest.NewServer(httpapi.New(svc, httpapi.Config{Events: hub}))
	t.Cleanup(func() {
		_ = hub.Stop(context.Background())
		_ = pres.Stop(context.Background())
		srv.Close()
	})
	_, err = svc.CreateChannel(ctx, a.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice", "bob"}})
	require.NoError(t, err)
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/events"
	dial := func(user string) *websocket.Conn {
		tok, err := svc.IssueUserToken(ctx, "", user, time.Hour)
		require.NoError(t, err)
		c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok.Token}}})
		require.NoError(t, err)
		require.Equal(t, "stream.didConnect", readWS(t, ctx, c).Event)
		return c
	}
	getUser := func(id string) map[string]any {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/users/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
		var body struct {
			Users []map[string]any `json:"users"`
		}
		require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
		require.Len(t, body.Users, 1)
		return body.Users[0]
	}
	u := getUser("alice")
	require.Equal(t, false, u["online"])
	require.Contains(t, u, "lastActiveAt")
	require.Nil(t, u["lastActiveAt"])

	bob := dial("bob")
	defer bob.CloseNow()
	alice := dial("alice")
	presence := func() chat.PresenceEventData {
		t.Helper()
		f := readWS(t, ctx, bob)
		require.Equal(t, chat.EventUserDidChangePresence, f.Event)
		require.Empty(t, f.ID)
		var d chat.PresenceEventData
		require.NoError(t, json.Unmarshal(f.Data, &d))
		return d
	}
	d := presence()
	require.Equal(t, "alice", d.UserID)
	require.True(t, d.Online)
	u = getUser("alice")
	require.Equal(t, true, u["online"])
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, u["lastActiveAt"])

	alice.Close(websocket.StatusNormalClosure, "")
	d = presence()
	require.Equal(t, "alice", d.UserID)
	require.False(t, d.Online)
	require.NotNil(t, d.LastActiveAt)
	u = getUser("alice")
	require.Equal(t, false, u["online"])
	require.Equal(t, d.LastActiveAt.Format(chat.TimeLayout), u["lastActiveAt"])
}

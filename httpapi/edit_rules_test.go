package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestEditObeysPostRulesHTTP: over the API, an end user's edit of its own
// message is refused by every state that refuses its new messages (docs/api.md,
// "Edit a message"), with the same code; the message and the event log
// stay as they were. Slow mode does not apply to edits.
func TestEditObeysPostRulesHTTP(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, e *env)
		body  string
		want  chat.Code
	}{
		{"muted member", func(t *testing.T, e *env) {
			require.NoError(t, e.svc.MuteUsers(context.Background(), e.admin, "c", []string{"alice"}, time.Hour))
		}, `{"data":{"text":"edited"}}`, chat.CodeUserMuted},
		{"muted member, tags only", func(t *testing.T, e *env) {
			require.NoError(t, e.svc.MuteUsers(context.Background(), e.admin, "c", []string{"alice"}, time.Hour))
		}, `{"tags":["edited"]}`, chat.CodeUserMuted},
		{"muted channel", func(t *testing.T, e *env) {
			require.NoError(t, e.svc.MuteChannel(context.Background(), e.admin, "c", time.Hour))
		}, `{"data":{"text":"edited"}}`, chat.CodeChannelMuted},
		{"globally banned", func(t *testing.T, e *env) {
			require.NoError(t, e.svc.GlobalBan(context.Background(), e.admin, "alice", false))
		}, `{"data":{"text":"edited"}}`, chat.CodeGlobalBanned},
		{"banned in the channel", func(t *testing.T, e *env) {
			require.NoError(t, e.svc.BanUsers(context.Background(), e.admin, "c", []string{"alice"}))
		}, `{"data":{"text":"edited"}}`, chat.CodeNotFound}, // the ban deleted its messages
		{"closed channel", func(t *testing.T, e *env) {
			require.NoError(t, e.svc.CloseChannel(context.Background(), e.admin, "c"))
		}, `{"data":{"text":"edited"}}`, chat.CodeNotFound}, // the close deleted its messages
		{"blacklist", func(t *testing.T, e *env) {
			_, err := e.svc.AddRules(context.Background(), e.admin, chat.Blacklist, []string{"darn"}, true)
			require.NoError(t, err)
		}, `{"data":{"text":"darn it"}}`, chat.CodeBlacklisted},
		{"whitelist", func(t *testing.T, e *env) {
			_, err := e.svc.AddRules(context.Background(), e.admin, chat.Whitelist, []string{"example.com"}, false)
			require.NoError(t, err)
		}, `{"data":{"text":"see evil.io"}}`, chat.CodeLinkNotAllowed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, alice, msgID := newEditEnv(t)
			tc.setup(t, e)
			before, last := e.storedJSON(msgID), e.lastEventID()
			r := e.do("PUT", "/message/"+msgID, "application/json", tc.body, "Authorization", "Bearer "+alice)
			requireError(t, r, tc.want, "")
			require.Equal(t, before, e.storedJSON(msgID), "a refused edit changes nothing")
			require.Equal(t, last, e.lastEventID(), "a refused edit logs no message.didUpdate")
		})
	}

	t.Run("slow mode", func(t *testing.T) {
		e, alice, msgID := newEditEnv(t)
		_, err := e.svc.SetChannelRateLimit(context.Background(), e.admin, "c", time.Minute)
		require.NoError(t, err)
		// alice posted its message a moment ago, within the window: a new
		// message is refused, an edit is not.
		r := e.do("PUT", "/message/"+msgID, "application/json", `{"data":{"text":"edited in the window"}}`, "Authorization", "Bearer "+alice)
		require.Equal(t, http.StatusOK, r.status, "body %s", r.body)
		r = e.do("POST", "/message", "application/json", `{"channelId":"c","type":"text","data":{"text":"another"}}`, "Authorization", "Bearer "+alice)
		requireError(t, r, chat.CodeRateLimited, "")
	})
}

// newEditEnv serves the API with a channel c of alice and bob and a text
// message of alice's; it returns alice's user token and the message id.
func newEditEnv(t *testing.T) (*env, string, string) {
	t.Helper()
	e := newEnv(t, memoryStore, matrixConfig)
	ctx := context.Background()
	_, err := e.svc.CreateChannel(ctx, e.admin, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice", "bob"}})
	require.NoError(t, err)
	ml, err := e.svc.CreateMessage(ctx, "alice", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: map[string]any{"text": "hello"}})
	require.NoError(t, err)
	tok, err := e.svc.IssueUserToken(ctx, "", "alice", time.Hour)
	require.NoError(t, err)
	return e, tok.Token, ml.Messages[0].MessageID
}

// storedJSON reads a message as stored, as JSON.
func (e *env) storedJSON(id string) string {
	e.t.Helper()
	ctx := context.Background()
	var m *chat.Message
	require.NoError(e.t, e.store.View(ctx, func(tx chat.Tx) error {
		var err error
		m, err = tx.GetMessage(ctx, id)
		return err
	}))
	b, err := json.Marshal(m)
	require.NoError(e.t, err)
	return string(b)
}

// lastEventID reads the newest id of the event log.
func (e *env) lastEventID() int64 {
	e.t.Helper()
	ctx := context.Background()
	var id int64
	require.NoError(e.t, e.store.View(ctx, func(tx chat.Tx) error {
		var err error
		id, err = tx.LastEventID(ctx)
		return err
	}))
	return id
}

package httpapi_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/client"
)

// The typed client acts as an end user when made with a user token the
// admin client minted: the user creates a channel (and becomes its
// member), posts and reads there, is refused admin operations, and loses
// access when its tokens are revoked or it is globally banned.
func TestClientAsEndUser(t *testing.T) {
	e := newEnv(t, memoryStore)
	bg := t.Context()
	tok, err := e.c.MintUserToken(bg, "alice", 90*time.Minute)
	require.NoError(t, err)
	require.Equal(t, "alice", tok.UserID)
	require.NotNil(t, tok.ExpiresAt)
	require.WithinDuration(t, time.Now().Add(90*time.Minute), tok.ExpiresAt.Time, time.Minute)
	forever, err := e.c.MintUserToken(bg, "alice", -1)
	require.NoError(t, err)
	require.Nil(t, forever.ExpiresAt)

	alice := client.New(e.base, tok.Token, client.WithHTTPClient(e.srv.Client()))
	ch, err := alice.CreateChannel(bg, client.CreateChannelRequest{ChannelID: "mine", Type: chat.ChannelTypeStandard})
	require.NoError(t, err)
	require.Equal(t, 1, ch.MemberCount, "the creating user is a member")
	m, err := alice.CreateMessage(bg, client.CreateMessageRequest{ChannelID: "mine", Type: chat.MessageTypeText, Data: map[string]any{"text": "hello"}})
	require.NoError(t, err)
	require.Equal(t, "alice", m.UserID, "posted as itself")
	ml, err := alice.QueryMessages(bg, client.QueryMessagesRequest{ChannelID: "mine"})
	require.NoError(t, err)
	require.Len(t, ml.Messages, 1)

	_, err = e.c.CreateChannel(bg, client.CreateChannelRequest{ChannelID: "theirs", Type: chat.ChannelTypeStandard, UserIDs: []string{"bob"}})
	require.NoError(t, err)
	_, err = alice.QueryMessages(bg, client.QueryMessagesRequest{ChannelID: "theirs"})
	requireCode(t, err, chat.CodePermissionDenied)
	_, err = alice.QueryMessages(bg, client.QueryMessagesRequest{ChannelID: "absent"})
	requireCode(t, err, chat.CodeNotFound)
	_, err = alice.QueryRoles(bg, "")
	requireCode(t, err, chat.CodePermissionDenied)
	_, err = alice.MintUserToken(bg, "bob", 0)
	requireCode(t, err, chat.CodePermissionDenied)

	require.NoError(t, e.c.RevokeUserTokens(bg, "alice"))
	_, err = alice.GetUser(bg, "alice")
	requireCode(t, err, chat.CodeUnauthorized)
	again, err := e.c.MintUserToken(bg, "alice", time.Hour)
	require.NoError(t, err)
	alice = client.New(e.base, again.Token, client.WithHTTPClient(e.srv.Client()))
	_, err = alice.GetUser(bg, "alice")
	require.NoError(t, err, "a token minted after the revocation works")

	require.NoError(t, e.c.GlobalBan(bg, "alice", false))
	_, err = alice.GetUser(bg, "alice")
	requireCode(t, err, chat.CodeGlobalBanned)
}

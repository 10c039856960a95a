package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/client"
)

// TestMentions runs the mention cases through the API on every store.
func TestMentions(t *testing.T) {
	t.Parallel()
	stores := map[string]storeFactory{"Memory": memoryStore, "SQLite": sqliteStore, "Postgres": postgresStore}
	for name, st := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testMentions(t, newEnv(t, st))
		})
	}
}

// Mentions on the wire: mentionedUserIds on every message, explicit ids
// on create (members only), unreadMentionCount on channelUsers until the
// channel is read, POST /messages/mentions for oneself and, as an admin,
// for anyone.
func testMentions(t *testing.T, e *env) {
	bg := ctx(t)
	_, err := e.c.CreateChannel(bg, client.CreateChannelRequest{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice", "bob", "carol"}})
	require.NoError(t, err)
	alice, bob := e.userClient("alice"), e.userClient("bob")

	m, err := alice.CreateMessage(bg, client.CreateMessageRequest{ChannelID: "c", Type: chat.MessageTypeText,
		Data: chat.TextData("hello @bob"), MentionedUserIDs: []string{"carol"}})
	require.NoError(t, err)
	require.Equal(t, []string{"bob", "carol"}, m.MentionedUserIDs)
	plain, err := alice.SendText(bg, "c", "nobody")
	require.NoError(t, err)
	require.Equal(t, []string{}, plain.MentionedUserIDs)
	_, err = alice.CreateMessage(bg, client.CreateMessageRequest{ChannelID: "c", Type: chat.MessageTypeText,
		Data: chat.TextData("x"), MentionedUserIDs: []string{"stranger"}})
	requireCode(t, err, chat.CodeBadRequest)

	// The raw JSON: the field is always there.
	tok, err := e.svc.IssueUserToken(bg, "", "bob", 0)
	require.NoError(t, err)
	auth := []string{"Authorization", "Bearer " + tok.Token}
	raw := e.do("POST", "/messages", "application/json", `{"channelId":"c"}`, auth...)
	require.Equal(t, http.StatusOK, raw.status, "body %s", raw.body)
	msgs := raw.json["messages"].([]any)
	require.Equal(t, []any{"bob", "carol"}, msgs[0].(map[string]any)["mentionedUserIds"])
	require.Equal(t, []any{}, msgs[1].(map[string]any)["mentionedUserIds"])
	raw = e.do("POST", "/message", "application/json", `{"channelId":"c","type":"text","data":{"text":"x"},"mentionedUserIds":"carol"}`, auth...)
	requireError(t, raw, chat.CodeBadRequest, "mentionedUserIds")

	ch, err := bob.GetChannel(bg, "c")
	require.NoError(t, err)
	counts := map[string]int64{}
	for _, cu := range ch.ChannelUsers {
		counts[cu.UserID] = cu.UnreadMentionCount
	}
	require.Equal(t, map[string]int64{"alice": 0, "bob": 1, "carol": 1}, counts)
	raw = e.do("GET", "/channel/c", "", "", auth...)
	require.Contains(t, raw.json["channelUsers"].([]any)[0].(map[string]any), "unreadMentionCount")

	// The mentions query: one's own; an admin's for anyone; no one else's.
	mine, err := bob.Mentions(bg, client.MentionsRequest{})
	require.NoError(t, err)
	require.Len(t, mine.Messages, 1)
	require.Equal(t, m.MessageID, mine.Messages[0].MessageID)
	require.NotNil(t, mine.Paging)
	theirs, err := e.c.Mentions(bg, client.MentionsRequest{UserID: "carol", Options: &client.SearchOptions{Limit: 5}})
	require.NoError(t, err)
	require.Len(t, theirs.Messages, 1)
	_, err = bob.Mentions(bg, client.MentionsRequest{UserID: "carol"})
	requireCode(t, err, chat.CodePermissionDenied)
	raw = e.do("POST", "/messages/mentions", "application/json", `{"options":{"limit":"x"}}`, auth...)
	requireError(t, raw, chat.CodeBadRequest, "options.limit")

	// Reading the channel sets the count to 0.
	read, err := bob.MarkRead(bg, "c", 0)
	require.NoError(t, err)
	require.EqualValues(t, 0, read.ChannelUsers[0].UnreadMentionCount)

	// An edit re-parses.
	ed, err := alice.UpdateMessage(bg, m.MessageID, client.UpdateMessageRequest{Data: chat.TextData("now @carol only")})
	require.NoError(t, err)
	require.Equal(t, []string{"carol"}, ed.MentionedUserIDs)
	mine, err = bob.Mentions(bg, client.MentionsRequest{})
	require.NoError(t, err)
	require.Empty(t, mine.Messages)
}

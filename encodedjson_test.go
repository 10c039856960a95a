package chat_test

import (
	"context"
	"encoding/json"
	"testing"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
	"github.com/stretchr/testify/require"
)

// TestCreatedListEncodedJSON checks that the lists the posting methods
// return carry their encoding/json encoding (what the HTTP API writes
// for them), byte for byte: text with characters encoding/json escapes,
// custom data, tags, a comment, mentions, a message the pre-send hook
// flagged, images and files; and that the other lists carry none.
func TestCreatedListEncodedJSON(t *testing.T) {
	requireEncoded := func(t *testing.T, l *chat.MessageList) {
		t.Helper()
		want, err := json.Marshal(l)
		require.NoError(t, err)
		require.NotNil(t, l.EncodedJSON(), "a created message's list carries its encoding")
		require.Equal(t, string(want), string(l.EncodedJSON()))
	}
	e := newEnv(t)
	e.channel("c", "alice", "bob")
	post := func(in chat.CreateMessageInput) *chat.MessageList {
		t.Helper()
		in.ChannelID = "c"
		out, err := e.svc.CreateMessage(e.ctx, "alice", in)
		require.NoError(t, err)
		requireEncoded(t, out)
		return out
	}
	first := post(chat.CreateMessageInput{Type: chat.MessageTypeText, Data: map[string]any{"text": "hi <b>&</b> \u2028 é @bob"}})
	post(chat.CreateMessageInput{Type: chat.MessageTypeCustom, Data: map[string]any{"card": map[string]any{"z": true, "a": []any{"x", nil, 1.5}}},
		Tags: []string{"t1", "<t2>"}})
	post(chat.CreateMessageInput{Type: chat.MessageTypeText, Data: map[string]any{"text": "a comment"}, ParentID: first.Messages[0].MessageID})
	post(chat.CreateMessageInput{Type: chat.MessageTypeText, Data: map[string]any{"text": "for you"}, MentionedUserIDs: []string{"bob"}})

	img, err := e.svc.CreateImageMessage(e.ctx, e.admin, chat.CreateImageMessageInput{ChannelID: "c", Caption: "look", FileName: "p.jpg",
		MimeType: "image/jpeg", Width: 1, Height: 1,
		Renditions: []chat.ImageRendition{{Name: "small", ContentType: "image/jpeg", Width: 1, Height: 1, Data: []byte("small")}}})
	require.NoError(t, err)
	requireEncoded(t, img)
	file, err := e.svc.CreateFileMessage(e.ctx, e.admin, chat.CreateFileMessageInput{ChannelID: "c", FileName: "a.txt", MimeType: "text/plain", Data: []byte("a")})
	require.NoError(t, err)
	requireEncoded(t, file)

	// Lists of other methods are encoded by their callers.
	got, err := e.svc.GetMessage(e.ctx, e.admin, first.Messages[0].MessageID)
	require.NoError(t, err)
	require.Nil(t, got.EncodedJSON())
	page, err := e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", Last: 10})
	require.NoError(t, err)
	require.Nil(t, page.EncodedJSON())
	edited, err := e.svc.UpdateMessage(e.ctx, "alice", chat.UpdateMessageInput{MessageID: first.Messages[0].MessageID,
		Data: &map[string]any{"text": "edited"}})
	require.NoError(t, err)
	require.Nil(t, edited.EncodedJSON())
	require.Nil(t, (*chat.MessageList)(nil).EncodedJSON())
}

// flagAll is a pre-send hook that flags every message.
type flagAll struct{}

func (flagAll) PreSend(context.Context, *chat.PreSendMessage) chat.PreSendVerdict {
	return chat.PreSendVerdict{Action: chat.PreSendFlag, Reason: "checked"}
}

// TestFlaggedListEncodedJSON: a message the pre-send hook flags is stored
// flagged; its list's encoding shows the flag.
func TestFlaggedListEncodedJSON(t *testing.T) {
	ctx := context.Background()
	svc, err := chat.New(ctx, memory.New(), chat.Config{PreSendHook: flagAll{}})
	require.NoError(t, err)
	admin, _, err := svc.CreateAdmin(ctx, "", "root", "")
	require.NoError(t, err)
	_, err = svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "c", Type: "standard", UserIDs: []string{"alice"}})
	require.NoError(t, err)
	out, err := svc.CreateMessage(ctx, "alice", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: map[string]any{"text": "hm"}})
	require.NoError(t, err)
	require.Equal(t, 1, out.Messages[0].FlagCount)
	want, err := json.Marshal(out)
	require.NoError(t, err)
	require.Equal(t, string(want), string(out.EncodedJSON()))
}

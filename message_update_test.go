package chat_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/stretchr/testify/require"
)

// deliveriesOf returns the outbox bodies of one event, oldest first.
func (e *env) deliveriesOf(webhookID, event string) []chat.MessageEventData {
	e.t.Helper()
	var out []chat.MessageEventData
	require.NoError(e.t, e.store.View(e.ctx, func(tx chat.Tx) error {
		ds, err := tx.ListDeliveries(e.ctx, webhookID, "", 100)
		for i := len(ds) - 1; i >= 0; i-- {
			if ds[i].Event != event {
				continue
			}
			var env chat.Envelope
			require.NoError(e.t, json.Unmarshal(ds[i].Body, &env))
			var d chat.MessageEventData
			require.NoError(e.t, json.Unmarshal(env.Data, &d))
			out = append(out, d)
		}
		return err
	}))
	return out
}

func TestUpdateMessage(t *testing.T) {
	e := newEnv(t)
	hook, err := e.svc.CreateWebhook(e.ctx, e.admin, "https://hooks.example.com/chat", []string{chat.EventMessageDidUpdate})
	require.NoError(t, err)
	e.channel("c", "alice", "bob")
	m := e.mustPost("alice", "c", "helo")
	require.Nil(t, m.EditedAt)
	created := m.CreatedAt

	// The author edits the text and the tags; the message keeps its id,
	// channel, author, segment and creation time.
	e.clk.Add(time.Second)
	out, err := e.svc.UpdateMessage(e.ctx, "alice", chat.UpdateMessageInput{MessageID: m.MessageID,
		Data: &map[string]any{"text": "hello"}, Tags: &[]string{"fixed"}})
	require.NoError(t, err)
	u := out.Messages[0]
	require.Equal(t, "hello", u.Data["text"])
	require.Equal(t, []string{"fixed"}, u.Tags)
	require.NotNil(t, u.EditedAt)
	require.Equal(t, e.svc.Now().Time, u.EditedAt.Time)
	require.Equal(t, e.svc.Now().Time, u.UpdatedAt.Time)
	require.Equal(t, created, u.CreatedAt)
	require.Equal(t, m.ChannelSegment, u.ChannelSegment)
	require.Equal(t, "alice", u.UserID)
	require.Equal(t, "alice", out.Users[0].UserID)
	got, err := e.svc.GetMessage(e.ctx, e.admin, m.MessageID)
	require.NoError(t, err)
	require.Equal(t, "hello", got.Messages[0].Data["text"])
	require.Equal(t, u.EditedAt, got.Messages[0].EditedAt)
	evs := e.deliveriesOf(hook.WebhookID, chat.EventMessageDidUpdate)
	require.Len(t, evs, 1)
	require.Equal(t, "alice", evs[0].EditorID)
	require.Equal(t, "hello", evs[0].Messages[0].Data["text"])
	require.Equal(t, "alice", evs[0].Users[0].UserID)

	// Tags alone: the data stays; an empty list removes them.
	out, err = e.svc.UpdateMessage(e.ctx, "alice", chat.UpdateMessageInput{MessageID: m.MessageID, Tags: &[]string{}})
	require.NoError(t, err)
	require.Equal(t, []string{}, out.Messages[0].Tags)
	require.Equal(t, "hello", out.Messages[0].Data["text"])

	// An admin edits anyone's message; another member may not.
	_, err = e.svc.UpdateMessage(e.ctx, e.admin, chat.UpdateMessageInput{MessageID: m.MessageID, Data: &map[string]any{"text": "moderated"}})
	require.NoError(t, err)
	evs = e.deliveriesOf(hook.WebhookID, chat.EventMessageDidUpdate)
	require.Len(t, evs, 3)
	require.Equal(t, e.admin, evs[2].EditorID)
	require.Equal(t, "alice", evs[2].Users[0].UserID, "users holds the author")
	_, err = e.svc.UpdateMessage(e.ctx, "bob", chat.UpdateMessageInput{MessageID: m.MessageID, Data: &map[string]any{"text": "mine now"}})
	requireCode(t, err, chat.CodePermissionDenied)
	_, err = e.svc.UpdateMessage(e.ctx, "stranger", chat.UpdateMessageInput{MessageID: m.MessageID, Data: &map[string]any{"text": "x"}})
	requireCode(t, err, chat.CodePermissionDenied)

	// Validation, as on create, and nothing changes on a refusal.
	for _, in := range []chat.UpdateMessageInput{
		{MessageID: m.MessageID},
		{MessageID: m.MessageID, Data: &map[string]any{"text": ""}},
		{MessageID: m.MessageID, Data: &map[string]any{"body": "no text key"}},
		{MessageID: m.MessageID, Caption: ptr("text messages have no caption")},
		{MessageID: m.MessageID, Tags: &[]string{""}},
		{MessageID: ""},
	} {
		_, err := e.svc.UpdateMessage(e.ctx, "alice", in)
		requireCode(t, err, chat.CodeBadRequest)
	}
	_, err = e.svc.UpdateMessage(e.ctx, "alice", chat.UpdateMessageInput{MessageID: "nope", Tags: &[]string{}})
	requireCode(t, err, chat.CodeNotFound)

	// The blacklist and whitelist apply to the new text, for the editor.
	_, err = e.svc.AddRules(e.ctx, e.admin, chat.Blacklist, []string{"darn"}, true)
	require.NoError(t, err)
	_, err = e.svc.UpdateMessage(e.ctx, "alice", chat.UpdateMessageInput{MessageID: m.MessageID, Data: &map[string]any{"text": "darn it"}})
	requireCode(t, err, chat.CodeBlacklisted)
	_, err = e.svc.AddRules(e.ctx, e.admin, chat.Whitelist, []string{"example.com"}, false)
	require.NoError(t, err)
	_, err = e.svc.UpdateMessage(e.ctx, "alice", chat.UpdateMessageInput{MessageID: m.MessageID, Data: &map[string]any{"text": "see evil.io"}})
	requireCode(t, err, chat.CodeLinkNotAllowed)
	got, err = e.svc.GetMessage(e.ctx, e.admin, m.MessageID)
	require.NoError(t, err)
	require.Equal(t, "moderated", got.Messages[0].Data["text"], "refused edits change nothing")
	require.Len(t, e.deliveriesOf(hook.WebhookID, chat.EventMessageDidUpdate), 3, "and emit nothing")

	// Custom messages replace their data wholesale.
	cm, err := e.svc.CreateMessage(e.ctx, "bob", chat.CreateMessageInput{ChannelID: "c", Type: "custom", Data: map[string]any{"poll": "a or b", "votes": 1}})
	require.NoError(t, err)
	out, err = e.svc.UpdateMessage(e.ctx, "bob", chat.UpdateMessageInput{MessageID: cm.Messages[0].MessageID, Data: &map[string]any{"poll": "a or b", "closed": true}})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"poll": "a or b", "closed": true}, out.Messages[0].Data)

	// A globally banned author may not edit.
	require.NoError(t, e.svc.GlobalBan(e.ctx, e.admin, "bob", false))
	_, err = e.svc.UpdateMessage(e.ctx, "bob", chat.UpdateMessageInput{MessageID: cm.Messages[0].MessageID, Tags: &[]string{"x"}})
	requireCode(t, err, chat.CodeGlobalBanned)

	// Deleted messages and closed channels are final.
	require.NoError(t, e.svc.DeleteMessage(e.ctx, e.admin, cm.Messages[0].MessageID))
	_, err = e.svc.UpdateMessage(e.ctx, e.admin, chat.UpdateMessageInput{MessageID: cm.Messages[0].MessageID, Data: &map[string]any{"x": 1}})
	requireCode(t, err, chat.CodeNotFound)
	e.channel("d", "alice")
	dm := e.mustPost("alice", "d", "bye")
	require.NoError(t, e.svc.CloseChannel(e.ctx, e.admin, "d"))
	_, err = e.svc.UpdateMessage(e.ctx, "alice", chat.UpdateMessageInput{MessageID: dm.MessageID, Data: &map[string]any{"text": "still here?"}})
	requireCode(t, err, chat.CodeNotFound) // closing deleted its messages
}

func TestUpdateImageAndFileMessages(t *testing.T) {
	e := newEnv(t)
	e.channel("c")
	img, err := e.svc.CreateImageMessage(e.ctx, e.admin, chat.CreateImageMessageInput{ChannelID: "c", Caption: "look", FileName: "p.png", MimeType: "image/png", Width: 2, Height: 1,
		Renditions: []chat.ImageRendition{{Name: "small", ContentType: "image/png", Width: 2, Height: 1, Data: []byte("s")}}})
	require.NoError(t, err)
	im := img.Messages[0]
	out, err := e.svc.UpdateMessage(e.ctx, e.admin, chat.UpdateMessageInput{MessageID: im.MessageID, Caption: ptr("a better caption")})
	require.NoError(t, err)
	u := out.Messages[0]
	require.Equal(t, "a better caption", u.Data["caption"])
	for _, k := range []string{"fileId", "fileName", "mimeType", "width", "height", "sizes"} {
		require.Equal(t, im.Data[k], u.Data[k], "%s stays", k)
	}
	b, _, err := e.svc.GetMessageBlob(e.ctx, e.admin, im.MessageID, "small")
	require.NoError(t, err)
	require.Equal(t, "s", string(b.Data), "the rendition stays")
	_, err = e.svc.UpdateMessage(e.ctx, e.admin, chat.UpdateMessageInput{MessageID: im.MessageID, Data: &map[string]any{"caption": "x"}})
	requireCode(t, err, chat.CodeBadRequest)
	_, err = e.svc.AddRules(e.ctx, e.admin, chat.Blacklist, []string{"nsfw"}, true)
	require.NoError(t, err)
	_, err = e.svc.UpdateMessage(e.ctx, e.admin, chat.UpdateMessageInput{MessageID: im.MessageID, Caption: ptr("so nsfw")})
	requireCode(t, err, chat.CodeBlacklisted)
	out, err = e.svc.UpdateMessage(e.ctx, e.admin, chat.UpdateMessageInput{MessageID: im.MessageID, Caption: ptr("")})
	require.NoError(t, err)
	require.Equal(t, "", out.Messages[0].Data["caption"])

	f, err := e.svc.CreateFileMessage(e.ctx, e.admin, chat.CreateFileMessageInput{ChannelID: "c", FileName: "a.txt", MimeType: "text/plain", Data: []byte("abc")})
	require.NoError(t, err)
	fm := f.Messages[0]
	_, err = e.svc.UpdateMessage(e.ctx, e.admin, chat.UpdateMessageInput{MessageID: fm.MessageID, Data: &map[string]any{"fileName": "b.txt"}})
	requireCode(t, err, chat.CodeBadRequest)
	_, err = e.svc.UpdateMessage(e.ctx, e.admin, chat.UpdateMessageInput{MessageID: fm.MessageID, Caption: ptr("x")})
	requireCode(t, err, chat.CodeBadRequest)
	out, err = e.svc.UpdateMessage(e.ctx, e.admin, chat.UpdateMessageInput{MessageID: fm.MessageID, Tags: &[]string{"docs"}})
	require.NoError(t, err)
	require.Equal(t, []string{"docs"}, out.Messages[0].Tags)
	require.Equal(t, fm.Data, out.Messages[0].Data)
}

// TestQueryMessagesByAuthor: userId (ext) keeps one author's messages,
// pages through them, and binds its tokens.
func TestQueryMessagesByAuthor(t *testing.T) {
	e := newEnv(t)
	e.channel("c", "alice", "bob")
	var mine []string
	for i := range 7 {
		m := e.mustPost("alice", "c", "a")
		mine = append(mine, m.MessageID)
		if i%2 == 0 {
			e.mustPost("bob", "c", "b")
		}
	}
	ids := func(l *chat.MessageList) []string {
		var out []string
		for _, m := range l.Messages {
			require.Equal(t, "alice", m.UserID)
			out = append(out, m.MessageID)
		}
		return out
	}
	out, err := e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", UserID: "alice"})
	require.NoError(t, err)
	require.Equal(t, mine, ids(out))
	// Paging forward, three at a time, visits each of alice's messages once.
	out, err = e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", UserID: "alice", First: 3})
	require.NoError(t, err)
	got := ids(out)
	for out.Paging.Next != "" {
		tok := out.Paging.Next
		out, err = e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", UserID: "alice", Token: tok})
		require.NoError(t, err)
		got = append(got, ids(out)...)
		// The token is bound to the author.
		_, err = e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", UserID: "bob", Token: tok})
		requireCode(t, err, chat.CodeBadRequest)
		_, err = e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", Token: tok})
		requireCode(t, err, chat.CodeBadRequest)
	}
	require.Equal(t, mine, got)
	out, err = e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", UserID: "nobody"})
	require.NoError(t, err)
	require.Empty(t, out.Messages)
	_, err = e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", UserID: strings.Repeat("u", 300)})
	requireCode(t, err, chat.CodeBadRequest)
}

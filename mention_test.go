package chat_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// mentionCount returns the unreadMentionCount of user in channel.
func (e *env) mentionCount(channel, user string) int64 {
	e.t.Helper()
	out, err := e.svc.GetChannel(e.ctx, e.admin, channel)
	require.NoError(e.t, err)
	for _, cu := range out.ChannelUsers {
		if cu.UserID == user {
			return cu.UnreadMentionCount
		}
	}
	e.t.Fatalf("%s is not in channel %s", user, channel)
	return 0
}

// mentionIDs lists the ids of user's mentions as actor sees them.
func (e *env) mentionIDs(actor, user string) []string {
	e.t.Helper()
	out, err := e.svc.QueryMentions(e.ctx, actor, chat.MentionQuery{UserID: user})
	require.NoError(e.t, err)
	ids := []string{}
	for _, m := range out.Messages {
		ids = append(ids, m.MessageID)
	}
	return ids
}

func TestMentionsOfAText(t *testing.T) {
	e := newEnv(t)
	e.channel("c", "alice", "bob", "carol", "bob.", "d@n")
	e.channel("other", "dave")

	m := e.mustPost("alice", "c", "hi @bob, @carol! @bob again, @dave @alice and @d@n")
	require.Equal(t, []string{"bob", "carol", "d@n"}, m.MentionedUserIDs,
		"members, in text order, once; not a non-member (dave) nor the author")
	m = e.mustPost("alice", "c", "@bob. wins over bob")
	require.Equal(t, []string{"bob."}, m.MentionedUserIDs, "the whole run when it names a member")
	m = e.mustPost("alice", "c", "no mention: bob@example.com")
	require.Equal(t, []string{}, m.MentionedUserIDs, "always present")
	stored, err := e.svc.GetMessage(e.ctx, "alice", m.MessageID)
	require.NoError(t, err)
	require.Equal(t, []string{}, stored.Messages[0].MentionedUserIDs)

	// Explicit ids: members only, added to those of the text.
	out, err := e.svc.CreateMessage(e.ctx, "alice", chat.CreateMessageInput{ChannelID: "c", Type: "custom",
		Data: map[string]any{"card": "@bob"}, MentionedUserIDs: []string{"carol", "alice", "carol"}})
	require.NoError(t, err)
	require.Equal(t, []string{"carol"}, out.Messages[0].MentionedUserIDs, "custom data is not parsed; the author is dropped")
	_, err = e.svc.CreateMessage(e.ctx, "alice", chat.CreateMessageInput{ChannelID: "c", Type: "text",
		Data: map[string]any{"text": "x"}, MentionedUserIDs: []string{"dave"}})
	requireCode(t, err, chat.CodeBadRequest)
	require.Contains(t, err.Error(), "mentionedUserIds")
	_, err = e.svc.CreateMessage(e.ctx, "alice", chat.CreateMessageInput{ChannelID: "c", Type: "text",
		Data: map[string]any{"text": "x"}, MentionedUserIDs: []string{"bad\x01id"}})
	requireCode(t, err, chat.CodeBadRequest)
	many := make([]string, chat.MaxMentions+1)
	for i := range many {
		many[i] = string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	_, err = e.svc.CreateMessage(e.ctx, "alice", chat.CreateMessageInput{ChannelID: "c", Type: "text",
		Data: map[string]any{"text": "x"}, MentionedUserIDs: many})
	requireCode(t, err, chat.CodeBadRequest)
	require.Equal(t, []string{"bob", "carol", "d@n", "bob.", "carol"}, e.mentionIDsOf("c"), "refused messages stored nothing")

	// An image caption mentions too.
	img, err := e.svc.CreateImageMessage(e.ctx, "alice", chat.CreateImageMessageInput{ChannelID: "c", Caption: "look @bob", FileName: "p.jpg",
		MimeType: "image/jpeg", Width: 1, Height: 1, Renditions: []chat.ImageRendition{{Name: "small", ContentType: "image/jpeg", Width: 1, Height: 1, Data: []byte("x")}}})
	require.NoError(t, err)
	require.Equal(t, []string{"bob"}, img.Messages[0].MentionedUserIDs)
}

// mentionIDsOf returns every mentioned user of the channel's live
// messages, in message order.
func (e *env) mentionIDsOf(channel string) []string {
	e.t.Helper()
	out, err := e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: channel, First: 100, After: new(int64)})
	require.NoError(e.t, err)
	var ids []string
	for _, m := range out.Messages {
		ids = append(ids, m.MentionedUserIDs...)
	}
	return ids
}

func TestMentionCountsAndReading(t *testing.T) {
	e := newEnv(t)
	e.channel("c", "alice", "bob", "carol")
	e.mustPost("alice", "c", "@bob one")
	root := e.mustPost("carol", "c", "@bob two")
	e.mustPost("bob", "c", "@bob talking to myself")
	e.mustPost("alice", "c", "nothing")
	require.EqualValues(t, 2, e.mentionCount("c", "bob"), "the author's own mention is none")
	require.EqualValues(t, 0, e.mentionCount("c", "alice"))

	// A comment counts like any message.
	_, err := e.svc.CreateMessage(e.ctx, "alice", chat.CreateMessageInput{ChannelID: "c", Type: "text", Data: map[string]any{"text": "re @bob"}, ParentID: root.MessageID})
	require.NoError(t, err)
	require.EqualValues(t, 3, e.mentionCount("c", "bob"))

	// Reading part of the channel leaves the mentions above the marker;
	// reading it all sets the count to 0, and MarkRead's answer says so.
	read, err := e.svc.MarkRead(e.ctx, "bob", "c", 1)
	require.NoError(t, err)
	require.EqualValues(t, 2, read.ChannelUsers[0].UnreadMentionCount)
	read, err = e.svc.MarkRead(e.ctx, "bob", "c", 0)
	require.NoError(t, err)
	require.EqualValues(t, 0, read.ChannelUsers[0].UnreadMentionCount)
	require.EqualValues(t, 0, e.mentionCount("c", "bob"))

	// An edit re-parses: a new mention above the marker counts, one the
	// edit drops no longer does.
	m := e.mustPost("alice", "c", "@bob and @carol")
	require.EqualValues(t, 1, e.mentionCount("c", "bob"))
	text := map[string]any{"text": "only @carol now"}
	ed, err := e.svc.UpdateMessage(e.ctx, "alice", chat.UpdateMessageInput{MessageID: m.MessageID, Data: &text})
	require.NoError(t, err)
	require.Equal(t, []string{"carol"}, ed.Messages[0].MentionedUserIDs)
	require.EqualValues(t, 0, e.mentionCount("c", "bob"))
	text = map[string]any{"text": "back to @bob"}
	_, err = e.svc.UpdateMessage(e.ctx, "alice", chat.UpdateMessageInput{MessageID: m.MessageID, Data: &text, MentionedUserIDs: []string{"carol"}})
	require.NoError(t, err)
	require.EqualValues(t, 1, e.mentionCount("c", "bob"))
	require.Equal(t, []string{"bob", "carol"}, e.storedMessage(m.MessageID).MentionedUserIDs)
	tags := []string{"t"}
	_, err = e.svc.UpdateMessage(e.ctx, "alice", chat.UpdateMessageInput{MessageID: m.MessageID, Tags: &tags})
	require.NoError(t, err)
	require.Equal(t, []string{"bob", "carol"}, e.storedMessage(m.MessageID).MentionedUserIDs, "a tags-only edit keeps them")
	_, err = e.svc.UpdateMessage(e.ctx, "alice", chat.UpdateMessageInput{MessageID: m.MessageID, Tags: &tags, MentionedUserIDs: []string{"bob"}})
	requireCode(t, err, chat.CodeBadRequest)

	// A deleted message mentions no one.
	require.NoError(t, e.svc.DeleteMessage(e.ctx, "alice", m.MessageID))
	require.EqualValues(t, 0, e.mentionCount("c", "bob"))
	got, err := e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", IncludeDeleted: true})
	require.NoError(t, err)
	last := got.Messages[len(got.Messages)-1]
	require.True(t, last.IsDeleted)
	require.Equal(t, []string{}, last.MentionedUserIDs)
}

func TestQueryMentions(t *testing.T) {
	e := newEnv(t)
	e.channel("c", "alice", "bob")
	e.channel("d", "alice", "bob")
	var ids []string
	for i, ch := range []string{"c", "d", "c", "d", "c"} {
		e.clk.Add(time.Second)
		m := e.mustPost("alice", ch, "hey @bob "+string(rune('0'+i)))
		ids = append([]string{m.MessageID}, ids...) // newest first
	}
	e.mustPost("bob", "c", "@alice")
	require.Equal(t, ids, e.mentionIDs("bob", "bob"), "its own, newest first")
	require.Equal(t, ids, e.mentionIDs(e.admin, "bob"), "an admin lists anyone's")
	own, err := e.svc.QueryMentions(e.ctx, "bob", chat.MentionQuery{})
	require.NoError(t, err)
	require.Len(t, own.Messages, 5, "userId defaults to the caller")
	_, err = e.svc.QueryMentions(e.ctx, "alice", chat.MentionQuery{UserID: "bob"})
	requireCode(t, err, chat.CodePermissionDenied)
	_, err = e.svc.QueryMentions(e.ctx, "bob", chat.MentionQuery{Limit: 101})
	requireCode(t, err, chat.CodeBadRequest)
	_, err = e.svc.QueryMentions(e.ctx, "bob", chat.MentionQuery{Token: "forged.token"})
	requireCode(t, err, chat.CodeBadRequest)

	// Keyset pages, forward and back; a token is bound to its query.
	p1, err := e.svc.QueryMentions(e.ctx, "bob", chat.MentionQuery{Limit: 2})
	require.NoError(t, err)
	require.Equal(t, ids[:2], msgIDs(p1.Messages))
	require.Empty(t, p1.Paging.Previous)
	p2, err := e.svc.QueryMentions(e.ctx, "bob", chat.MentionQuery{Limit: 2, Token: p1.Paging.Next})
	require.NoError(t, err)
	require.Equal(t, ids[2:4], msgIDs(p2.Messages))
	p3, err := e.svc.QueryMentions(e.ctx, "bob", chat.MentionQuery{Token: p2.Paging.Next})
	require.NoError(t, err)
	require.Equal(t, ids[4:], msgIDs(p3.Messages))
	require.Empty(t, p3.Paging.Next)
	back, err := e.svc.QueryMentions(e.ctx, "bob", chat.MentionQuery{Token: p2.Paging.Previous})
	require.NoError(t, err)
	require.Equal(t, ids[:2], msgIDs(back.Messages))
	_, err = e.svc.QueryMentions(e.ctx, "bob", chat.MentionQuery{ChannelID: "c", Token: p1.Paging.Next})
	requireCode(t, err, chat.CodeBadRequest)
	inC, err := e.svc.QueryMentions(e.ctx, "bob", chat.MentionQuery{ChannelID: "c"})
	require.NoError(t, err)
	require.Equal(t, []string{ids[0], ids[2], ids[4]}, msgIDs(inC.Messages))

	// A user who leaves a channel no longer has its mentions there.
	require.NoError(t, e.svc.LeaveChannel(e.ctx, "bob", "d"))
	require.Equal(t, []string{ids[0], ids[2], ids[4]}, e.mentionIDs("bob", "bob"))
}

func msgIDs(ms []chat.Message) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.MessageID)
	}
	return out
}

func TestMentionsInEvents(t *testing.T) {
	e := newEnv(t)
	w, err := e.svc.CreateWebhook(e.ctx, e.admin, "https://hooks.example.com/x", []string{chat.EventMessageDidCreate})
	require.NoError(t, err)
	e.channel("c", "alice", "bob")
	e.mustPost("alice", "c", "hi @bob")
	ds := e.deliveries(w.WebhookID)
	require.NotEmpty(t, ds)
	var body struct {
		Data chat.MessageEventData `json:"data"`
	}
	require.NoError(t, json.Unmarshal(ds[len(ds)-1].Body, &body))
	require.Equal(t, []string{"bob"}, body.Data.Messages[0].MentionedUserIDs)
}

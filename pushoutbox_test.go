package chat_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
)

func (e *env) pushes(messageID string) []*chat.PushDelivery {
	e.t.Helper()
	var out []*chat.PushDelivery
	// The batches written with the messages become pushes first.
	require.NoError(e.t, e.store.Update(e.ctx, func(tx chat.Tx) error {
		if _, err := tx.ExpandPushBatches(e.ctx, 0); err != nil {
			return err
		}
		var err error
		out, err = tx.ListPushes(e.ctx, messageID)
		return err
	}))
	return out
}

func pushedTo(ps []*chat.PushDelivery) map[string]int {
	out := map[string]int{}
	for _, p := range ps {
		out[p.UserID]++
	}
	return out
}

// A new message writes one push per device of every member whose level
// admits it, in the message's transaction; the author, members who
// blocked the author, comments and levels none and mentions get none.
func TestPushesWrittenWithTheMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.channel("c", "ann", "bob", "cat", "dan", "eve", "fay")
	_, err := e.svc.UpdateUser(e.ctx, e.admin, chat.UpdateUserInput{UserID: "ann", DisplayName: ptr("Ann")})
	require.NoError(t, err)
	for _, u := range []string{"ann", "bob", "bob", "cat", "dan", "eve"} {
		e.register(u, u, u+"-"+chat.NewID())
	}
	_, err = e.svc.SetChannelNotifications(e.ctx, "cat", "c", chat.NotifyNone)
	require.NoError(t, err)
	_, err = e.svc.SetUserNotifications(e.ctx, "dan", "dan", chat.NotifyMentions)
	require.NoError(t, err)
	_, err = e.svc.BlockUser(e.ctx, "eve", "eve", "ann")
	require.NoError(t, err)

	m := e.mustPost("ann", "c", "hello "+strings.Repeat("é", 120))
	ps := e.pushes(m.MessageID)
	require.Equal(t, map[string]int{"bob": 2}, pushedTo(ps), "fay has no device")
	p := ps[0]
	require.Equal(t, "c", p.Title, "the channel's display name")
	require.Equal(t, "Ann: hello "+strings.Repeat("é", 94), p.Body)
	require.Equal(t, chat.DeliveryPending, p.State)
	require.Equal(t, m.CreatedAt, p.NextAttemptAt)
	require.Equal(t, "c", p.ChannelID)

	c, err := e.svc.CreateMessage(e.ctx, "ann", chat.CreateMessageInput{ChannelID: "c", Type: "text",
		Data: chat.TextData("a comment"), ParentID: m.MessageID})
	require.NoError(t, err)
	require.Empty(t, e.pushes(c.Messages[0].MessageID), "comments reach only those they mention")

	m = e.mustPost("bob", "c", "hi")
	require.Empty(t, pushedTo(e.pushes(m.MessageID))["bob"], "not the author's own")
	require.Equal(t, 1, pushedTo(e.pushes(m.MessageID))["ann"])

	// A mention reaches dan (level mentions) and, in a comment, the
	// member it names; cat (none) and eve (blocks ann) still get nothing.
	m = e.mustPost("ann", "c", "@dan @cat @eve look")
	require.ElementsMatch(t, []string{"dan", "cat", "eve"}, m.MentionedUserIDs)
	require.Equal(t, map[string]int{"bob": 2, "dan": 1}, pushedTo(e.pushes(m.MessageID)))
	c, err = e.svc.CreateMessage(e.ctx, "ann", chat.CreateMessageInput{ChannelID: "c", Type: "text",
		Data: chat.TextData("@bob see this"), ParentID: m.MessageID})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"bob": 2}, pushedTo(e.pushes(c.Messages[0].MessageID)), "a comment reaches whom it mentions")
}

// The server's text can be left out of pushes; a rolled-back message
// leaves no push.
func TestPushWithoutText(t *testing.T) {
	t.Parallel()
	st := memory.New()
	e := newEnvStore(t, st)
	svc, err := chat.New(e.ctx, st, chat.Config{PushWithoutText: true, Now: e.clk.Now})
	require.NoError(t, err)
	e.channel("c", "ann", "bob")
	e.register("bob", "bob", "tok-bob")
	out, err := svc.CreateMessage(e.ctx, "ann", chat.CreateMessageInput{ChannelID: "c", Type: "text", Data: chat.TextData("secret")})
	require.NoError(t, err)
	ps := e.pushes(out.Messages[0].MessageID)
	require.Len(t, ps, 1)
	require.Equal(t, "ann", ps[0].Body, "the sender's name alone")
}

// The VAPID key pair is made once and shared through the store.
func TestVAPIDKeyKeptInStore(t *testing.T) {
	t.Parallel()
	st := memory.New()
	e := newEnvStore(t, st)
	other, err := chat.New(e.ctx, st, chat.Config{})
	require.NoError(t, err)
	a, err := e.svc.PushVAPIDKey()
	require.NoError(t, err)
	b, err := other.PushVAPIDKey()
	require.NoError(t, err)
	require.Equal(t, a, b)
	raw, err := base64.RawURLEncoding.DecodeString(a.PublicKey)
	require.NoError(t, err)
	require.Len(t, raw, 65)
	require.Equal(t, byte(4), raw[0], "an uncompressed point")
	third, err := chat.New(e.ctx, memory.New(), chat.Config{})
	require.NoError(t, err)
	c, err := third.PushVAPIDKey()
	require.NoError(t, err)
	require.NotEqual(t, a, c, "another store, another key")
}

// A member with an open event stream (on this process, or written to the
// store by another) gets no push; the decision reads presence in the
// message's transaction.
func TestPushSkipsOnlineMembers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.channel("c", "ann", "bob", "cat")
	e.register("bob", "bob", "tok-bob")
	e.register("cat", "cat", "tok-cat")
	p := chat.NewPresence(e.svc, chat.PresenceConfig{Grace: time.Hour})
	require.NoError(t, p.Start(e.ctx))
	defer func() { require.NoError(t, p.Stop(e.ctx)) }()
	p.Open("bob")
	m := e.mustPost("ann", "c", "hi")
	require.Equal(t, map[string]int{"cat": 1}, pushedTo(e.pushes(m.MessageID)), "bob is online here")
	require.NoError(t, p.Sync(e.ctx))
	other, err := chat.New(e.ctx, e.store, chat.Config{Now: e.clk.Now})
	require.NoError(t, err)
	out, err := other.CreateMessage(e.ctx, "ann", chat.CreateMessageInput{ChannelID: "c", Type: "text", Data: chat.TextData("again")})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"cat": 1}, pushedTo(e.pushes(out.Messages[0].MessageID)), "bob's stream is in the store")
	p.Close("bob")
	require.NoError(t, p.Sync(e.ctx))
	m = e.mustPost("ann", "c", "gone")
	require.Equal(t, map[string]int{"bob": 1, "cat": 1}, pushedTo(e.pushes(m.MessageID)), "no open stream, grace period or not")
}

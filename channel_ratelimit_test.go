package chat_test

import (
	"encoding/json"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/stretchr/testify/require"
)

func TestSlowMode(t *testing.T) {
	e := newEnv(t)
	hook, err := e.svc.CreateWebhook(e.ctx, e.admin, "https://hooks.example.com/chat", []string{chat.EventChannelDidUpdate})
	require.NoError(t, err)
	e.channel("c", "alice", "bob", "vip")
	e.channel("d", "alice")

	// Off by default.
	got, err := e.svc.GetChannel(e.ctx, e.admin, "c")
	require.NoError(t, err)
	require.False(t, got.Channels[0].IsRateLimited)
	require.Zero(t, got.Channels[0].RateLimitWindow)
	e.mustPost("alice", "c", "one")
	e.mustPost("alice", "c", "two")

	out, err := e.svc.SetChannelRateLimit(e.ctx, e.admin, "c", 10*time.Second)
	require.NoError(t, err)
	require.True(t, out.Channels[0].IsRateLimited)
	require.Equal(t, 10_000, out.Channels[0].RateLimitWindow)
	got, err = e.svc.GetChannel(e.ctx, e.admin, "c")
	require.NoError(t, err)
	require.True(t, got.Channels[0].IsRateLimited, "stored")
	require.Equal(t, 10_000, got.Channels[0].RateLimitWindow)

	// alice posted just now: she waits out the window from her last
	// message; bob, who has not posted, may post once.
	_, err = e.post("alice", "c", "three")
	requireCode(t, err, chat.CodeRateLimited)
	ce := err.(*chat.Error)
	require.Equal(t, []chat.Detail{chat.RetryAfter{Wait: 10 * time.Second}}, ce.Detail)
	var ra chat.RetryAfter
	require.ErrorAs(t, err, &ra)
	require.Equal(t, 10, ra.Seconds())
	require.Contains(t, ce.Message, "slow mode")
	e.mustPost("bob", "c", "hi")
	e.clk.Add(4 * time.Second)
	_, err = e.post("bob", "c", "again")
	requireCode(t, err, chat.CodeRateLimited)
	require.Equal(t, []chat.Detail{chat.RetryAfter{Wait: 6 * time.Second}}, err.(*chat.Error).Detail)
	// Every kind of post counts, and so does CheckPost (before an upload).
	_, err = e.svc.CreateMessage(e.ctx, "bob", chat.CreateMessageInput{ChannelID: "c", Type: "custom", Data: map[string]any{"x": 1}})
	requireCode(t, err, chat.CodeRateLimited)
	requireCode(t, e.svc.CheckPost(e.ctx, "bob", "c", ""), chat.CodeRateLimited)
	_, err = e.svc.CreateFileMessage(e.ctx, "bob", chat.CreateFileMessageInput{ChannelID: "c", FileName: "a.txt", Data: []byte("a")})
	requireCode(t, err, chat.CodeRateLimited)
	// Other channels are not affected.
	e.mustPost("alice", "d", "elsewhere")

	// Deleting the last message does not reset the wait.
	e.clk.Add(6 * time.Second)
	m := e.mustPost("bob", "c", "after the window")
	require.NoError(t, e.svc.DeleteMessage(e.ctx, e.admin, m.MessageID))
	_, err = e.post("bob", "c", "sneaky")
	requireCode(t, err, chat.CodeRateLimited)
	e.clk.Add(9999 * time.Millisecond)
	_, err = e.post("bob", "c", "1 ms early")
	requireCode(t, err, chat.CodeRateLimited)
	require.Equal(t, []chat.Detail{chat.RetryAfter{Wait: time.Millisecond}}, err.(*chat.Error).Detail)
	e.clk.Add(time.Millisecond)
	e.mustPost("bob", "c", "on time")

	// Admins and holders of User/ExemptFromRateLimit are never limited.
	e.mustPost(e.admin, "c", "admin 1")
	e.mustPost(e.admin, "c", "admin 2")
	_, err = e.svc.PutRoles(e.ctx, e.admin, []string{"fast"}, []string{chat.PermExemptFromRateLimit})
	require.NoError(t, err)
	_, err = e.svc.UpdateUser(e.ctx, e.admin, chat.UpdateUserInput{UserID: "vip", Roles: &[]string{"fast"}})
	require.NoError(t, err)
	e.mustPost("vip", "c", "vip 1")
	e.mustPost("vip", "c", "vip 2")

	// 0 turns it off.
	out, err = e.svc.SetChannelRateLimit(e.ctx, e.admin, "c", chat.RateLimitOff)
	require.NoError(t, err)
	require.False(t, out.Channels[0].IsRateLimited)
	require.Zero(t, out.Channels[0].RateLimitWindow)
	e.mustPost("bob", "c", "free again")
	e.mustPost("bob", "c", "and again")

	// Each change emitted channel.didUpdate (on, off); setting the same
	// window again changes nothing and emits nothing.
	_, err = e.svc.SetChannelRateLimit(e.ctx, e.admin, "c", chat.RateLimitOff)
	require.NoError(t, err)
	var updates []chat.ChannelEventData
	require.NoError(t, e.store.View(e.ctx, func(tx chat.Tx) error {
		ds, err := tx.ListDeliveries(e.ctx, hook.WebhookID, "", 100)
		for i := len(ds) - 1; i >= 0; i-- {
			var env chat.Envelope
			require.NoError(t, json.Unmarshal(ds[i].Body, &env))
			var d chat.ChannelEventData
			require.NoError(t, json.Unmarshal(env.Data, &d))
			updates = append(updates, d)
		}
		return err
	}))
	require.Len(t, updates, 2)
	require.True(t, updates[0].Channel.IsRateLimited)
	require.Equal(t, 10_000, updates[0].Channel.RateLimitWindow)
	require.False(t, updates[1].Channel.IsRateLimited)
	require.Equal(t, e.admin, updates[1].ActorID)

	// Validation and state.
	for _, w := range []time.Duration{-time.Millisecond, chat.MaxRateLimitWindow + time.Millisecond} {
		_, err = e.svc.SetChannelRateLimit(e.ctx, e.admin, "c", w)
		requireCode(t, err, chat.CodeBadRequest)
	}
	_, err = e.svc.SetChannelRateLimit(e.ctx, e.admin, "nope", time.Second)
	requireCode(t, err, chat.CodeNotFound)
	require.NoError(t, e.svc.CloseChannel(e.ctx, e.admin, "d"))
	_, err = e.svc.SetChannelRateLimit(e.ctx, e.admin, "d", time.Second)
	requireCode(t, err, chat.CodeForbidden)
}

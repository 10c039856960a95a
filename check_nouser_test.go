package chat_test

import (
	"testing"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/stretchr/testify/require"
)

// TestCheckMessageWithoutUser: with no user id, the dry run checks the
// message as posted by a plain member without roles who has not posted
// yet: the channel's rules and the content's apply, nothing about a user
// (ban, member mute, slow mode), and nothing is created.
func TestCheckMessageWithoutUser(t *testing.T) {
	e := newEnv(t)
	e.channel("room", "ann")
	e.channel("gone", "ann")
	require.NoError(t, e.svc.CloseChannel(e.ctx, e.admin, "gone"))
	_, err := e.svc.AddRules(e.ctx, e.admin, chat.Blacklist, []string{"darn"}, true)
	require.NoError(t, err)
	_, err = e.svc.SetChannelRateLimit(e.ctx, e.admin, "room", time.Hour)
	require.NoError(t, err)
	e.mustPost("ann", "room", "first")
	before := e.lastEventID()

	check := func(channelID, text string) *chat.CheckResult {
		t.Helper()
		res, err := e.svc.CheckMessage(e.ctx, e.admin, "", chat.CreateMessageInput{ChannelID: channelID, Type: chat.MessageTypeText, Data: map[string]any{"text": text}})
		require.NoError(t, err)
		return res
	}
	require.True(t, check("", "hello").Allowed)
	require.True(t, check("room", "hello").Allowed, "a member without messages is not slowed down")
	require.Equal(t, chat.CodeBlacklisted, check("", "oh darn").Code, "no exemptions")
	require.Equal(t, chat.CodeBlacklisted, check("room", "oh darn").Code)
	require.Equal(t, chat.CodeNotFound, check("nowhere", "hello").Code)
	require.Equal(t, chat.CodeForbidden, check("gone", "hello").Code)
	// ann, a real member who just posted, is slowed down: the rules
	// about a user apply with its id only.
	res, err := e.svc.CheckMessage(e.ctx, e.admin, "ann", chat.CreateMessageInput{ChannelID: "room", Type: chat.MessageTypeText, Data: map[string]any{"text": "hello"}})
	require.NoError(t, err)
	require.Equal(t, chat.CodeRateLimited, res.Code)
	require.Equal(t, before, e.lastEventID(), "a dry run changes nothing")
	require.NoError(t, e.svc.MuteChannel(e.ctx, e.admin, "room", time.Hour))
	before = e.lastEventID()
	require.Equal(t, chat.CodeChannelMuted, check("room", "hello").Code)
	require.Equal(t, before, e.lastEventID(), "a dry run changes nothing")
	require.NoError(t, e.store.View(e.ctx, func(tx chat.Tx) error {
		_, err := tx.GetUser(e.ctx, "")
		requireCode(t, err, chat.CodeNotFound)
		return nil
	}))
	// Only admins run it.
	_, err = e.svc.CheckMessage(e.ctx, "ann", "", chat.CreateMessageInput{Type: chat.MessageTypeText, Data: map[string]any{"text": "hello"}})
	requireCode(t, err, chat.CodePermissionDenied)
}

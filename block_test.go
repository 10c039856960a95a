package chat_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

func messageTexts(l *chat.MessageList) []string {
	var out []string
	for _, m := range l.Messages {
		out = append(out, m.Data["text"].(string))
	}
	return out
}

// TestBlockQueries: a blocker's message and reactor queries leave out the
// blocked user's messages and reactions; others' queries do not; the
// paging of what was read still works; unblocking restores them.
func TestBlockQueries(t *testing.T) {
	e := newEnv(t)
	e.channel("c", "alice", "bob", "mallory")
	e.mustPost("bob", "c", "b1")
	m1 := e.mustPost("mallory", "c", "m1")
	e.mustPost("bob", "c", "b2")
	e.mustPost("mallory", "c", "m2")
	e.mustPost("bob", "c", "b3")
	for _, u := range []string{"bob", "mallory"} {
		_, err := e.svc.AddReaction(e.ctx, u, m1.MessageID, chat.ReferenceTypeMessage, "like")
		require.NoError(t, err)
	}

	bl, err := e.svc.BlockUser(e.ctx, "alice", "alice", "mallory")
	require.NoError(t, err)
	require.Len(t, bl.Blocks, 1)
	require.Equal(t, "mallory", bl.Blocks[0].BlockedID)
	require.Equal(t, "mallory", bl.Users[0].UserID)

	q := func(actor string, in chat.MessageQuery) *chat.MessageList {
		t.Helper()
		in.ChannelID = "c"
		l, err := e.svc.QueryMessages(e.ctx, actor, in)
		require.NoError(t, err)
		return l
	}
	require.Equal(t, []string{"b1", "b2", "b3"}, messageTexts(q("alice", chat.MessageQuery{})))
	require.Equal(t, []string{"b1", "m1", "b2", "m2", "b3"}, messageTexts(q("bob", chat.MessageQuery{})))
	for _, u := range q("alice", chat.MessageQuery{}).Users {
		require.NotEqual(t, "mallory", u.UserID, "the blocked author is not side-loaded")
	}
	// Pages of two: the rows read are b2, m2, b3 then b1, m1; alice sees
	// what is not mallory's, and the tokens still lead on.
	p := q("alice", chat.MessageQuery{Last: 3})
	require.Equal(t, []string{"b2", "b3"}, messageTexts(p))
	require.NotEmpty(t, p.Paging.Previous)
	p = q("alice", chat.MessageQuery{Token: p.Paging.Previous})
	require.Equal(t, []string{"b1"}, messageTexts(p))

	r, err := e.svc.QueryReactors(e.ctx, "alice", chat.ReactorQuery{ReferenceID: m1.MessageID, ReferenceType: chat.ReferenceTypeMessage})
	require.NoError(t, err)
	require.Len(t, r.Results.Reactions[0].Reactors, 1)
	require.Equal(t, "bob", r.Results.Reactions[0].Reactors[0].UserID)
	r, err = e.svc.QueryReactors(e.ctx, "bob", chat.ReactorQuery{ReferenceID: m1.MessageID, ReferenceType: chat.ReferenceTypeMessage})
	require.NoError(t, err)
	require.Len(t, r.Results.Reactions[0].Reactors, 2)

	bl, err = e.svc.UnblockUser(e.ctx, "alice", "alice", "mallory")
	require.NoError(t, err)
	require.Empty(t, bl.Blocks)
	require.Equal(t, []string{"b1", "m1", "b2", "m2", "b3"}, messageTexts(q("alice", chat.MessageQuery{})))
}

// TestBlockAddToChannel: a blocked user cannot add its blocker to a
// channel (AddUsers, or CreateChannel naming it), and nothing changes; an
// admin can; the blocker can still add the blocked user.
func TestBlockAddToChannel(t *testing.T) {
	e := newEnv(t)
	_, err := e.svc.PutRoles(e.ctx, e.admin, []string{"inviter"}, []string{chat.PermManageUsers})
	require.NoError(t, err)
	roles := []string{"inviter"}
	for _, u := range []string{"mallory", "alice"} {
		_, err = e.svc.UpdateUser(e.ctx, e.admin, chat.UpdateUserInput{UserID: u, Roles: &roles})
		require.NoError(t, err)
	}
	e.channel("c", "mallory")
	_, err = e.svc.BlockUser(e.ctx, "alice", "alice", "mallory")
	require.NoError(t, err)

	_, err = e.svc.AddUsers(e.ctx, "mallory", "c", []string{"bob", "alice"})
	require.Equal(t, chat.CodePermissionDenied, chat.ErrorCode(err), "%v", err)
	cl, err := e.svc.GetChannel(e.ctx, e.admin, "c")
	require.NoError(t, err)
	require.Equal(t, 1, cl.Channels[0].MemberCount, "nothing changed: bob was not added either")
	_, err = e.svc.CreateChannel(e.ctx, "mallory", chat.CreateChannelInput{ChannelID: "d", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice"}})
	require.Equal(t, chat.CodePermissionDenied, chat.ErrorCode(err))
	_, err = e.svc.GetChannel(e.ctx, e.admin, "d")
	require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err), "no channel was created")

	_, err = e.svc.AddUsers(e.ctx, "mallory", "c", []string{"bob"})
	require.NoError(t, err, "others are not concerned")
	_, err = e.svc.AddUsers(e.ctx, e.admin, "c", []string{"alice"})
	require.NoError(t, err, "an admin may")
	_, err = e.svc.CreateChannel(e.ctx, "alice", chat.CreateChannelInput{ChannelID: "e", Type: chat.ChannelTypeStandard, UserIDs: []string{"mallory"}})
	require.NoError(t, err, "the blocker may add the blocked user")
}

// TestBlockRules: who may block for whom, and the input rules.
func TestBlockRules(t *testing.T) {
	e := newEnv(t)
	_, err := e.svc.BlockUser(e.ctx, "alice", "alice", "alice")
	require.Equal(t, chat.CodeBadRequest, chat.ErrorCode(err))
	_, err = e.svc.BlockUser(e.ctx, "alice", "bob", "carol")
	require.Equal(t, chat.CodePermissionDenied, chat.ErrorCode(err), "only for oneself")
	_, err = e.svc.ListBlocks(e.ctx, "alice", "bob")
	require.Equal(t, chat.CodePermissionDenied, chat.ErrorCode(err))
	_, err = e.svc.UnblockUser(e.ctx, "alice", "bob", "carol")
	require.Equal(t, chat.CodePermissionDenied, chat.ErrorCode(err))
	_, err = e.svc.BlockUser(e.ctx, "alice", "alice", "")
	require.Equal(t, chat.CodeBadRequest, chat.ErrorCode(err))

	bl, err := e.svc.BlockUser(e.ctx, e.admin, "bob", "carol")
	require.NoError(t, err, "an admin blocks for anyone")
	require.Len(t, bl.Blocks, 1)
	e.clk.Add(1000)
	bl, err = e.svc.BlockUser(e.ctx, "bob", "bob", "dave")
	require.NoError(t, err)
	again, err := e.svc.BlockUser(e.ctx, "bob", "bob", "carol")
	require.NoError(t, err, "blocking again is a no-op")
	require.Equal(t, bl, again)
	require.Equal(t, "carol", bl.Blocks[0].BlockedID, "oldest first")
	require.Equal(t, "dave", bl.Blocks[1].BlockedID)
	l, err := e.svc.ListBlocks(e.ctx, e.admin, "bob")
	require.NoError(t, err)
	require.Equal(t, bl, l)
	_, err = e.svc.UnblockUser(e.ctx, "bob", "bob", "nobody")
	require.NoError(t, err, "unblocking a user not blocked is a no-op")

	// Blocks are internal: not among the recent events, no webhook.
	evs, err := e.svc.RecentEvents(e.ctx, 100)
	require.NoError(t, err)
	for _, ev := range evs {
		require.NotContains(t, []string{chat.EventUserDidBlock, chat.EventUserDidUnblock}, ev.Name)
	}
}

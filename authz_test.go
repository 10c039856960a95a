package chat_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// The rights of end users decided by the Service (docs/api.md section 1 (Permissions of end users)),
// beyond the HTTP matrix: ownership, channel bans, global access, closed
// channels; a refusal changes nothing.
func TestEndUserRights(t *testing.T) {
	e := newEnv(t)
	e.channel("c", "alice", "bob")
	mine := e.mustPost("alice", "c", "mine")
	theirs := e.mustPost("bob", "c", "theirs")

	// A user creating a channel becomes its member; an admin does not.
	out, err := e.svc.CreateChannel(e.ctx, "carol", chat.CreateChannelInput{ChannelID: "carols", Type: chat.ChannelTypeStandard})
	require.NoError(t, err)
	require.Equal(t, 1, out.Channels[0].MemberCount)
	out, err = e.svc.CreateChannel(e.ctx, e.admin, chat.CreateChannelInput{ChannelID: "admins", Type: chat.ChannelTypeStandard})
	require.NoError(t, err)
	require.Equal(t, 0, out.Channels[0].MemberCount)

	// Own messages: edit and delete; others': refused, and unchanged.
	text := map[string]any{"text": "edited"}
	_, err = e.svc.UpdateMessage(e.ctx, "alice", chat.UpdateMessageInput{MessageID: mine.MessageID, Data: &text})
	require.NoError(t, err)
	_, err = e.svc.UpdateMessage(e.ctx, "alice", chat.UpdateMessageInput{MessageID: theirs.MessageID, Data: &text})
	requireTokenCode(t, err, chat.CodePermissionDenied)
	requireTokenCode(t, e.svc.DeleteMessage(e.ctx, "alice", theirs.MessageID), chat.CodePermissionDenied)
	got, err := e.svc.GetMessage(e.ctx, e.admin, theirs.MessageID)
	require.NoError(t, err)
	require.False(t, got.Messages[0].IsDeleted)
	require.Equal(t, "theirs", got.Messages[0].Data["text"])

	// Channel/ManageMessages deletes others' messages, outside its channels too.
	_, err = e.svc.PutRoles(e.ctx, e.admin, []string{"janitor"}, []string{chat.PermManageMessages})
	require.NoError(t, err)
	roles := []string{"janitor"}
	_, err = e.svc.UpdateUser(e.ctx, e.admin, chat.UpdateUserInput{UserID: "jan", Roles: &roles})
	require.NoError(t, err)
	require.NoError(t, e.svc.DeleteMessage(e.ctx, "jan", theirs.MessageID))
	// but does not read there without Channel/GlobalAccess.
	_, err = e.svc.QueryMessages(e.ctx, "jan", chat.MessageQuery{ChannelID: "c"})
	requireTokenCode(t, err, chat.CodePermissionDenied)

	// Users post only where they are members; Channel/GlobalAccess posts anywhere.
	_, err = e.post("dave", "c", "let me in")
	requireTokenCode(t, err, chat.CodePermissionDenied)
	_, err = e.svc.PutRoles(e.ctx, e.admin, []string{"reader"}, []string{chat.PermGlobalAccess})
	require.NoError(t, err)
	roles = []string{"reader"}
	_, err = e.svc.UpdateUser(e.ctx, e.admin, chat.UpdateUserInput{UserID: "dave", Roles: &roles})
	require.NoError(t, err)
	e.mustPost("dave", "c", "global access")
	_, err = e.svc.MostReacted(e.ctx, "dave", chat.MostReactedQuery{ReactionName: "like"})
	require.NoError(t, err)
	_, err = e.svc.MostReacted(e.ctx, "alice", chat.MostReactedQuery{ReactionName: "like"})
	requireTokenCode(t, err, chat.CodePermissionDenied)

	// A user banned from the channel reads nothing there (400304).
	require.NoError(t, e.svc.BanUsers(e.ctx, e.admin, "c", []string{"bob"}))
	_, err = e.svc.QueryMessages(e.ctx, "bob", chat.MessageQuery{ChannelID: "c"})
	requireTokenCode(t, err, chat.CodeUserBanned)
	_, err = e.svc.QueryMessages(e.ctx, "bob", chat.MessageQuery{ChannelID: "absent"})
	requireTokenCode(t, err, chat.CodeNotFound)

	// Closed channels are listed for admins only.
	_, err = e.svc.QueryChannels(e.ctx, "alice", chat.ChannelQuery{IncludeClosed: true})
	requireTokenCode(t, err, chat.CodePermissionDenied)
	_, err = e.svc.QueryChannels(e.ctx, e.admin, chat.ChannelQuery{IncludeClosed: true})
	require.NoError(t, err)

	// Adding or removing only oneself needs no permission; others do.
	_, err = e.svc.AddUsers(e.ctx, "erin", "c", []string{"erin"})
	require.NoError(t, err)
	_, err = e.svc.AddUsers(e.ctx, "erin", "c", []string{"frank"})
	requireTokenCode(t, err, chat.CodePermissionDenied)
	requireTokenCode(t, e.svc.RemoveUsers(e.ctx, "erin", "c", []string{"alice"}), chat.CodePermissionDenied)
	require.NoError(t, e.svc.RemoveUsers(e.ctx, "erin", "c", []string{"erin"}))
	ch, err := e.svc.GetChannel(e.ctx, e.admin, "c")
	require.NoError(t, err)
	var members []string
	for _, cu := range ch.ChannelUsers {
		if cu.Membership == chat.MembershipMember {
			members = append(members, cu.UserID)
		}
	}
	require.ElementsMatch(t, []string{"alice"}, members, "refused calls changed no membership")

	// The acting user must be named.
	_, err = e.svc.GetChannel(e.ctx, "", "c")
	requireTokenCode(t, err, chat.CodePermissionDenied)
}

// Each Channel/ permission grants its operations and no other: a user
// holding only one may do what it names and is refused the rest.
func TestChannelPermissionsOneByOne(t *testing.T) {
	ops := []struct {
		perm string
		do   func(e *env, actor string) error
	}{
		{chat.PermManageChannel, func(e *env, a string) error {
			_, err := e.svc.RenameChannel(e.ctx, a, "c", "Renamed")
			return err
		}},
		{chat.PermManageUsers, func(e *env, a string) error {
			_, err := e.svc.AddUsers(e.ctx, a, "c", []string{"zed"})
			return err
		}},
		{chat.PermMuteChannel, func(e *env, a string) error { return e.svc.MuteChannel(e.ctx, a, "c", time.Minute) }},
		{chat.PermMuteUser, func(e *env, a string) error { return e.svc.MuteUsers(e.ctx, a, "c", []string{"bob"}, time.Minute) }},
		{chat.PermRateLimitChannel, func(e *env, a string) error {
			_, err := e.svc.SetChannelRateLimit(e.ctx, a, "c", time.Second)
			return err
		}},
		{chat.PermBanUser, func(e *env, a string) error { return e.svc.BanUsers(e.ctx, a, "c", []string{"bob"}) }},
		{chat.PermCloseChannel, func(e *env, a string) error { return e.svc.CloseChannel(e.ctx, a, "c") }},
		{chat.PermGlobalAccess, func(e *env, a string) error {
			_, err := e.svc.QueryMessages(e.ctx, a, chat.MessageQuery{ChannelID: "c"})
			return err
		}},
		{chat.PermManageMessages, func(e *env, a string) error {
			m := e.mustPost("bob", "c", "to delete")
			return e.svc.DeleteMessage(e.ctx, a, m.MessageID)
		}},
	}
	for _, held := range ops {
		t.Run(held.perm, func(t *testing.T) {
			for _, op := range ops {
				e := newEnv(t)
				e.channel("c", "bob")
				_, err := e.svc.PutRoles(e.ctx, e.admin, []string{"r"}, []string{held.perm})
				require.NoError(t, err)
				roles := []string{"r"}
				_, err = e.svc.UpdateUser(e.ctx, e.admin, chat.UpdateUserInput{UserID: "holder", Roles: &roles})
				require.NoError(t, err)
				err = op.do(e, "holder")
				if op.perm == held.perm {
					require.NoError(t, err, "%s grants its operation", held.perm)
				} else {
					requireTokenCode(t, err, chat.CodePermissionDenied)
				}
			}
		})
	}
}

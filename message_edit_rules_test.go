package chat_test

import (
	"testing"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/stretchr/testify/require"
)

// lastEventID reads the newest id of the event log.
func (e *env) lastEventID() int64 {
	e.t.Helper()
	var id int64
	require.NoError(e.t, e.store.View(e.ctx, func(tx chat.Tx) error {
		var err error
		id, err = tx.LastEventID(e.ctx)
		return err
	}))
	return id
}

// storedMessage reads a message as stored.
func (e *env) storedMessage(id string) *chat.Message {
	e.t.Helper()
	var m *chat.Message
	require.NoError(e.t, e.store.View(e.ctx, func(tx chat.Tx) error {
		var err error
		m, err = tx.GetMessage(e.ctx, id)
		return err
	}))
	return m
}

// TestEditObeysPostRules: editing a message is posting again. Each state
// that refuses a new message by the author refuses an edit of its old
// message with the same code, changing nothing and logging no event.
func TestEditObeysPostRules(t *testing.T) {
	edits := map[string]func(m *chat.Message) chat.UpdateMessageInput{
		"text": func(m *chat.Message) chat.UpdateMessageInput {
			return chat.UpdateMessageInput{MessageID: m.MessageID, Data: &map[string]any{"text": "edited"}}
		},
		"tags": func(m *chat.Message) chat.UpdateMessageInput {
			return chat.UpdateMessageInput{MessageID: m.MessageID, Tags: &[]string{"edited"}}
		},
	}
	cases := []struct {
		name  string
		setup func(e *env)
		text  string // the new text, when the state is about content
		want  chat.Code
		// edit is the code of the edit when it differs: a ban and a
		// close delete the messages they concern.
		edit chat.Code
	}{
		{"muted member", func(e *env) {
			require.NoError(e.t, e.svc.MuteUsers(e.ctx, e.admin, "c", []string{"alice"}, time.Hour))
		}, "", chat.CodeUserMuted, 0},
		{"muted channel", func(e *env) {
			require.NoError(e.t, e.svc.MuteChannel(e.ctx, e.admin, "c", time.Hour))
		}, "", chat.CodeChannelMuted, 0},
		{"banned in the channel", func(e *env) {
			require.NoError(e.t, e.svc.BanUsers(e.ctx, e.admin, "c", []string{"alice"}))
		}, "", chat.CodeUserBanned, chat.CodeNotFound},
		{"closed channel", func(e *env) {
			require.NoError(e.t, e.svc.CloseChannel(e.ctx, e.admin, "c"))
		}, "", chat.CodePermissionDenied, chat.CodeNotFound},
		{"globally banned", func(e *env) {
			require.NoError(e.t, e.svc.GlobalBan(e.ctx, e.admin, "alice", false))
		}, "", chat.CodeGlobalBanned, 0},
		{"no longer a member", func(e *env) {
			require.NoError(e.t, e.svc.RemoveUsers(e.ctx, e.admin, "c", []string{"alice"}))
		}, "", chat.CodePermissionDenied, 0},
		{"blacklist", func(e *env) {
			_, err := e.svc.AddRules(e.ctx, e.admin, chat.Blacklist, []string{"darn"}, true)
			require.NoError(e.t, err)
		}, "darn it", chat.CodeBlacklisted, 0},
		{"whitelist", func(e *env) {
			_, err := e.svc.AddRules(e.ctx, e.admin, chat.Whitelist, []string{"example.com"}, false)
			require.NoError(e.t, err)
		}, "see evil.io", chat.CodeLinkNotAllowed, 0},
	}
	for _, tc := range cases {
		for kind, edit := range edits {
			if tc.text != "" && kind != "text" {
				continue
			}
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				e := newEnv(t)
				e.channel("c", "alice", "bob")
				m := e.mustPost("alice", "c", "hello")
				tc.setup(e)
				in := edit(m)
				if tc.text != "" {
					in.Data = &map[string]any{"text": tc.text}
				}
				// A new message is refused with the same code.
				_, err := e.post("alice", "c", "another")
				if tc.text != "" {
					_, err = e.post("alice", "c", tc.text)
				}
				requireCode(t, err, tc.want)

				before, last := e.storedMessage(m.MessageID), e.lastEventID()
				_, err = e.svc.UpdateMessage(e.ctx, "alice", in)
				want := tc.want
				if tc.edit != 0 {
					want = tc.edit
				}
				requireCode(t, err, want)
				require.Equal(t, before, e.storedMessage(m.MessageID), "a refused edit changes nothing")
				require.Equal(t, last, e.lastEventID(), "a refused edit logs no event")
			})
		}
	}
}

// TestEditExemptions: the exemptions of new messages hold for edits (a
// User/ExemptFromMute role, admins), and slow mode does not count edits.
func TestEditExemptions(t *testing.T) {
	e := newEnv(t)
	e.channel("c", "alice", "bob", "vip")
	_, err := e.svc.PutRoles(e.ctx, e.admin, []string{"vip"}, []string{chat.PermExemptFromMute})
	require.NoError(t, err)
	roles := []string{"vip"}
	_, err = e.svc.UpdateUser(e.ctx, e.admin, chat.UpdateUserInput{UserID: "vip", Roles: &roles})
	require.NoError(t, err)

	// Slow mode: alice posts, then edits at once, twice; a second post
	// in the window is refused.
	_, err = e.svc.SetChannelRateLimit(e.ctx, e.admin, "c", time.Minute)
	require.NoError(t, err)
	m := e.mustPost("alice", "c", "helo")
	for _, text := range []string{"hello", "hello!"} {
		_, err = e.svc.UpdateMessage(e.ctx, "alice", chat.UpdateMessageInput{MessageID: m.MessageID, Data: &map[string]any{"text": text}})
		require.NoError(t, err, "slow mode does not apply to edits")
	}
	_, err = e.post("alice", "c", "again")
	requireCode(t, err, chat.CodeRateLimited)
	_, err = e.svc.SetChannelRateLimit(e.ctx, e.admin, "c", 0)
	require.NoError(t, err)

	// A muted channel: the exempt role and admins still edit.
	v := e.mustPost("vip", "c", "from vip")
	require.NoError(t, e.svc.MuteChannel(e.ctx, e.admin, "c", time.Hour))
	_, err = e.svc.UpdateMessage(e.ctx, "vip", chat.UpdateMessageInput{MessageID: v.MessageID, Data: &map[string]any{"text": "still vip"}})
	require.NoError(t, err)
	_, err = e.svc.UpdateMessage(e.ctx, e.admin, chat.UpdateMessageInput{MessageID: m.MessageID, Data: &map[string]any{"text": "moderated"}})
	require.NoError(t, err)
	_, err = e.svc.UpdateMessage(e.ctx, "alice", chat.UpdateMessageInput{MessageID: m.MessageID, Data: &map[string]any{"text": "mine"}})
	requireCode(t, err, chat.CodeChannelMuted)

	// An image caption is an edit like any other.
	img, err := e.svc.CreateImageMessage(e.ctx, "bob", chat.CreateImageMessageInput{ChannelID: "c", Caption: "look", FileName: "p.png", MimeType: "image/png", Width: 1, Height: 1,
		Renditions: []chat.ImageRendition{{Name: "small", ContentType: "image/png", Width: 1, Height: 1, Data: []byte("x")}}})
	requireCode(t, err, chat.CodeChannelMuted)
	require.Nil(t, img)
	require.NoError(t, e.svc.MuteChannel(e.ctx, e.admin, "c", 0))
	img, err = e.svc.CreateImageMessage(e.ctx, "bob", chat.CreateImageMessageInput{ChannelID: "c", Caption: "look", FileName: "p.png", MimeType: "image/png", Width: 1, Height: 1,
		Renditions: []chat.ImageRendition{{Name: "small", ContentType: "image/png", Width: 1, Height: 1, Data: []byte("x")}}})
	require.NoError(t, err)
	require.NoError(t, e.svc.MuteUsers(e.ctx, e.admin, "c", []string{"bob"}, time.Hour))
	_, err = e.svc.UpdateMessage(e.ctx, "bob", chat.UpdateMessageInput{MessageID: img.Messages[0].MessageID, Caption: ptr("changed")})
	requireCode(t, err, chat.CodeUserMuted)
}

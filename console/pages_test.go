package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

func TestRolesAndUserRoles(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)
	ctx := context.Background()
	b := p.browser("10.5.0.1")
	token := b.signedIn()

	res, _ := b.post("/admin/roles", url.Values{"csrf": {token}, "roleId": {"moderator"},
		"permissions": {"Channel/BanUser\r\n\r\n  User/ExempFromBlacklist  \n"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	_, page := b.get("/admin/roles")
	require.Contains(t, page, "Role moderator saved.")
	rl, err := p.svc.QueryRoles(ctx, p.root.UserID, "moderator")
	require.NoError(t, err)
	require.Equal(t, []string{"Channel/BanUser", "User/ExempFromBlacklist"}, rl.Roles[0].Permissions)

	// Give root's own user the role: global-admin stays, whatever the form says.
	res, _ = b.post("/admin/users/root/roles", url.Values{"csrf": {token}, "roles": {"moderator", chat.RoleGlobalAdmin}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	ul, err := p.svc.GetUser(ctx, p.root.UserID, "root")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"moderator", chat.RoleGlobalAdmin}, ul.Users[0].Roles)
	res, _ = b.post("/admin/users/root/roles", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	ul, err = p.svc.GetUser(ctx, p.root.UserID, "root")
	require.NoError(t, err)
	require.Equal(t, []string{chat.RoleGlobalAdmin}, ul.Users[0].Roles, "unticking every role keeps global-admin")
	// global-admin cannot be given through the form (it is left out).
	_, _ = b.post("/admin/users/carol/profile", url.Values{"csrf": {token}, "displayName": {"Carol"}})
	_, _ = b.post("/admin/users/carol/roles", url.Values{"csrf": {token}, "roles": {chat.RoleGlobalAdmin}})
	ul, err = p.svc.GetUser(ctx, p.root.UserID, "carol")
	require.NoError(t, err)
	require.Empty(t, ul.Users[0].Roles)
	require.Equal(t, "Carol", ul.Users[0].DisplayName)
	// An unknown role: the API's message.
	_, _ = b.post("/admin/users/carol/roles", url.Values{"csrf": {token}, "roles": {"nope"}})
	_, page = b.get("/admin/users/carol")
	require.Contains(t, page, "flash-error")
	require.Contains(t, page, "nope")
}

func TestUsersSearchAndFlags(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)
	ctx := context.Background()
	for _, id := range []string{"zebra-keeper", "zed", "amy"} {
		name := map[string]string{"zebra-keeper": "The Zebra Keeper", "zed": "Zed", "amy": "Amy"}[id]
		_, err := p.svc.UpdateUser(ctx, p.root.UserID, chat.UpdateUserInput{UserID: id, DisplayName: &name})
		require.NoError(t, err)
	}
	_, err := p.svc.FlagUser(ctx, p.root.UserID, "amy")
	require.NoError(t, err)
	b := p.browser("10.5.0.2")
	token := b.signedIn()

	_, page := b.get("/admin/users?search=zeb")
	require.Contains(t, page, `data-user-id="zebra-keeper"`)
	require.NotContains(t, page, `data-user-id="amy"`)
	_, page = b.get("/admin/users?filter=flagged")
	require.Contains(t, page, `data-user-id="amy"`)
	require.NotContains(t, page, `data-user-id="zed"`)
	res, _ := b.get("/admin/users?open=amy")
	require.Equal(t, "/admin/users/amy", res.Header.Get("Location"))

	res, _ = b.post("/admin/users/amy/unflag", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	_, page = b.get("/admin/users/amy")
	require.Contains(t, page, "flags are cleared.")
	require.Contains(t, page, `<span id="user-flags">0 flag(s)</span>`)

	// A global ban with its messages deleted, then unbanned.
	_, err = p.svc.CreateChannel(ctx, p.root.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"amy"}})
	require.NoError(t, err)
	tok, err := p.svc.IssueUserToken(ctx, "", "amy", 0)
	require.NoError(t, err)
	_ = tok
	ml, err := p.svc.CreateMessage(ctx, "amy", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: map[string]any{"text": "hello"}})
	require.NoError(t, err)
	res, _ = b.post("/admin/users/amy/ban", url.Values{"csrf": {token}, "deleteMessages": {"yes"}, "confirm": {"yes"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	_, page = b.get("/admin/users/amy")
	require.Contains(t, page, "amy is banned everywhere and their messages are deleted.")
	got, err := p.svc.GetMessage(ctx, p.root.UserID, ml.Messages[0].MessageID)
	require.NoError(t, err)
	require.True(t, got.Messages[0].IsDeleted)
	res, _ = b.post("/admin/users/amy/unban", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	ul, err := p.svc.GetUser(ctx, p.root.UserID, "amy")
	require.NoError(t, err)
	require.False(t, ul.Users[0].IsGlobalBan)
}

func TestChannelModeration(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)
	ctx := context.Background()
	b := p.browser("10.5.0.3")
	token := b.signedIn()
	post := func(path string, form url.Values) string {
		t.Helper()
		form.Set("csrf", token)
		res, _ := b.post(path, form)
		require.Equal(t, http.StatusSeeOther, res.StatusCode, path)
		_, page := b.get(res.Header.Get("Location"))
		return page
	}
	page := post("/admin/channels", url.Values{"channelId": {"room"}, "userIds": {"ann,ben"}, "tags": {"a, b"}, "metadata": {`{"topic":"x"}`}})
	require.Contains(t, page, "Channel room created.")
	page = post("/admin/channels", url.Values{"channelId": {"bad"}, "metadata": {`[1]`}})
	require.Contains(t, page, "metadata must be a JSON object")

	page = post("/admin/channels/room/mute", url.Values{"period": {"-1"}})
	require.Contains(t, page, "Channel muted.")
	require.Contains(t, page, "muted forever")
	page = post("/admin/channels/room/mute", url.Values{"period": {"0"}})
	require.Contains(t, page, "Channel unmuted.")
	page = post("/admin/channels/room/mute", url.Values{"period": {"-5"}})
	require.Contains(t, page, "pick a mute period")
	page = post("/admin/channels/room/slowmode", url.Values{"seconds": {"30"}})
	require.Contains(t, page, "Slow mode: one message per 30 s per member.")
	cl, err := p.svc.GetChannel(ctx, p.root.UserID, "room")
	require.NoError(t, err)
	require.Equal(t, 30000, cl.Channels[0].RateLimitWindow)
	page = post("/admin/channels/room/rename", url.Values{"displayName": {"Big room"}})
	require.Contains(t, page, "<h1>Big room</h1>")
	page = post("/admin/channels/room/members/mute", url.Values{"userId": {"ann"}, "period": {"600000"}})
	require.Contains(t, page, "ann muted.")
	page = post("/admin/channels/room/members/mute", url.Values{"userId": {"zoe"}, "period": {"600000"}})
	require.Contains(t, page, "flash-error", "muting a non-member is refused with the API's message")
	page = post("/admin/channels/room/members/remove", url.Values{"userId": {"ben"}})
	require.Contains(t, page, "ben removed from the channel.")
	page = post("/admin/channels/room/members", url.Values{"userIds": {"cat"}})
	require.Contains(t, page, "Members added.")
	require.Contains(t, page, `data-user-id="cat"`)
	page = post("/admin/channels/room/members/ban", url.Values{"userId": {"cat"}})
	require.Contains(t, page, "cat banned from the channel")
	page = post("/admin/channels/room/members", url.Values{"userIds": {"cat"}})
	require.Contains(t, page, "flash-error", "a banned user cannot be added")
	page = post("/admin/channels/room/members/unban", url.Values{"userId": {"cat"}})
	require.Contains(t, page, "cat unbanned.")

	page = post("/admin/channels/room/join", url.Values{})
	require.Contains(t, page, "You joined the channel as root.")
	page = post("/admin/channels/room/post", url.Values{"text": {"first"}})
	require.Contains(t, page, "Message sent as root.")
	ml, err := p.svc.QueryMessages(ctx, p.root.UserID, chat.MessageQuery{ChannelID: "room"})
	require.NoError(t, err)
	mid := ml.Messages[0].MessageID
	page = post("/admin/channels/room/messages/"+mid+"/flag", url.Values{})
	require.Contains(t, page, "Message flagged.")
	require.Contains(t, page, "1 flag(s)")
	page = post("/admin/channels/room/messages/"+mid+"/unflag", url.Values{})
	require.Contains(t, page, "flags are cleared.")
	_, frag := b.get("/admin/channels/room/messages")
	require.Contains(t, frag, `data-message-id="`+mid+`"`)
	require.NotContains(t, frag, "<html", "the live part alone")

	// Most reacted.
	_, err = p.svc.AddReaction(ctx, p.root.UserID, mid, chat.ReferenceTypeMessage, "like")
	require.NoError(t, err)
	_, page = b.get("/admin/reactions?reactionName=like&channelId=room")
	require.Contains(t, page, "first")
	require.Contains(t, page, "like 1")

	page = post("/admin/channels/room/close", url.Values{"confirm": {"yes"}})
	require.Contains(t, page, "Channel closed")
	cl, err = p.svc.GetChannel(ctx, p.root.UserID, "room")
	require.NoError(t, err)
	require.True(t, cl.Channels[0].IsClosed)
	_, page = b.get("/admin/channels?closed=yes")
	require.Contains(t, page, "closed")
	_, page = b.get("/admin/channels?tags=a")
	require.NotContains(t, page, `data-channel-id="room"`, "closed channels only when asked")
}

func TestWebhooksAndAdmins(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)
	ctx := context.Background()
	b := p.browser("10.5.0.4")
	token := b.signedIn()
	secretRE := regexp.MustCompile(`id="secret-value" class="copy" value="([^"]+)"`)

	res, page := b.post("/admin/webhooks", url.Values{"csrf": {token}, "url": {"https://hooks.example.com/in"}, "events": {"message.didCreate, channel.didCreate"}})
	require.Equal(t, http.StatusOK, res.StatusCode)
	first := secretRE.FindStringSubmatch(page)
	require.NotNil(t, first, page)
	wl, err := p.svc.ListWebhooks(ctx, p.root.UserID)
	require.NoError(t, err)
	require.Len(t, wl.Webhooks, 1)
	w := wl.Webhooks[0]
	require.Equal(t, []string{"message.didCreate", "channel.didCreate"}, w.Events)
	_, page = b.get("/admin/webhooks")
	require.NotContains(t, page, first[1], "the secret is shown once")

	res, page = b.post("/admin/webhooks/"+w.WebhookID+"/secret", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusOK, res.StatusCode)
	second := secretRE.FindStringSubmatch(page)
	require.NotNil(t, second)
	require.NotEqual(t, first[1], second[1])

	res, _ = b.post("/admin/webhooks", url.Values{"csrf": {token}, "url": {"ftp://example.com"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	_, page = b.get("/admin/webhooks")
	require.Contains(t, page, "flash-error")

	// A delivery, its log and a redelivery.
	_, err = p.svc.CreateChannel(ctx, p.root.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard})
	require.NoError(t, err)
	_, page = b.get("/admin/webhooks/" + w.WebhookID)
	require.Contains(t, page, "channel.didCreate")
	m := regexp.MustCompile(`data-request-id="([^"]+)"`).FindStringSubmatch(page)
	require.NotNil(t, m)
	res, _ = b.post("/admin/webhooks/"+w.WebhookID+"/deliveries/"+m[1]+"/redeliver", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	_, page = b.get("/admin/webhooks/" + w.WebhookID)
	require.Contains(t, page, "Delivery queued again.")

	res, _ = b.post("/admin/webhooks/"+w.WebhookID+"/delete", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	wl, err = p.svc.ListWebhooks(ctx, p.root.UserID)
	require.NoError(t, err)
	require.Len(t, wl.Webhooks, 1, "not deleted without confirmation")
	_, _ = b.post("/admin/webhooks/"+w.WebhookID+"/delete", url.Values{"csrf": {token}, "confirm": {"yes"}})
	wl, err = p.svc.ListWebhooks(ctx, p.root.UserID)
	require.NoError(t, err)
	require.Empty(t, wl.Webhooks)

	// Admins: mismatched passwords, revoke with confirmation, rotate.
	res, _ = b.post("/admin/admins", url.Values{"csrf": {token}, "name": {"x"}, "password": {"one password 1"}, "password2": {"two password 2"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	_, page = b.get("/admin/admins")
	require.Contains(t, page, "The two passwords differ")
	_, _, err = p.svc.CreateAdminWithPassword(ctx, "", "helper-admin", "", "helper password")
	require.NoError(t, err)
	other := p.browser("10.5.0.5")
	res, _ = other.signIn("helper-admin", "helper password")
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	_, _ = b.post("/admin/admins/helper-admin/revoke", url.Values{"csrf": {token}})
	as, err := p.svc.ListAdmins(ctx)
	require.NoError(t, err)
	for _, a := range as {
		require.Nil(t, a.RevokedAt, "not revoked without confirmation")
	}
	res, _ = b.post("/admin/admins/helper-admin/revoke", url.Values{"csrf": {token}, "confirm": {"yes"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	_, page = b.get("/admin/admins")
	require.Contains(t, page, "Admin helper-admin is revoked")
	res, _ = other.get("/admin/")
	require.Equal(t, http.StatusSeeOther, res.StatusCode, "the revoked admin's session ended")
	res, page = b.post("/admin/admins/helper-admin/rotate", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusOK, res.StatusCode)
	tm := regexp.MustCompile(`id="token-value" class="copy" value="([^"]+)"`).FindStringSubmatch(page)
	require.NotNil(t, tm)
	_, err = p.svc.Authenticate(ctx, tm[1])
	require.NoError(t, err, "rotation reactivates with a new token")

	// Changing one's own password ends the session.
	res, _ = b.post("/admin/admins/root/password", url.Values{"csrf": {token}, "password": {"a brand new password"}, "password2": {"a brand new password"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/admin/signin", res.Header.Get("Location"))
	res, _ = b.get("/admin/")
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	res, _ = b.signIn("root", "a brand new password")
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.True(t, strings.HasSuffix(res.Header.Get("Location"), "/admin/"))
}

func TestIDsWithSlashesAndSpaces(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)
	ctx := context.Background()
	const id = "team/a b?c#d"
	_, err := p.svc.CreateChannel(ctx, p.root.UserID, chat.CreateChannelInput{ChannelID: id, Type: chat.ChannelTypeStandard, UserIDs: []string{"x/y"}})
	require.NoError(t, err)
	b := p.browser("10.6.0.1")
	token := b.signedIn()
	_, page := b.get("/admin/channels")
	href := regexp.MustCompile(`href="(/admin/channels/team[^"]*)"`).FindStringSubmatch(page)
	require.NotNil(t, href, page)
	require.Equal(t, "/admin/channels/"+url.PathEscape(id), href[1])
	res, page := b.get(href[1])
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, page, `<code id="channel-id">team/a b?c#d</code>`)
	res, _ = b.post(href[1]+"/members/remove", url.Values{"csrf": {token}, "userId": {"x/y"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, href[1], res.Header.Get("Location"))
	cl, err := p.svc.GetChannel(ctx, p.root.UserID, id)
	require.NoError(t, err)
	require.Zero(t, cl.Channels[0].MemberCount)
	res, page = b.get("/admin/users/" + url.PathEscape("x/y"))
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, page, `<code id="user-id">x/y</code>`)
}

func TestMessageComments(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)
	ctx := context.Background()
	_, err := p.svc.CreateChannel(ctx, p.root.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard})
	require.NoError(t, err)
	parent, err := p.svc.CreateMessage(ctx, p.root.UserID, chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: map[string]any{"text": "the post"}})
	require.NoError(t, err)
	pid := parent.Messages[0].MessageID
	_, err = p.svc.CreateMessage(ctx, p.root.UserID, chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, ParentID: pid, Data: map[string]any{"text": "a comment"}})
	require.NoError(t, err)
	b := p.browser("10.7.0.1")
	b.signedIn()
	_, page := b.get("/admin/channels/c")
	require.Contains(t, page, `href="/admin/channels/c?parent=`+pid+`" class="comments">1 comment(s)</a>`)
	_, page = b.get("/admin/channels/c?parent=" + pid)
	require.Contains(t, page, "a comment")
	require.NotContains(t, page, ">the post<")
	_, frag := b.get("/admin/channels/c/messages?parent=" + pid)
	require.Contains(t, frag, "a comment", "the live refresh keeps to the comments")
	require.NotContains(t, frag, ">the post<")
}

func TestChannelSearch(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)
	ctx := context.Background()
	for i, c := range []chat.CreateChannelInput{
		{ChannelID: "zoo", DisplayName: "The Zebra Keepers"},
		{ChannelID: "night-shift", DisplayName: "Owls <b>"},
		{ChannelID: "team-1", DisplayName: "Team"},
		{ChannelID: "team-2", DisplayName: "Team"},
		{ChannelID: "team-3", DisplayName: "Team"},
	} {
		c.Type = chat.ChannelTypeStandard
		_, err := p.svc.CreateChannel(ctx, p.root.UserID, c)
		require.NoError(t, err, i)
	}
	b := p.browser("10.5.0.9")
	b.signedIn()
	rowRE := regexp.MustCompile(`<tr data-channel-id="([^"]+)"`)
	rows := func(page string) []string {
		var ids []string
		for _, m := range rowRE.FindAllStringSubmatch(page, -1) {
			ids = append(ids, m[1])
		}
		return ids
	}
	_, page := b.get("/admin/channels?search=KEEP")
	require.Equal(t, []string{"zoo"}, rows(page), "a later word of the name")
	require.Contains(t, page, `id="f-search" name="search" value="KEEP"`)
	_, page = b.get("/admin/channels?search=night-")
	require.Equal(t, []string{"night-shift"}, rows(page), "a prefix of the id")
	_, page = b.get("/admin/channels?search=eep")
	require.Nil(t, rows(page))
	require.Contains(t, page, "No channel matches.")
	_, page = b.get("/admin/channels?search=team")
	require.ElementsMatch(t, []string{"team-1", "team-2", "team-3"}, rows(page))
	_, page = b.get("/admin/channels?search=owl")
	require.Equal(t, []string{"night-shift"}, rows(page))
	require.Contains(t, page, "Owls &lt;b&gt;")
	res, page := b.get("/admin/channels?search=" + url.QueryEscape("a\x00b"))
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.Contains(t, page, "search")
}

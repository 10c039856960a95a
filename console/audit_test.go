package console_test

import (
	"context"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/console"
	"github.com/chatengine/chat/store/memory"
)

// auditOf returns the entries with the action, newest first.
func (p *panel) auditOf(action string) []chat.AuditEntry {
	p.t.Helper()
	al, err := p.svc.QueryAudit(context.Background(), p.root.UserID, chat.AuditQuery{Action: action, Limit: 100})
	require.NoError(p.t, err)
	return al.Audit
}

func TestPanelActionsAreAuditedAsTheAdmin(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)
	b := p.browser("10.6.0.1")
	token := b.signedIn()
	post := func(path string, form url.Values) {
		t.Helper()
		form.Set("csrf", token)
		res, body := b.post(path, form)
		require.Equal(t, http.StatusSeeOther, res.StatusCode, "%s: %s", path, body)
	}
	post("/admin/channels", url.Values{"channelId": {"room"}, "userIds": {"bob"}})
	post("/admin/channels/room/members/ban", url.Values{"userId": {"bob"}})
	post("/admin/rules/blacklist/add", url.Values{"patterns": {"darn"}})
	post("/admin/users/bob/ban", url.Values{})
	res, _ := b.post("/admin/admins", url.Values{"csrf": {token}, "name": {"second"}, "password": {"second's password"}, "password2": {"second's password"}})
	require.Equal(t, http.StatusOK, res.StatusCode)
	res, _ = b.post("/admin/admins/second/rotate", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusOK, res.StatusCode)
	post("/admin/admins/second/revoke", url.Values{"confirm": {"yes"}})

	for _, action := range []string{chat.AuditChannelBanUsers, chat.AuditBlacklistAdd, chat.AuditUserGlobalBan,
		chat.AuditAdminCreate, chat.AuditAdminRotate, chat.AuditAdminRevoke} {
		es := p.auditOf(action)
		require.NotEmpty(t, es, action)
		require.Equal(t, p.root.UserID, es[0].ActorID, "%s names the signed-in admin's user", action)
	}
	// root itself was created by a Go call without an actor: the server's
	// operator, which the page says in words.
	es := p.auditOf(chat.AuditAdminCreate)
	require.Len(t, es, 2)
	require.Equal(t, "second", es[0].TargetID)
	require.Equal(t, "root", es[1].TargetID)
	require.Empty(t, es[1].ActorID)
	_, page := b.get("/admin/audit?action=admin.create")
	require.Contains(t, page, "the server's operator")
	require.Contains(t, page, `<a href="/admin/users/root">root</a>`)
}

// auditRows returns the data-action values of the audit page's rows, in order.
func auditRows(page string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<tr data-audit-id="[^"]*" data-action="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestAuditPage(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)
	ctx := context.Background()
	b := p.browser("10.6.0.2")
	token := b.signedIn()
	const evil = `<script>alert(1)</script>`
	evilName := evil + `"><img src=x onerror=alert(2)>`

	// Entries through the panel: a rule whose pattern is a script, a
	// user whose name is one, and a ban in a channel.
	res, _ := b.post("/admin/rules/blacklist/add", url.Values{"csrf": {token}, "patterns": {evil}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	res, _ = b.post("/admin/users/mallory/profile", url.Values{"csrf": {token}, "displayName": {evilName}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	_, err := p.svc.CreateChannel(ctx, p.root.UserID, chat.CreateChannelInput{ChannelID: "room", Type: chat.ChannelTypeStandard, UserIDs: []string{"mallory"}})
	require.NoError(t, err)
	res, _ = b.post("/admin/channels/room/members/ban", url.Values{"csrf": {token}, "userId": {"mallory"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)

	res, page := b.get("/admin/audit")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, page, `<a href="/admin/audit" aria-current="page">Audit log</a>`, "in the navigation")
	require.Equal(t, []string{chat.AuditChannelBanUsers, chat.AuditUserUpdate, chat.AuditBlacklistAdd, chat.AuditAdminCreate}, auditRows(page), "newest first")
	require.NotContains(t, page, "<script>alert")
	require.NotContains(t, page, "<img src=x")
	require.Contains(t, page, html.EscapeString(evil), "the rule's pattern shows as text")
	require.Contains(t, page, "<br>"+html.EscapeString(evilName)+"</td>", "the target user's name shows as text")
	require.Contains(t, page, `<a href="/admin/users/root">root</a>`, "the actor links to its user page")
	require.Contains(t, page, `<a href="/admin/users/mallory"><code>mallory</code></a>`, "a user target links to its page")
	require.Contains(t, page, `<a href="/admin/channels/room"><code>room</code></a>`, "the channel links to its page")
	require.Contains(t, page, "<dt>isMatchExactWord</dt><dd>no</dd>", "details are readable")
	for _, a := range chat.AuditActions {
		require.Contains(t, page, `<option value="`+a+`"`, "the action select offers %s", a)
	}
	require.Equal(t, 1, strings.Count(page, "<script"), "only the panel's own script")

	// Filters.
	_, page = b.get("/admin/audit?action=" + chat.AuditBlacklistAdd)
	require.Equal(t, []string{chat.AuditBlacklistAdd}, auditRows(page))
	require.Contains(t, page, `<option value="blacklist.add" selected>`)
	_, page = b.get("/admin/audit?targetId=mallory")
	require.Equal(t, []string{chat.AuditChannelBanUsers, chat.AuditUserUpdate}, auditRows(page))
	_, page = b.get("/admin/audit?channelId=room&actorId=root")
	require.Equal(t, []string{chat.AuditChannelBanUsers}, auditRows(page))
	_, page = b.get("/admin/audit?actorId=nobody")
	require.Empty(t, auditRows(page))
	require.Contains(t, page, "No entry matches.")

	// Bad input: a plain-words error, nothing listed.
	res, page = b.get("/admin/audit?action=" + url.QueryEscape(evil))
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.Contains(t, page, "unknown audit action")
	require.NotContains(t, page, "<script>alert")
	require.Empty(t, auditRows(page))
	res, page = b.get("/admin/audit?token=forged")
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.Contains(t, page, "flash-error")

	// Keyset paging: 30 more entries make two pages of 25 and one more.
	pats := make([]string, 30)
	for i := range pats {
		pats[i] = "word" + strconv.Itoa(i)
	}
	_, err = p.svc.AddRules(ctx, p.root.UserID, chat.Blacklist, pats, false)
	require.NoError(t, err)
	next := regexp.MustCompile(`<a href="([^"]+)" rel="next">`)
	prev := regexp.MustCompile(`<a href="([^"]+)" rel="prev">`)
	_, page = b.get("/admin/audit?action=blacklist.add")
	first := auditRows(page)
	require.Len(t, first, 25)
	require.Nil(t, prev.FindStringSubmatch(page), "the newest page has no newer one")
	m := next.FindStringSubmatch(page)
	require.NotNil(t, m)
	require.Contains(t, m[1], "action=blacklist.add", "paging keeps the filter")
	_, page2 := b.get(html.UnescapeString(m[1]))
	require.Len(t, auditRows(page2), 6, "30 + 1 entries in all")
	require.Nil(t, next.FindStringSubmatch(page2), "the oldest page has no older one")
	require.Contains(t, page2, html.EscapeString(evil), "the oldest entry is the first rule")
	m = prev.FindStringSubmatch(page2)
	require.NotNil(t, m)
	_, back := b.get(html.UnescapeString(m[1]))
	require.Equal(t, first, auditRows(back))
	require.Equal(t, regexp.MustCompile(`data-audit-id="[^"]*"`).FindAllString(page, -1),
		regexp.MustCompile(`data-audit-id="[^"]*"`).FindAllString(back, -1), "the same entries")
}

func TestDryRunBox(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)
	ctx := context.Background()
	b := p.browser("10.6.0.3")
	token := b.signedIn()
	actor := p.root.UserID
	_, err := p.svc.AddRules(ctx, actor, chat.Blacklist, []string{"darn"}, true)
	require.NoError(t, err)
	_, err = p.svc.AddRules(ctx, actor, chat.Whitelist, []string{"example.com"}, false)
	require.NoError(t, err)
	_, err = p.svc.CreateChannel(ctx, actor, chat.CreateChannelInput{ChannelID: "room", Type: chat.ChannelTypeStandard, UserIDs: []string{"ann", "ben"}})
	require.NoError(t, err)
	require.NoError(t, p.svc.BanUsers(ctx, actor, "room", []string{"ben"}))
	before := len(p.auditOf(""))
	verdict := regexp.MustCompile(`<p id="rule-verdict"[^>]*>([^<]*)</p>`)
	test := func(form url.Values) (int, string, string) {
		t.Helper()
		form.Set("csrf", token)
		res, page := b.post("/admin/rules/test", form)
		m := verdict.FindStringSubmatch(page)
		require.NotNil(t, m, page)
		return res.StatusCode, html.UnescapeString(m[1]), page
	}

	// The CSRF token is required.
	for _, hdr := range []map[string]string{nil, {"Origin": "https://evil.example"}} {
		res, page := b.do("POST", "/admin/rules/test", url.Values{"userId": {"ann"}, "text": {"hello"}}, hdr)
		require.Equal(t, http.StatusForbidden, res.StatusCode)
		require.NotContains(t, page, "rule-verdict")
	}

	code, v, page := test(url.Values{"userId": {"ann"}, "text": {"oh DARN it"}})
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, `Refused: text contains a blacklisted word (rule "darn").`, v)
	require.Contains(t, page, `<code>blacklist rule darn</code>`, "the rule is named")
	_, v, page = test(url.Values{"userId": {"ann"}, "text": {"see https://other.example/x"}})
	require.Equal(t, `Refused: link not allowed by the whitelist: "https://other.example/x".`, v)
	require.Contains(t, page, "link not allowed by the whitelist: https://other.example/x")
	_, v, _ = test(url.Values{"userId": {"ann"}, "channelId": {"room"}, "text": {"hello"}})
	require.Equal(t, "Allowed: ann could post this message in room.", v)
	_, v, _ = test(url.Values{"userId": {"ann"}, "text": {"hello"}})
	require.Contains(t, v, "Allowed: ann could post this message in any channel")
	_, v, _ = test(url.Values{"userId": {"ben"}, "channelId": {"room"}, "text": {"hello"}})
	require.True(t, strings.HasPrefix(v, "Refused: "), v)
	require.Contains(t, v, "banned")
	_, v, _ = test(url.Values{"userId": {"zed"}, "channelId": {"room"}, "text": {"hello"}})
	require.True(t, strings.HasPrefix(v, "Refused: "), "not a member: %s", v)

	// Without a user id: tested as a plain member without roles, and
	// the page says so.
	code, v, page = test(url.Values{"text": {"hello"}})
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "Allowed: a plain member without roles could post this message in any channel, as far as the blacklist and the whitelist go.", v)
	require.Contains(t, page, "empty tests as a plain member without roles")
	_, v, _ = test(url.Values{"channelId": {"room"}, "text": {"hello"}})
	require.Equal(t, "Allowed: a plain member without roles could post this message in room.", v)
	_, v, _ = test(url.Values{"text": {"oh darn"}})
	require.Equal(t, `Refused: text contains a blacklisted word (rule "darn"). (Tested as a plain member without roles.)`, v)
	require.NoError(t, p.svc.MuteChannel(ctx, actor, "room", time.Hour))
	_, v, _ = test(url.Values{"channelId": {"room"}, "text": {"hello"}})
	require.Equal(t, `Refused: channel "room" is muted. (Tested as a plain member without roles.)`, v)
	require.NoError(t, p.svc.MuteChannel(ctx, actor, "room", chat.Unmute))

	// Bad input: plain words, the form keeps what was typed (escaped).
	code, v, _ = test(url.Values{"userId": {"ann"}})
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, v, "Enter the text")
	code, v, page = test(url.Values{"userId": {"ann"}, "text": {"<script>alert(1)</script>"}})
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, v, "Allowed")
	require.NotContains(t, page, "<script>alert")
	require.Contains(t, page, "&lt;script&gt;alert(1)&lt;/script&gt;</textarea>")
	code, v, _ = test(url.Values{"userId": {"a\x01b"}, "text": {"hello"}})
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, v, "The test could not run: ")

	// Nothing changed: no message, no audit entry.
	ml, err := p.svc.QueryMessages(ctx, actor, chat.MessageQuery{ChannelID: "room", Last: 10})
	require.NoError(t, err)
	require.Empty(t, ml.Messages)
	require.Len(t, p.auditOf(""), before+2, "only the test's own mute and unmute")
}

func TestPurgeButton(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)
	ctx := context.Background()
	b := p.browser("10.6.0.4")
	token := b.signedIn()
	actor := p.root.UserID
	for _, c := range []string{"room", "other"} {
		_, err := p.svc.CreateChannel(ctx, actor, chat.CreateChannelInput{ChannelID: c, Type: chat.ChannelTypeStandard, UserIDs: []string{"ann", "ben"}})
		require.NoError(t, err)
	}
	postAs := func(user, channel, text string) {
		_, err := p.svc.CreateMessage(ctx, user, chat.CreateMessageInput{ChannelID: channel, Type: chat.MessageTypeText, Data: map[string]any{"text": text}})
		require.NoError(t, err)
	}
	for i := range 3 {
		postAs("ann", "room", "ann "+strconv.Itoa(i))
	}
	postAs("ann", "other", "ann elsewhere")
	postAs("ben", "room", "ben here")
	live := func(channel, user string) int {
		ml, err := p.svc.QueryMessages(ctx, actor, chat.MessageQuery{ChannelID: channel, Last: 50})
		require.NoError(t, err)
		n := 0
		for _, m := range ml.Messages {
			if m.UserID == user && !m.IsDeleted {
				n++
			}
		}
		return n
	}

	// The user's page offers it; the next page says what will happen.
	_, page := b.get("/admin/users/ann")
	require.Contains(t, page, `<form id="purge-form" method="get" action="/admin/users/ann/purge">`)
	res, page := b.get("/admin/users/ann/purge?channelId=room&since=2000-01-01+00:00")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, page, "in the channel <code>room</code>")
	require.Contains(t, page, "created since 2000-01-01 00:00:00 UTC")
	require.Contains(t, page, `name="since" value="2000-01-01T00:00:00Z"`)
	require.Equal(t, 3, live("room", "ann"), "showing the page deletes nothing")

	// Bad input is refused in plain words.
	for q, want := range map[string]string{
		"since=yesterday":  "is not understood",
		"channelId=nope":   "nope",
		"since=2026-13-45": "is not understood",
	} {
		res, _ := b.get("/admin/users/ann/purge?" + q)
		require.Equal(t, http.StatusSeeOther, res.StatusCode, q)
		require.Equal(t, "/admin/users/ann", res.Header.Get("Location"), q)
		_, page := b.get("/admin/users/ann")
		require.Contains(t, page, want, q)
		require.Contains(t, page, "flash-error", q)
	}
	res, _ = b.get("/admin/users/nobody/purge")
	require.Equal(t, http.StatusSeeOther, res.StatusCode)

	// The post needs the CSRF token and the confirmation box.
	res, _ = b.post("/admin/users/ann/purge", url.Values{"channelId": {"room"}, "confirm": {"yes"}})
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	res, _ = b.do("POST", "/admin/users/ann/purge", url.Values{"csrf": {token}, "channelId": {"room"}, "confirm": {"yes"}},
		map[string]string{"Sec-Fetch-Site": "cross-site"})
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	res, _ = b.post("/admin/users/ann/purge", url.Values{"csrf": {token}, "channelId": {"room"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/admin/users/ann/purge?channelId=room", res.Header.Get("Location"))
	_, page = b.get("/admin/users/ann/purge?channelId=room")
	require.Contains(t, page, "tick the box to confirm")
	require.Equal(t, 3, live("room", "ann"))
	require.Empty(t, p.auditOf(chat.AuditUserPurgeMessages))

	// Confirmed: the count, only ann's messages in room.
	res, _ = b.post("/admin/users/ann/purge", url.Values{"csrf": {token}, "channelId": {"room"}, "since": {"2000-01-01T00:00:00Z"}, "confirm": {"yes"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/admin/users/ann", res.Header.Get("Location"))
	_, page = b.get("/admin/users/ann")
	require.Contains(t, page, "Deleted 3 messages of ann.")
	require.Equal(t, 0, live("room", "ann"))
	require.Equal(t, 1, live("other", "ann"))
	require.Equal(t, 1, live("room", "ben"))
	es := p.auditOf(chat.AuditUserPurgeMessages)
	require.Len(t, es, 1)
	require.Equal(t, actor, es[0].ActorID)
	require.Equal(t, "ann", es[0].TargetID)
	require.EqualValues(t, 3, es[0].Details["deleted"])
	_, page = b.get("/admin/audit?action=user.purgeMessages")
	require.Equal(t, []string{chat.AuditUserPurgeMessages}, auditRows(page))
	require.Contains(t, page, "<dt>deleted</dt><dd>3</dd>")

	// Every channel, no date: the one left.
	res, _ = b.post("/admin/users/ann/purge", url.Values{"csrf": {token}, "confirm": {"yes"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	_, page = b.get("/admin/users/ann")
	require.Contains(t, page, "Deleted 1 message of ann.")
	require.Equal(t, 0, live("other", "ann"))
}

// TestPurgeRunsEveryBatch deletes more messages than one batch holds: the
// request runs the batches to the end and reports the whole count.
func TestPurgeRunsEveryBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, err := chat.New(ctx, memory.New(), chat.Config{AdminPasswordCost: bcrypt.MinCost, PurgeBatch: 2})
	require.NoError(t, err)
	root, _, err := svc.CreateAdminWithPassword(ctx, "", "root", "", rootPassword)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", console.New(svc, console.Config{})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	p := &panel{t: t, svc: svc, srv: srv, root: root}
	_, err = svc.CreateChannel(ctx, root.UserID, chat.CreateChannelInput{ChannelID: "room", Type: chat.ChannelTypeStandard, UserIDs: []string{"ann"}})
	require.NoError(t, err)
	for i := range 7 {
		_, err := svc.CreateMessage(ctx, "ann", chat.CreateMessageInput{ChannelID: "room", Type: chat.MessageTypeText, Data: map[string]any{"text": strconv.Itoa(i)}})
		require.NoError(t, err)
	}
	b := p.browser("10.6.0.5")
	token := b.signedIn()
	res, _ := b.post("/admin/users/ann/purge", url.Values{"csrf": {token}, "confirm": {"yes"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	_, page := b.get("/admin/users/ann")
	require.Contains(t, page, "Deleted 7 messages of ann.")
	es := p.auditOf(chat.AuditUserPurgeMessages)
	require.Len(t, es, 1, "one entry for the whole purge")
	require.EqualValues(t, 7, es[0].Details["deleted"])
	require.Equal(t, true, es[0].Details["complete"])
	ml, err := svc.QueryMessages(ctx, root.UserID, chat.MessageQuery{ChannelID: "room", Last: 50})
	require.NoError(t, err)
	require.Empty(t, ml.Messages, "none left")
}

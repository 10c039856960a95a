package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/client"
	"github.com/chatengine/chat/httpapi"
)

// auditActions reads every audit entry req selects, newest first,
// following the paging tokens.
func auditEntries(t *testing.T, c *client.Client, req client.QueryAuditRequest) []chat.AuditEntry {
	t.Helper()
	var out []chat.AuditEntry
	for e, err := range c.Audit(ctx(t), req) {
		require.NoError(t, err)
		out = append(out, e)
	}
	return out
}

func actionsOf(es []chat.AuditEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Action + " " + e.TargetID
	}
	return out
}

// testAudit: every moderation and administration action leaves one entry
// (per target) written with it; GET /audit filters, pages newest first and
// side-loads the users; a refused action leaves none.
func testAudit(t *testing.T, e *env) {
	c, bg := e.c, ctx(t)
	_, err := c.CreateChannel(bg, client.CreateChannelRequest{ChannelID: "ac", Type: "standard", UserIDs: []string{"a", "b"}})
	require.NoError(t, err)
	base := len(auditEntries(t, c, client.QueryAuditRequest{}))
	require.Equal(t, 1, base, "the admin account's creation (at the command line: no actor)")

	require.NoError(t, c.MuteChannel(bg, "ac", time.Minute))
	require.NoError(t, c.MuteChannel(bg, "ac", chat.Unmute))
	require.NoError(t, c.MuteUsers(bg, "ac", []string{"a", "b"}, time.Second))
	require.NoError(t, c.MuteUsers(bg, "ac", []string{"a"}, chat.Unmute))
	_, err = c.SetChannelRateLimit(bg, "ac", 2*time.Second)
	require.NoError(t, err)
	msg, err := e.svc.CreateMessage(bg, "a", chat.CreateMessageInput{ChannelID: "ac", Type: "text", Data: map[string]any{"text": "hi"}})
	require.NoError(t, err)
	mid := msg.Messages[0].MessageID
	_, err = c.FlagMessage(bg, mid)
	require.NoError(t, err)
	require.NoError(t, c.ClearMessageFlags(bg, mid))
	require.NoError(t, c.DeleteMessage(bg, mid))
	require.NoError(t, c.BanUsers(bg, "ac", []string{"b"}))
	require.NoError(t, c.UnbanUsers(bg, "ac", []string{"b"}))
	require.NoError(t, c.RemoveUsers(bg, "ac", []string{"a"}))
	_, err = c.AddRules(bg, chat.Blacklist, []string{"darn", "heck"}, true)
	require.NoError(t, err)
	_, err = c.UpdateRule(bg, chat.Blacklist, "darn", "dang", false)
	require.NoError(t, err)
	require.NoError(t, c.DeleteRules(bg, chat.Blacklist, []string{"heck"}))
	_, err = c.AddRules(bg, chat.Whitelist, []string{"example.com"}, false)
	require.NoError(t, err)
	_, err = c.PutRoles(bg, []string{"mods"}, []string{chat.PermBanUser})
	require.NoError(t, err)
	roles := []string{"mods"}
	_, err = c.UpdateUser(bg, client.UpdateUserRequest{UserID: "b", Roles: &roles})
	require.NoError(t, err)
	hook, err := c.CreateWebhook(bg, "https://hooks.example.com/audit", []string{chat.EventMessageDidCreate})
	require.NoError(t, err)
	_, err = c.RotateWebhookSecret(bg, hook.WebhookID)
	require.NoError(t, err)
	require.NoError(t, c.DeleteWebhook(bg, hook.WebhookID))
	require.NoError(t, c.GlobalBan(bg, "a", true))
	require.NoError(t, c.GlobalUnban(bg, "a"))
	_, err = c.FlagUser(bg, "b")
	require.NoError(t, err)
	require.NoError(t, c.ClearUserFlags(bg, "b"))
	require.NoError(t, c.RevokeUserTokens(bg, "b"))
	_, _, err = e.svc.CreateAdmin(bg, "admin", "ops", "opsuser")
	require.NoError(t, err)
	_, err = e.svc.RotateAdmin(bg, "admin", "ops")
	require.NoError(t, err)
	require.NoError(t, e.svc.RevokeAdmin(bg, "", "ops"))
	require.NoError(t, c.CloseChannel(bg, "ac"))
	// Not audited: an author deleting its own message, a user updating
	// itself.
	own, err := e.svc.CreateMessage(bg, "admin", chat.CreateMessageInput{ChannelID: "gen", Type: "text", Data: map[string]any{"text": "x"}})
	require.Error(t, err) // no such channel: nothing audited either
	require.Nil(t, own)
	name := "Bee"
	_, err = e.svc.UpdateUser(bg, "b", chat.UpdateUserInput{UserID: "b", DisplayName: &name})
	require.NoError(t, err)

	want := []string{
		"channel.mute ac", "channel.unmute ac", "channel.muteUsers a", "channel.muteUsers b", "channel.unmuteUsers a",
		"channel.rateLimit ac", "message.clearFlags " + mid, "message.delete " + mid, "channel.banUsers b",
		"channel.unbanUsers b", "channel.removeUsers a", "blacklist.add darn", "blacklist.add heck",
		"blacklist.update dang", "blacklist.delete heck", "whitelist.add example.com", "role.put mods", "user.update b",
		"webhook.create " + hook.WebhookID, "webhook.rotate " + hook.WebhookID, "webhook.delete " + hook.WebhookID,
		"user.globalBan a", "user.globalUnban a", "user.clearFlags b", "user.revokeTokens b", "admin.create ops",
		"admin.rotate ops", "admin.revoke ops", "channel.close ac",
	}
	all := auditEntries(t, c, client.QueryAuditRequest{Limit: 7})
	require.Len(t, all, len(want)+base)
	got := actionsOf(all[:len(want)])
	slices.Reverse(got)
	// Entries of one transaction share an instant and are ordered by id,
	// not by the order of the targets: compare each transaction's set.
	require.ElementsMatch(t, want, got)
	for i := 1; i < len(all); i++ {
		require.False(t, all[i].CreatedAt.After(all[i-1].CreatedAt.Time), "newest first")
	}
	by := map[string]chat.AuditEntry{}
	for _, a := range all {
		by[a.Action+" "+a.TargetID] = a
	}
	mute := by["channel.mute ac"]
	require.Equal(t, "admin", mute.ActorID)
	require.Equal(t, chat.AuditTargetChannel, mute.TargetType)
	require.Equal(t, "ac", mute.ChannelID)
	require.EqualValues(t, 60000, mute.Details["mutePeriod"])
	require.Equal(t, chat.AuditTargetUser, by["channel.banUsers b"].TargetType)
	require.Equal(t, "ac", by["channel.banUsers b"].ChannelID)
	require.Equal(t, "a", by["message.delete "+mid].Details["authorId"])
	require.EqualValues(t, 1, by["message.clearFlags "+mid].Details["flagCount"])
	require.Equal(t, true, by["user.globalBan a"].Details["deleteMessages"])
	require.Equal(t, "dang", by["blacklist.update dang"].TargetID)
	require.Equal(t, "darn", by["blacklist.update dang"].Details["oldRuleId"])
	require.Equal(t, []any{"mods"}, by["user.update b"].Details["roles"])
	require.EqualValues(t, 2000, by["channel.rateLimit ac"].Details["rateLimitWindow"])
	require.Equal(t, "admin", by["admin.create ops"].ActorID)
	require.Equal(t, "", by["admin.revoke ops"].ActorID, "an empty actor: the operator")
	require.Equal(t, "opsuser", by["admin.create ops"].Details["userId"])

	// Filters.
	require.Equal(t, []string{"channel.unbanUsers b", "channel.banUsers b", "channel.muteUsers b"},
		actionsOf(auditEntries(t, c, client.QueryAuditRequest{TargetID: "b", ChannelID: "ac"})))
	require.Equal(t, []string{"channel.mute ac"}, actionsOf(auditEntries(t, c, client.QueryAuditRequest{Action: chat.AuditChannelMute})))
	inAC := auditEntries(t, c, client.QueryAuditRequest{ChannelID: "ac"})
	require.Len(t, inAC, 12)
	for _, a := range inAC {
		require.Equal(t, "ac", a.ChannelID)
	}
	byAdmin := auditEntries(t, c, client.QueryAuditRequest{ActorID: "admin"})
	require.Len(t, byAdmin, len(want)-1)
	require.Empty(t, auditEntries(t, c, client.QueryAuditRequest{ActorID: "nobody"}))

	// Pages, both ways, and the side-loaded users.
	p1, err := c.QueryAudit(bg, client.QueryAuditRequest{Limit: 4})
	require.NoError(t, err)
	require.Len(t, p1.Audit, 4)
	require.Empty(t, p1.Paging.Previous)
	require.NotEmpty(t, p1.Paging.Next)
	p2, err := c.QueryAudit(bg, client.QueryAuditRequest{Token: p1.Paging.Next})
	require.NoError(t, err)
	require.Equal(t, actionsOf(all[4:8]), actionsOf(p2.Audit))
	back, err := c.QueryAudit(bg, client.QueryAuditRequest{Token: p2.Paging.Previous})
	require.NoError(t, err)
	require.Equal(t, actionsOf(p1.Audit), actionsOf(back.Audit))
	var users []string
	for _, u := range p1.Users {
		users = append(users, u.UserID)
	}
	require.Contains(t, users, "admin")
	// A token belongs to its query.
	_, err = c.QueryAudit(bg, client.QueryAuditRequest{Token: p1.Paging.Next, ActorID: "admin"})
	requireCode(t, err, chat.CodeBadRequest)

	// The wire: null actor and channel, an object of details.
	r := e.do("GET", "/audit?action=admin.revoke", "", "")
	require.Equal(t, 200, r.status, string(r.body))
	entry := r.json["audit"].([]any)[0].(map[string]any)
	require.Nil(t, entry["actorId"])
	require.Contains(t, entry, "actorId")
	require.Nil(t, entry["channelId"])
	require.Equal(t, map[string]any{}, entry["details"])
	require.Equal(t, "admin", entry["targetType"])
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, entry["createdAt"])
	require.NotNil(t, r.json["users"])
	r = e.do("GET", "/audit?targetId=b&options[limit]=1", "", "")
	require.Equal(t, 200, r.status, string(r.body))
	require.Len(t, r.json["audit"], 1)
	require.NotEmpty(t, r.json["paging"].(map[string]any)["next"])

	// Bad input.
	requireError(t, e.do("GET", "/audit?action=channel.explode", "", ""), chat.CodeBadRequest, "action")
	requireError(t, e.do("GET", "/audit?options[limit]=101", "", ""), chat.CodeBadRequest, "options.limit")
	requireError(t, e.do("GET", "/audit?options[token]=forged.token", "", ""), chat.CodeBadRequest, "options.token")
	requireError(t, e.do("GET", "/audit?actorId="+url.QueryEscape("a\x01b"), "", ""), chat.CodeBadRequest, "actorId")

	// A refused action writes no entry: the entry is in its transaction.
	count := len(auditEntries(t, c, client.QueryAuditRequest{}))
	_, err = c.CreateChannel(bg, client.CreateChannelRequest{ChannelID: "ad", Type: "standard", UserIDs: []string{"x"}})
	require.NoError(t, err)
	requireCode(t, c.MuteUsers(bg, "ad", []string{"x", "stranger"}, time.Minute), chat.CodeBadRequest)
	requireCode(t, c.BanUsers(bg, "ac", []string{"x"}), chat.CodeForbidden)
	requireCode(t, c.DeleteWebhook(bg, "nohook"), chat.CodeNotFound)
	require.Len(t, auditEntries(t, c, client.QueryAuditRequest{}), count)
}

// checkVsCreate asserts that the dry run of in as userID answers what
// creating it answers, and returns the dry run's answer.
func checkVsCreate(t *testing.T, e *env, userID string, in chat.CreateMessageInput, wantCode chat.Code, create bool) *chat.CheckResult {
	t.Helper()
	got, err := e.c.CheckMessage(ctx(t), client.CheckMessageRequest{UserID: userID, ChannelID: in.ChannelID, Type: in.Type,
		Data: in.Data, Tags: in.Tags, ParentID: in.ParentID})
	require.NoError(t, err)
	require.Equal(t, wantCode, got.Code, "dry run: %s", got.Message)
	require.Equal(t, wantCode == 0, got.Allowed)
	if !create {
		return got
	}
	_, cerr := e.svc.CreateMessage(ctx(t), userID, in)
	if wantCode == 0 {
		require.NoError(t, cerr)
		return got
	}
	var ce *chat.Error
	require.True(t, errors.As(cerr, &ce), "create: %v", cerr)
	require.Equal(t, ce.Code, got.Code)
	if ce.Code == chat.CodeRateLimited {
		// The wait shrinks between the two calls.
		require.Equal(t, strings.SplitN(ce.Message, "may post again", 2)[0], strings.SplitN(got.Message, "may post again", 2)[0])
		require.Len(t, got.Detail, 1)
		require.IsType(t, chat.RetryAfter{}, got.Detail[0])
		return got
	}
	require.Equal(t, ce.Message, got.Message)
	require.Equal(t, len(ce.Detail), len(got.Detail))
	for i := range ce.Detail {
		require.Equal(t, ce.Detail[i], got.Detail[i])
	}
	return got
}

// moderationState is what a dry run must not change.
func moderationState(t *testing.T, e *env) string {
	t.Helper()
	bg := ctx(t)
	var parts []any
	require.NoError(t, e.store.View(bg, func(tx chat.Tx) error {
		chs, err := tx.QueryChannels(bg, chat.ChannelFilter{IncludeClosed: true})
		if err != nil {
			return err
		}
		parts = append(parts, chs)
		for _, ch := range chs {
			ms, err := tx.QueryMessages(bg, chat.MessageFilter{ChannelID: ch.ChannelID, IncludeDeleted: true})
			if err != nil {
				return err
			}
			cus, err := tx.GetChannelUsers(bg, ch.ChannelID, nil)
			if err != nil {
				return err
			}
			parts = append(parts, ms, cus)
		}
		us, err := tx.QueryUsers(bg, chat.UserFilter{})
		if err != nil {
			return err
		}
		last, err := tx.LastEventID(bg)
		if err != nil {
			return err
		}
		audit, err := tx.QueryAudit(bg, chat.AuditFilter{})
		parts = append(parts, us, last, audit)
		return err
	}))
	b, err := json.Marshal(parts)
	require.NoError(t, err)
	return string(b)
}

// testModerationCheck: for each rule of message creation, the dry run
// gives what creating the message gives, and the dry runs change nothing.
func testModerationCheck(t *testing.T, e *env) {
	c, bg := e.c, ctx(t)
	text := func(ch, s string) chat.CreateMessageInput {
		return chat.CreateMessageInput{ChannelID: ch, Type: chat.MessageTypeText, Data: map[string]any{"text": s}}
	}
	for _, ch := range []string{"mc", "shut", "quiet", "slow"} {
		_, err := c.CreateChannel(bg, client.CreateChannelRequest{ChannelID: ch, Type: "standard", UserIDs: []string{"u1", "u2", "gb", "bn", "ex"}})
		require.NoError(t, err)
	}
	require.NoError(t, c.CloseChannel(bg, "shut"))
	require.NoError(t, c.MuteChannel(bg, "quiet", chat.MuteForever))
	require.NoError(t, c.MuteUsers(bg, "mc", []string{"u2"}, time.Hour))
	_, err := c.SetChannelRateLimit(bg, "slow", time.Hour)
	require.NoError(t, err)
	_, err = e.svc.CreateMessage(bg, "u1", text("slow", "first"))
	require.NoError(t, err)
	require.NoError(t, c.GlobalBan(bg, "gb", false))
	require.NoError(t, c.BanUsers(bg, "mc", []string{"bn"}))
	_, err = c.AddRules(bg, chat.Blacklist, []string{"darn"}, true)
	require.NoError(t, err)
	_, err = c.AddRules(bg, chat.Whitelist, []string{"example.com"}, false)
	require.NoError(t, err)
	_, err = c.PutRoles(bg, []string{"free"}, []string{chat.PermExemptFromBlacklist, chat.PermExemptFromWhitelist})
	require.NoError(t, err)
	roles := []string{"free"}
	_, err = c.UpdateUser(bg, client.UpdateUserRequest{UserID: "ex", Roles: &roles})
	require.NoError(t, err)

	before := moderationState(t, e)
	dry := []struct {
		user string
		in   chat.CreateMessageInput
		code chat.Code
	}{
		{"gb", text("mc", "hello"), chat.CodeGlobalBanned},
		{"bn", text("mc", "hello"), chat.CodeUserBanned},
		{"outsider", text("mc", "hello"), chat.CodePermissionDenied},
		{"u1", text("shut", "hello"), chat.CodePermissionDenied}, // closing removed the members
		{"admin", text("shut", "hello"), chat.CodeForbidden},
		{"u1", text("quiet", "hello"), chat.CodeChannelMuted},
		{"u2", text("mc", "hello"), chat.CodeUserMuted},
		{"u1", text("slow", "again"), chat.CodeRateLimited},
		{"u1", text("mc", "oh darn it"), chat.CodeBlacklisted},
		{"u1", chat.CreateMessageInput{ChannelID: "mc", Type: "custom", Data: map[string]any{"a": []any{"x", map[string]any{"b": "darn"}}}}, chat.CodeBlacklisted},
		{"u1", text("mc", "see https://evil.example.org/x"), chat.CodeLinkNotAllowed},
		{"admin", text("mc", "DARN"), chat.CodeBlacklisted},
		{"u1", text("nowhere", "hello"), chat.CodeNotFound},
		{"u1", chat.CreateMessageInput{ChannelID: "mc", Type: "text", Data: map[string]any{"text": "hi"}, ParentID: "nomsg"}, chat.CodeBadRequest},
		{"u1", chat.CreateMessageInput{ChannelID: "mc", Type: "poll", Data: map[string]any{}}, chat.CodeBadRequest},
		{"u1", chat.CreateMessageInput{ChannelID: "mc", Type: "text", Data: map[string]any{"text": ""}}, chat.CodeBadRequest},
	}
	var answers []*chat.CheckResult
	for _, d := range dry {
		answers = append(answers, checkVsCreate(t, e, d.user, d.in, d.code, false))
	}
	require.Equal(t, before, moderationState(t, e), "dry runs changed the store")
	// A user the store does not know yet is not created by a dry run.
	res, err := c.CheckMessage(bg, client.CheckMessageRequest{UserID: "ghost", ChannelID: "mc", Type: "text", Data: map[string]any{"text": "boo"}})
	require.NoError(t, err)
	require.Equal(t, chat.CodePermissionDenied, res.Code)
	_, err = e.svc.GetUser(bg, e.admin, "ghost")
	require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err))

	// The same requests for real give the same answers.
	for i, d := range dry {
		got := checkVsCreate(t, e, d.user, d.in, d.code, true)
		require.Equal(t, answers[i].Code, got.Code)
	}
	require.Equal(t, chat.RuleRef{RuleID: "darn"}, answers[8].Detail[0])
	require.Equal(t, chat.RefusedLink{URL: "https://evil.example.org/x"}, answers[10].Detail[0])
	require.Equal(t, chat.UserRef{UserID: "gb"}, answers[0].Detail[0])

	// Allowed: a member, the exempt user, an admin broadcasting.
	checkVsCreate(t, e, "u1", text("mc", "hello https://example.com/a"), 0, true)
	checkVsCreate(t, e, "ex", text("mc", "darn https://evil.example.org"), 0, true)
	checkVsCreate(t, e, "admin", text("quiet", "announcement"), 0, true)

	// Without a channel, only the content rules.
	res, err = c.CheckMessage(bg, client.CheckMessageRequest{UserID: "u1", Type: "text", Data: map[string]any{"text": "darn"}})
	require.NoError(t, err)
	require.Equal(t, chat.CodeBlacklisted, res.Code)
	res, err = c.CheckMessage(bg, client.CheckMessageRequest{UserID: "ex", Type: "text", Data: map[string]any{"text": "darn"}})
	require.NoError(t, err)
	require.True(t, res.Allowed)
	res, err = c.CheckMessage(bg, client.CheckMessageRequest{UserID: "gb", Type: "text", Data: map[string]any{"text": "fine"}})
	require.NoError(t, err)
	require.True(t, res.Allowed, "no channel: only the content rules")

	// The wire: {"allowed":true}, or the refusal with its detail.
	r := e.do("POST", "/moderation/check", "application/json", `{"userId":"u1","channelId":"mc","type":"text","data":{"text":"fine"}}`)
	require.Equal(t, 200, r.status, string(r.body))
	require.JSONEq(t, `{"allowed":true}`, string(r.body))
	r = e.form("POST", "/moderation/check", url.Values{"userId": {"u1"}, "channelId": {"mc"}, "type": {"text"}, "data[text]": {"darn"}})
	require.Equal(t, 200, r.status, string(r.body))
	require.Equal(t, false, r.json["allowed"])
	require.EqualValues(t, chat.CodeBlacklisted, r.json["code"])
	require.Equal(t, []any{map[string]any{"ruleId": "darn"}}, r.json["detail"])
	require.Contains(t, r.json["message"], "darn")
	// The request itself: userId is required.
	requireError(t, e.do("POST", "/moderation/check", "application/json", `{"channelId":"mc","type":"text","data":{"text":"x"}}`), chat.CodeBadRequest, "userId")
}

// countingStore counts the write transactions that reach the store.
// countingStore counts the write transactions of PurgeUserMessages (not
// those of the background work running beside it: hub, presence).
type countingStore struct {
	chat.Store
	updates atomic.Int64
}

func (s *countingStore) Update(ctx context.Context, fn func(tx chat.Tx) error) error {
	if chat.Operation(ctx) == "PurgeUserMessages" {
		s.updates.Add(1)
	}
	return s.Store.Update(ctx, fn)
}

// testPurge: POST /users/{userId}/messages/delete deletes in batches of
// Config.PurgeBatch, one transaction each, with one message.didDelete per
// message and one audit entry; channelId and since bound it.
func testPurge(t *testing.T, newStore storeFactory) {
	cs := &countingStore{Store: newStore(t)}
	now := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	var clock atomic.Int64
	clock.Store(now.UnixMilli())
	e := newEnvOn(t, cs, func(_ *httpapi.Config, c *chat.Config) {
		c.PurgeBatch = 3
		c.Now = func() time.Time { return time.UnixMilli(clock.Load()) }
	})
	c, bg := e.c, ctx(t)
	for _, ch := range []string{"p1", "p2"} {
		_, err := c.CreateChannel(bg, client.CreateChannelRequest{ChannelID: ch, Type: "standard", UserIDs: []string{"sp", "ok"}})
		require.NoError(t, err)
	}
	post := func(user, ch string) string {
		clock.Add(1000)
		m, err := e.svc.CreateMessage(bg, user, chat.CreateMessageInput{ChannelID: ch, Type: "text", Data: map[string]any{"text": "spam"}})
		require.NoError(t, err)
		return m.Messages[0].MessageID
	}
	var p1, p2 []string
	for i := 0; i < 7; i++ {
		p1 = append(p1, post("sp", "p1"))
	}
	for i := 0; i < 3; i++ {
		p2 = append(p2, post("sp", "p2"))
	}
	keep := post("ok", "p1")
	clock.Add(1000)
	file, err := e.svc.CreateFileMessage(bg, "sp", chat.CreateFileMessageInput{ChannelID: "p1", FileName: "a.txt", Data: []byte("bytes")})
	require.NoError(t, err)
	fileID := file.Messages[0].MessageID
	since := time.UnixMilli(clock.Load()).UTC() // the file message only
	clock.Add(1000)
	var lastEvent int64
	require.NoError(t, e.store.View(bg, func(tx chat.Tx) error {
		lastEvent, err = tx.LastEventID(bg)
		return err
	}))

	// One channel: 3 messages, one batch of 3 and a last empty one.
	cs.updates.Store(0)
	n, err := c.PurgeUserMessages(bg, "sp", client.PurgeMessagesRequest{ChannelID: "p2"})
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.EqualValues(t, 2, cs.updates.Load(), "a full batch is followed by one that finds nothing")
	for _, id := range p2 {
		m, err := c.GetMessage(bg, id)
		require.NoError(t, err)
		require.True(t, m.IsDeleted)
		require.Empty(t, m.Data)
	}
	// Since a time: the file message alone, its bytes purged.
	n, err = c.PurgeUserMessages(bg, "sp", client.PurgeMessagesRequest{Since: &since})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, _, err = e.svc.GetMessageBlob(bg, e.admin, fileID, "file")
	require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err))
	// Everything else: 7 messages in batches of 3, 3 and 1.
	cs.updates.Store(0)
	r := e.do("POST", "/users/sp/messages/delete", "application/json", `{}`)
	require.Equal(t, 200, r.status, string(r.body))
	require.JSONEq(t, `{"success":true,"deleted":7}`, string(r.body))
	require.EqualValues(t, 3, cs.updates.Load())
	for _, id := range p1 {
		m, err := c.GetMessage(bg, id)
		require.NoError(t, err)
		require.True(t, m.IsDeleted)
	}
	k, err := c.GetMessage(bg, keep)
	require.NoError(t, err)
	require.False(t, k.IsDeleted, "another author's message stays")
	n, err = c.PurgeUserMessages(bg, "sp", client.PurgeMessagesRequest{})
	require.NoError(t, err)
	require.Zero(t, n, "nothing left")

	// One message.didDelete per message, each with its message.
	var deleted []string
	require.NoError(t, e.store.View(bg, func(tx chat.Tx) error {
		evs, err := tx.ReadEvents(bg, lastEvent, 0)
		for _, ev := range evs {
			require.Equal(t, chat.EventMessageDidDelete, ev.Name)
			var d chat.MessageEventData
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			require.Len(t, d.Messages, 1)
			require.Equal(t, "sp", d.Users[0].UserID)
			deleted = append(deleted, d.Messages[0].MessageID)
		}
		return err
	}))
	require.ElementsMatch(t, append(append(append([]string{}, p1...), p2...), fileID), deleted)

	// One audit entry per purge, complete, with its count and bounds.
	es := auditEntries(t, c, client.QueryAuditRequest{Action: chat.AuditUserPurgeMessages})
	require.Len(t, es, 4)
	require.Equal(t, "sp", es[3].TargetID)
	require.Equal(t, "p2", es[3].ChannelID)
	require.EqualValues(t, 3, es[3].Details["deleted"])
	require.Equal(t, true, es[3].Details["complete"])
	require.Equal(t, chat.NewTime(since).Format(chat.TimeLayout), es[2].Details["since"])
	require.EqualValues(t, 7, es[1].Details["deleted"])
	require.Nil(t, es[1].Details["channelId"])
	require.EqualValues(t, 0, es[0].Details["deleted"])

	// Bad input changes nothing.
	requireError(t, e.do("POST", "/users/sp/messages/delete", "application/json", `{"since":"yesterday"}`), chat.CodeBadRequest, "since")
	requireError(t, e.do("POST", "/users/nobody/messages/delete", "application/json", `{}`), chat.CodeNotFound, "nobody")
	requireError(t, e.do("POST", "/users/ok/messages/delete", "application/json", `{"channelId":"nowhere"}`), chat.CodeNotFound, "nowhere")
	k, err = c.GetMessage(bg, keep)
	require.NoError(t, err)
	require.False(t, k.IsDeleted)
	require.Len(t, auditEntries(t, c, client.QueryAuditRequest{Action: chat.AuditUserPurgeMessages}), 4)
}

// TestModerationPostgres runs the audit, dry-run and purge cases of the
// API suite against the Postgres store.
func TestModerationPostgres(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the Postgres run is skipped in -short mode")
	}
	t.Run("Audit", func(t *testing.T) {
		t.Parallel()
		testAudit(t, newEnv(t, postgresStore))
	})
	t.Run("ModerationCheck", func(t *testing.T) {
		t.Parallel()
		testModerationCheck(t, newEnv(t, postgresStore))
	})
	t.Run("Purge", func(t *testing.T) {
		t.Parallel()
		testPurge(t, postgresStore)
	})
}

package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/client"
	"github.com/chatengine/chat/httpapi"
	"github.com/chatengine/chat/store/memory"
)

// userClient returns a client acting as userID with a fresh user token.
func (e *env) userClient(userID string) *client.Client {
	e.t.Helper()
	tok, err := e.svc.IssueUserToken(ctx(e.t), "", userID, 0)
	require.NoError(e.t, err)
	return client.New(e.base, tok.Token, client.WithHTTPClient(e.srv.Client()))
}

func reportIDs(rs []chat.Report) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ReportID
	}
	return out
}

// Users report messages they may read and users; admins list, filter,
// page and resolve the queue; each resolution runs its action and is
// audited; refusals change nothing.
func testReports(t *testing.T, e *env) {
	c, bg := e.c, ctx(t)
	_, err := c.CreateChannel(bg, client.CreateChannelRequest{ChannelID: "r", Type: "standard", UserIDs: []string{"alice", "bob"}})
	require.NoError(t, err)
	_, err = c.CreateChannel(bg, client.CreateChannelRequest{ChannelID: "o", Type: "standard", UserIDs: []string{"carol"}})
	require.NoError(t, err)
	m, err := e.svc.CreateMessage(bg, "bob", chat.CreateMessageInput{ChannelID: "r", Type: "text", Data: map[string]any{"text": "buy now"}})
	require.NoError(t, err)
	mid := m.Messages[0].MessageID
	mo, err := e.svc.CreateMessage(bg, "carol", chat.CreateMessageInput{ChannelID: "o", Type: "text", Data: map[string]any{"text": "elsewhere"}})
	require.NoError(t, err)
	alice, carol := e.userClient("alice"), e.userClient("carol")

	// The wire form of a new report.
	tok, err := e.svc.IssueUserToken(bg, "", "alice", 0)
	require.NoError(t, err)
	raw := e.do("POST", "/reports", "application/json", `{"targetType":"message","targetId":"`+mid+`","reason":"spam","note":"twice today"}`,
		"Authorization", "Bearer "+tok.Token)
	require.Equal(t, http.StatusOK, raw.status, "body %s", raw.body)
	rep := raw.json["reports"].([]any)[0].(map[string]any)
	for _, k := range []string{"reportId", "reporterId", "targetType", "targetId", "channelId", "reason", "note", "state", "resolution", "createdAt", "resolvedAt"} {
		require.Contains(t, rep, k)
	}
	require.Equal(t, "alice", rep["reporterId"])
	require.Equal(t, "r", rep["channelId"])
	require.Equal(t, "open", rep["state"])
	require.Nil(t, rep["resolution"])
	require.Nil(t, rep["resolvedAt"])
	require.Len(t, raw.json["messages"], 1, "the reported message is side-loaded")
	msgReport := rep["reportId"].(string)

	// One open report per reporter and target.
	_, err = alice.CreateReport(bg, client.CreateReportRequest{TargetType: "message", TargetID: mid, Reason: "spam"})
	requireCode(t, err, chat.CodeConflict)
	// Only messages the reporter may read; unknown targets; bad input.
	_, err = alice.CreateReport(bg, client.CreateReportRequest{TargetType: "message", TargetID: mo.Messages[0].MessageID, Reason: "spam"})
	requireCode(t, err, chat.CodePermissionDenied)
	_, err = alice.CreateReport(bg, client.CreateReportRequest{TargetType: "message", TargetID: "nope", Reason: "spam"})
	requireCode(t, err, chat.CodeNotFound)
	_, err = alice.CreateReport(bg, client.CreateReportRequest{TargetType: "user", TargetID: "nobody", Reason: "spam"})
	requireCode(t, err, chat.CodeNotFound)
	ce := requireCode(t, func() error {
		_, err := alice.CreateReport(bg, client.CreateReportRequest{TargetType: "channel", TargetID: "r", Reason: "spam"})
		return err
	}(), chat.CodeBadRequest)
	require.Contains(t, ce.Message, "targetType")
	ce = requireCode(t, func() error {
		_, err := alice.CreateReport(bg, client.CreateReportRequest{TargetType: "user", TargetID: "bob"})
		return err
	}(), chat.CodeBadRequest)
	require.Contains(t, ce.Message, "reason")
	ce = requireCode(t, func() error {
		_, err := alice.CreateReport(bg, client.CreateReportRequest{TargetType: "user", TargetID: "bob", Reason: "x", Note: strings.Repeat("n", chat.MaxReportNote+1)})
		return err
	}(), chat.CodeBadRequest)
	require.Contains(t, ce.Message, "note")
	ce = requireCode(t, func() error {
		_, err := alice.CreateReport(bg, client.CreateReportRequest{TargetType: "user", TargetID: "bob", Reason: "two\nlines"})
		return err
	}(), chat.CodeBadRequest)
	require.Contains(t, ce.Message, "reason")
	// A note may span lines.
	userReport, err := alice.CreateReport(bg, client.CreateReportRequest{TargetType: "user", TargetID: "bob", Reason: "abuse", Note: "first\nsecond"})
	require.NoError(t, err)
	require.Equal(t, "", userReport.ChannelID)
	require.Equal(t, "first\nsecond", userReport.Note)
	carolReport, err := carol.CreateReport(bg, client.CreateReportRequest{TargetType: "user", TargetID: "bob", Reason: "abuse"})
	require.NoError(t, err)

	// End users do not see the queue.
	_, err = alice.QueryReports(bg, client.QueryReportsRequest{})
	requireCode(t, err, chat.CodePermissionDenied)
	_, err = alice.ResolveReport(bg, msgReport, chat.ResolveDismiss, "")
	requireCode(t, err, chat.CodePermissionDenied)

	// Admins list, filter and page.
	all, err := c.QueryReports(bg, client.QueryReportsRequest{})
	require.NoError(t, err)
	require.Equal(t, []string{carolReport.ReportID, userReport.ReportID, msgReport}, reportIDs(all.Reports), "newest first")
	var users []string
	for _, u := range all.Users {
		users = append(users, u.UserID)
	}
	require.ElementsMatch(t, []string{"alice", "bob", "carol"}, users)
	byUser, err := c.QueryReports(bg, client.QueryReportsRequest{State: "open", TargetType: "user"})
	require.NoError(t, err)
	require.Equal(t, []string{carolReport.ReportID, userReport.ReportID}, reportIDs(byUser.Reports))
	var paged []string
	for r, err := range c.Reports(bg, client.QueryReportsRequest{Limit: 1}) {
		require.NoError(t, err)
		paged = append(paged, r.ReportID)
	}
	require.Equal(t, reportIDs(all.Reports), paged)
	_, err = c.QueryReports(bg, client.QueryReportsRequest{State: "closed"})
	requireCode(t, err, chat.CodeBadRequest)

	// Resolutions.
	_, err = c.ResolveReport(bg, userReport.ReportID, chat.ResolveDeleteMessage, "")
	requireCode(t, err, chat.CodeBadRequest)
	ce = requireCode(t, func() error { _, err := c.ResolveReport(bg, userReport.ReportID, chat.ResolveBanUser, ""); return err }(), chat.CodeBadRequest)
	require.Contains(t, ce.Message, "channelId")
	_, err = c.ResolveReport(bg, userReport.ReportID, "shrug", "")
	requireCode(t, err, chat.CodeBadRequest)
	_, err = c.ResolveReport(bg, "nope", chat.ResolveDismiss, "")
	requireCode(t, err, chat.CodeNotFound)

	res, err := c.ResolveReport(bg, msgReport, chat.ResolveDeleteMessage, "")
	require.NoError(t, err)
	require.Equal(t, chat.ReportResolved, res.State)
	require.Equal(t, &chat.ReportResolution{Action: chat.ResolveDeleteMessage, ActorID: e.admin}, res.Resolution)
	require.NotNil(t, res.ResolvedAt)
	got, err := c.GetMessage(bg, mid)
	require.NoError(t, err)
	require.True(t, got.IsDeleted, "deleteMessage deleted the message")
	_, err = c.ResolveReport(bg, msgReport, chat.ResolveDismiss, "")
	requireCode(t, err, chat.CodeConflict)

	_, err = c.ResolveReport(bg, userReport.ReportID, chat.ResolveBanUser, "r")
	require.NoError(t, err)
	ch, err := c.GetChannel(bg, "r")
	require.NoError(t, err)
	banned := false
	for _, cu := range ch.ChannelUsers {
		if cu.UserID == "bob" {
			banned = cu.Membership == chat.MembershipBanned
		}
	}
	require.True(t, banned, "banUser banned bob from r")
	_, err = c.ResolveReport(bg, carolReport.ReportID, chat.ResolveGlobalBan, "")
	require.NoError(t, err)
	bob, err := c.GetUser(bg, "bob")
	require.NoError(t, err)
	require.True(t, bob.IsGlobalBan)

	// Resolved reports no longer block a new one.
	again, err := alice.CreateReport(bg, client.CreateReportRequest{TargetType: "user", TargetID: "bob", Reason: "still"})
	require.NoError(t, err)
	_, err = c.ResolveReport(bg, again.ReportID, chat.ResolveDismiss, "")
	require.NoError(t, err)
	resolved, err := c.QueryReports(bg, client.QueryReportsRequest{State: "resolved"})
	require.NoError(t, err)
	require.Len(t, resolved.Reports, 4)
	open, err := c.QueryReports(bg, client.QueryReportsRequest{State: "open"})
	require.NoError(t, err)
	require.Empty(t, open.Reports)

	// Every resolution is in the audit log, beside its action's own entry.
	log, err := c.QueryAudit(bg, client.QueryAuditRequest{Action: chat.AuditReportResolve})
	require.NoError(t, err)
	require.Len(t, log.Audit, 4)
	var actions []any
	for _, a := range log.Audit {
		require.Equal(t, chat.AuditTargetReport, a.TargetType)
		require.Equal(t, e.admin, a.ActorID)
		actions = append(actions, a.Details["resolution"])
	}
	require.Equal(t, []any{"dismiss", "globalBan", "banUser", "deleteMessage"}, actions)
	require.Equal(t, "r", log.Audit[2].ChannelID)
	del, err := c.QueryAudit(bg, client.QueryAuditRequest{Action: chat.AuditMessageDelete, TargetID: mid})
	require.NoError(t, err)
	require.Len(t, del.Audit, 1)
}

// exportDoc is the export document as a client reads it.
type exportDoc struct {
	UserID      string                  `json:"userId"`
	ExportedAt  chat.Time               `json:"exportedAt"`
	User        chat.User               `json:"user"`
	Memberships []chat.ExportMembership `json:"memberships"`
	Messages    []chat.Message          `json:"messages"`
	Reactions   []chat.Reaction         `json:"reactions"`
	Reports     []chat.Report           `json:"reports"`
	Files       []chat.ExportFile       `json:"files"`
	Devices     []map[string]any        `json:"devices"`
	Settings    []map[string]any        `json:"notificationSettings"`
}

// The export of a user with more than one page of everything is one
// valid JSON document holding all of it, with working file links; the
// erasure leaves no content, file, reaction or profile field of the user,
// keeps the channels' counters right, is audited, and a second erasure is
// a success that changes nothing.
func testUserData(t *testing.T, newStore storeFactory) {
	e := newEnvOn(t, newStore(t), func(_ *httpapi.Config, c *chat.Config) { c.PurgeBatch = 3 })
	c, bg, svc := e.c, ctx(t), e.svc
	for _, ch := range []string{"a", "b", "x"} {
		_, err := c.CreateChannel(bg, client.CreateChannelRequest{ChannelID: ch, Type: "standard", UserIDs: []string{"u", "v"}})
		require.NoError(t, err)
	}
	_, err := svc.UpdateUser(bg, e.admin, chat.UpdateUserInput{UserID: "u", DisplayName: client.Ptr("Ursula Private"), Metadata: &map[string]any{"email": "u@example.com"}})
	require.NoError(t, err)
	post := func(user, ch, text, parent string) string {
		m, err := svc.CreateMessage(bg, user, chat.CreateMessageInput{ChannelID: ch, Type: "text", Data: map[string]any{"text": text},
			Tags: []string{"t-" + user}, ParentID: parent})
		require.NoError(t, err)
		return m.Messages[0].MessageID
	}
	var mine []string
	for i := range 7 {
		mine = append(mine, post("u", "a", "secret words number "+string(rune('a'+i)), ""))
	}
	mine = append(mine, post("u", "b", "secret in b", ""))
	theirs := post("v", "a", "from v", "")
	comment := post("v", "a", "a comment by v", mine[0])
	fl, err := svc.CreateFileMessage(bg, "u", chat.CreateFileMessageInput{ChannelID: "a", FileName: "diary.txt", MimeType: "text/plain", Data: []byte("dear diary")})
	require.NoError(t, err)
	fileID := fl.Messages[0].MessageID
	png := pngImage(t, 4, 4, false)
	il, err := svc.CreateImageMessage(bg, "u", chat.CreateImageMessageInput{ChannelID: "b", FileName: "me.png", MimeType: "image/png", Width: 4, Height: 4,
		Renditions: []chat.ImageRendition{{Name: "small", ContentType: "image/png", Width: 4, Height: 4, Data: png}}})
	require.NoError(t, err)
	imageID := il.Messages[0].MessageID
	mine = append(mine, fileID, imageID)
	deleted := post("u", "x", "deleted before", "")
	require.NoError(t, svc.DeleteMessage(bg, "u", deleted))
	mine = append(mine, deleted)
	for _, name := range []string{"like", "wow", "sad", "ok"} {
		_, err = svc.AddReaction(bg, "u", theirs, chat.ReferenceTypeMessage, name)
		require.NoError(t, err)
	}
	_, err = svc.AddReaction(bg, "u", mine[1], chat.ReferenceTypeMessage, "like")
	require.NoError(t, err)
	_, err = svc.AddReaction(bg, "v", mine[1], chat.ReferenceTypeMessage, "like")
	require.NoError(t, err)
	_, err = svc.CreateReport(bg, "u", chat.CreateReportInput{TargetType: chat.ReportTargetUser, TargetID: "v", Reason: "rude", Note: "v said my address"})
	require.NoError(t, err)
	unread := func(user, ch string) int64 {
		l, err := svc.GetChannel(bg, user, ch)
		require.NoError(t, err)
		for _, cu := range l.ChannelUsers {
			if cu.UserID == user {
				return cu.UnreadCount
			}
		}
		t.Fatalf("no relation of %s to %s", user, ch)
		return 0
	}
	require.EqualValues(t, 8, unread("v", "a"), "the 7 texts and the file of u")
	for i := range 4 {
		_, err = svc.RegisterDevice(bg, "u", chat.RegisterDeviceInput{UserID: "u", Provider: chat.ProviderFirebase, Token: fmt.Sprintf("fcm-secret-%d", i)})
		require.NoError(t, err)
	}
	_, err = svc.RegisterDevice(bg, "v", chat.RegisterDeviceInput{UserID: "v", Provider: chat.ProviderFirebase, Token: "fcm-of-v"})
	require.NoError(t, err)
	_, err = svc.SetUserNotifications(bg, "u", "u", chat.NotifyMentions)
	require.NoError(t, err)
	for _, ch := range []string{"a", "b", "x"} {
		_, err = svc.SetChannelNotifications(bg, "u", ch, chat.NotifyNone)
		require.NoError(t, err)
	}

	// The export: every item of every page, valid JSON.
	var buf bytes.Buffer
	require.NoError(t, c.ExportUser(bg, "u", &buf))
	require.True(t, json.Valid(buf.Bytes()), "%s", buf.Bytes())
	var doc exportDoc
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
	require.Equal(t, "u", doc.UserID)
	require.Equal(t, "Ursula Private", doc.User.DisplayName)
	require.Len(t, doc.Memberships, 3)
	var got []string
	for _, m := range doc.Messages {
		require.Equal(t, "u", m.UserID)
		got = append(got, m.MessageID)
	}
	require.ElementsMatch(t, mine, got, "every message, deleted ones too, over several pages")
	require.Len(t, doc.Reactions, 5)
	require.Len(t, doc.Reports, 1)
	require.Equal(t, "v said my address", doc.Reports[0].Note)
	require.Len(t, doc.Devices, 4, "every device")
	require.NotContains(t, buf.String(), "fcm-secret", "device tokens are not exported")
	for _, d := range doc.Devices {
		require.Equal(t, "u", d["userId"])
		require.Equal(t, "firebase", d["provider"])
	}
	require.Len(t, doc.Settings, 4, "every setting, over several pages")
	require.Equal(t, map[string]any{"userId": "u", "channelId": nil, "level": "mentions", "effectiveLevel": "mentions",
		"updatedAt": doc.Settings[0]["updatedAt"]}, doc.Settings[0])
	require.NotNil(t, doc.Settings[0]["updatedAt"])
	for i, ch := range []string{"a", "b", "x"} {
		require.Equal(t, ch, doc.Settings[i+1]["channelId"])
		require.Equal(t, "none", doc.Settings[i+1]["level"])
	}
	require.Len(t, doc.Files, 2)
	for _, f := range doc.Files {
		link := f.URL
		if f.Type == chat.MessageTypeImage {
			link = f.URLs["small"]
		}
		require.NotEmpty(t, link, "%+v", f)
		resp, err := e.srv.Client().Get(e.srv.URL + link)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "the signed link %s opens", link)
	}
	// Refusals before the first byte are ordinary errors.
	requireCode(t, c.ExportUser(bg, "nobody", &bytes.Buffer{}), chat.CodeNotFound)
	requireCode(t, e.userClient("v").ExportUser(bg, "u", &bytes.Buffer{}), chat.CodePermissionDenied)
	requireCode(t, func() error { _, err := e.userClient("v").EraseUser(bg, "u"); return err }(), chat.CodePermissionDenied)
	_, err = c.EraseUser(bg, e.admin)
	requireCode(t, err, chat.CodePermissionDenied)

	// The erasure.
	old := e.userClient("u")
	_, err = old.GetUser(bg, "u")
	require.NoError(t, err)
	res, err := c.EraseUser(bg, "u")
	require.NoError(t, err)
	require.Equal(t, &chat.EraseResult{Success: true, DeletedMessages: len(mine) - 1, RemovedReactions: 5, RemovedDevices: 4}, res)
	snapshot := func() string {
		var parts []any
		require.NoError(t, e.store.View(bg, func(tx chat.Tx) error {
			ms, err := tx.UserMessages(bg, "u", nil, 0)
			if err != nil {
				return err
			}
			for _, m := range ms {
				require.True(t, m.IsDeleted, m.MessageID)
				require.Empty(t, m.Data, m.MessageID)
				require.Empty(t, m.Tags, m.MessageID)
				for _, name := range []string{"file", "small"} {
					_, err := tx.GetBlob(bg, m.MessageID, name)
					require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err), "no %s left of %s", name, m.MessageID)
				}
			}
			rs, err := tx.UserReactions(bg, "u", nil, 0)
			if err != nil {
				return err
			}
			require.Empty(t, rs)
			u, err := tx.GetUser(bg, "u")
			if err != nil {
				return err
			}
			require.Equal(t, chat.ErasedDisplayName, u.DisplayName)
			require.Empty(t, u.Metadata)
			require.Empty(t, u.Roles)
			require.NotNil(t, u.TokensRevokedAt)
			reps, err := tx.QueryReports(bg, chat.ReportFilter{ReporterID: "u"})
			if err != nil {
				return err
			}
			require.Len(t, reps, 1)
			require.Empty(t, reps[0].Note)
			ds, err := tx.ListDevices(bg, "u")
			if err != nil {
				return err
			}
			require.Empty(t, ds, "the devices of u are deleted")
			ns, err := tx.ListNotificationLevels(bg, "u", "", false, 0)
			if err != nil {
				return err
			}
			require.Empty(t, ns, "the notification levels of u are deleted")
			vds, err := tx.ListDevices(bg, "v")
			if err != nil {
				return err
			}
			require.Len(t, vds, 1, "the devices of others stay")
			others, err := tx.GetMessages(bg, []string{theirs, comment, mine[0], mine[1]})
			if err != nil {
				return err
			}
			chs, err := tx.GetChannels(bg, []string{"a", "b", "x"})
			if err != nil {
				return err
			}
			parts = append(parts, ms, u, reps, others, chs)
			return nil
		}))
		b, err := json.Marshal(parts)
		require.NoError(t, err)
		return string(b)
	}
	before := snapshot()
	// Counters: the reactions of u are gone from v's message, v's own
	// reaction to u's message is counted still, the comment of v is still
	// its parent's child, and the unread counts of others drop with the
	// deleted messages.
	vm, err := c.GetMessage(bg, theirs)
	require.NoError(t, err)
	require.Empty(t, vm.Reactions)
	require.Zero(t, vm.ReactionsCount)
	um, err := c.GetMessage(bg, mine[1])
	require.NoError(t, err)
	require.Equal(t, map[string]int{"like": 1}, um.Reactions)
	parent, err := c.GetMessage(bg, mine[0])
	require.NoError(t, err)
	require.Equal(t, 1, parent.ChildrenNumber)
	require.EqualValues(t, 0, unread("v", "a"))
	cha, err := c.GetChannel(bg, "a")
	require.NoError(t, err)
	require.Equal(t, 2, cha.MemberCount, "memberships stay")
	found, err := svc.SearchMessages(bg, e.admin, chat.SearchMessagesQuery{Query: "secret"})
	require.NoError(t, err)
	require.Empty(t, found.Messages, "no erased text is found")
	// The tokens of u issued before the erasure stop working.
	_, err = old.GetUser(bg, "u")
	requireCode(t, err, chat.CodeUnauthorized)
	_, err = e.userClient("u").GetUser(bg, "u")
	require.NoError(t, err, "a token minted after the erasure works (the id is kept)")

	// Audited: one entry, complete, with the counts.
	log, err := c.QueryAudit(bg, client.QueryAuditRequest{Action: chat.AuditUserErase, TargetID: "u"})
	require.NoError(t, err)
	require.Len(t, log.Audit, 1)
	require.Equal(t, true, log.Audit[0].Details["complete"])
	require.EqualValues(t, len(mine)-1, log.Audit[0].Details["deletedMessages"])
	require.EqualValues(t, 5, log.Audit[0].Details["removedReactions"])
	require.EqualValues(t, 4, log.Audit[0].Details["removedDevices"])

	// Again: a success that finds nothing to change.
	res, err = c.EraseUser(bg, "u")
	require.NoError(t, err)
	require.Equal(t, &chat.EraseResult{Success: true}, res)
	require.Equal(t, before, snapshot())
	log, err = c.QueryAudit(bg, client.QueryAuditRequest{Action: chat.AuditUserErase, TargetID: "u"})
	require.NoError(t, err)
	require.Len(t, log.Audit, 2)
	require.EqualValues(t, 0, log.Audit[0].Details["deletedMessages"])

	// The export after it: still valid, nothing left to read.
	buf.Reset()
	require.NoError(t, c.ExportUser(bg, "u", &buf))
	doc = exportDoc{}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
	require.Equal(t, chat.ErasedDisplayName, doc.User.DisplayName)
	require.Len(t, doc.Messages, len(mine))
	require.Empty(t, doc.Reactions)
	require.Empty(t, doc.Files)
	require.Empty(t, doc.Devices)
	require.Empty(t, doc.Settings)
}

// TestReportsAndUserDataPostgres runs the reports and the user's data
// cases of the API suite on Postgres.
func TestReportsAndUserDataPostgres(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the Postgres run is skipped in -short mode")
	}
	t.Run("Reports", func(t *testing.T) {
		t.Parallel()
		testReports(t, newEnv(t, postgresStore))
	})
	t.Run("UserData", func(t *testing.T) {
		t.Parallel()
		testUserData(t, postgresStore)
	})
}

// slowViews delays every read-only transaction while on, standing for a
// store that is slow to page through a large account.
type slowViews struct {
	chat.Store
	on atomic.Bool
}

func (s *slowViews) View(ctx context.Context, fn func(tx chat.Tx) error) error {
	if s.on.Load() {
		time.Sleep(100 * time.Millisecond)
	}
	return s.Store.View(ctx, fn)
}

// An export outlasts the server's write timeout: each write moves the
// connection's deadline forward. (Without that, this export, which
// writes its first bytes after the server's 50 ms WriteTimeout, ends in
// a broken response.)
func TestExportOutlastsWriteTimeout(t *testing.T) {
	t.Parallel()
	st := &slowViews{Store: memory.New()}
	e := newEnvOn(t, st)
	bg := ctx(t)
	_, err := e.c.CreateChannel(bg, client.CreateChannelRequest{ChannelID: "a", Type: "standard", UserIDs: []string{"u"}})
	require.NoError(t, err)
	_, err = e.svc.CreateMessage(bg, "u", chat.CreateMessageInput{ChannelID: "a", Type: "text", Data: map[string]any{"text": "hello"}})
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(httpapi.New(e.svc, httpapi.Config{Logger: slog.New(slog.DiscardHandler)}))
	srv.Config.WriteTimeout = 50 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	st.on.Store(true)
	var buf bytes.Buffer
	err = client.New(srv.URL, e.token, client.WithHTTPClient(srv.Client())).ExportUser(bg, "u", &buf)
	st.on.Store(false)
	require.NoError(t, err)
	var doc exportDoc
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc), "%s", buf.Bytes())
	require.Len(t, doc.Messages, 1)
}

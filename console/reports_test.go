package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// reportRows returns the report ids of the reports page, in order.
func reportRows(page string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<li class="report" data-report-id="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	return out
}

func (p *panel) report(id string) chat.Report {
	p.t.Helper()
	rl, err := p.svc.GetReport(context.Background(), p.root.UserID, id)
	require.NoError(p.t, err)
	return rl.Reports[0]
}

// The review queue lists open reports newest first with what they
// reference (escaped), resolves them with the CSRF token and, for the
// actions that delete or ban, the confirmation box, and filters by state
// and kind.
func TestReportsPage(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)
	ctx := context.Background()
	_, err := p.svc.CreateChannel(ctx, p.root.UserID, chat.CreateChannelInput{ChannelID: "room", Type: chat.ChannelTypeStandard, UserIDs: []string{"ann", "bob"}})
	require.NoError(t, err)
	ml, err := p.svc.CreateMessage(ctx, "bob", chat.CreateMessageInput{ChannelID: "room", Type: chat.MessageTypeText, Data: chat.TextData("<script>alert(1)</script> buy now")})
	require.NoError(t, err)
	mid := ml.Messages[0].MessageID
	evilNote := `<img src=x onerror=alert(2)> look`
	mr, err := p.svc.CreateReport(ctx, "ann", chat.CreateReportInput{TargetType: chat.ReportTargetMessage, TargetID: mid, Reason: "spam", Note: evilNote})
	require.NoError(t, err)
	ur, err := p.svc.CreateReport(ctx, "ann", chat.CreateReportInput{TargetType: chat.ReportTargetUser, TargetID: "bob", Reason: "abuse"})
	require.NoError(t, err)
	msgReport, userReport := mr.Reports[0].ReportID, ur.Reports[0].ReportID

	b := p.browser("10.7.0.1")
	token := b.signedIn()
	res, page := b.get("/admin/reports")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, page, `<a href="/admin/reports" aria-current="page">Reports</a>`, "in the navigation")
	require.Contains(t, page, `id="reports-help"`, "the page explains each action")
	require.Equal(t, []string{userReport, msgReport}, reportRows(page), "open reports, newest first")
	require.NotContains(t, page, "<script>alert")
	require.NotContains(t, page, "<img src=x")
	require.Contains(t, page, html.EscapeString(evilNote), "the note shows as text")
	require.Contains(t, page, html.EscapeString("<script>alert(1)</script> buy now"), "the message shows as text")
	require.Equal(t, 1, strings.Count(page, "<script"), "only the panel's own script")
	require.Equal(t, 1, strings.Count(page, `value="deleteMessage"`), "delete is offered for the message report only")
	require.Contains(t, page, `id="ban-ch-`+userReport+`"`, "a user report's channel ban asks for the channel")

	// Without the CSRF token: refused, nothing changed.
	res, _ = b.post("/admin/reports/"+msgReport+"/resolve", url.Values{"action": {"deleteMessage"}, "confirm": {"yes"}})
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.Equal(t, chat.ReportOpen, p.report(msgReport).State)
	// Without the confirmation box: refused with the reason.
	res, _ = b.post("/admin/reports/"+msgReport+"/resolve", url.Values{"csrf": {token}, "action": {"deleteMessage"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	_, page = b.get(res.Header.Get("Location"))
	require.Contains(t, page, "tick the box to confirm")
	require.Equal(t, chat.ReportOpen, p.report(msgReport).State)

	// Confirmed: the message is deleted, the report resolved, the back
	// link kept; an outside back link is not followed.
	res, _ = b.post("/admin/reports/"+msgReport+"/resolve", url.Values{"csrf": {token}, "action": {"deleteMessage"}, "confirm": {"yes"},
		"back": {"/reports?state=open"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/admin/reports?state=open", res.Header.Get("Location"))
	r := p.report(msgReport)
	require.Equal(t, chat.ReportResolved, r.State)
	require.Equal(t, chat.ResolveDeleteMessage, r.Resolution.Action)
	got, err := p.svc.GetMessage(ctx, p.root.UserID, mid)
	require.NoError(t, err)
	require.True(t, got.Messages[0].IsDeleted)
	res, _ = b.post("/admin/reports/"+userReport+"/resolve", url.Values{"csrf": {token}, "action": {"banUser"}, "channelId": {"room"},
		"confirm": {"yes"}, "back": {"https://evil.example/"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/admin/reports", res.Header.Get("Location"))
	cl, err := p.svc.GetChannel(ctx, p.root.UserID, "room")
	require.NoError(t, err)
	for _, cu := range cl.ChannelUsers {
		if cu.UserID == "bob" {
			require.Equal(t, chat.MembershipBanned, cu.Membership)
		}
	}
	// Resolving again: the refusal in words.
	res, _ = b.post("/admin/reports/"+userReport+"/resolve", url.Values{"csrf": {token}, "action": {"dismiss"}})
	_, page = b.get(res.Header.Get("Location"))
	require.Contains(t, page, "already resolved")

	// Audited as the signed-in admin.
	es := p.auditOf(chat.AuditReportResolve)
	require.Len(t, es, 2)
	require.Equal(t, p.root.UserID, es[0].ActorID)

	// Filters.
	_, page = b.get("/admin/reports")
	require.Empty(t, reportRows(page))
	require.Contains(t, page, "No report is waiting.")
	_, page = b.get("/admin/reports?state=resolved")
	require.Equal(t, []string{userReport, msgReport}, reportRows(page))
	require.Contains(t, page, `<code class="resolution">banUser</code> in <code>room</code>`)
	require.NotContains(t, page, `value="dismiss"`, "resolved reports offer no action")
	_, page = b.get("/admin/reports?state=all&targetType=user")
	require.Equal(t, []string{userReport}, reportRows(page))
	res, page = b.get("/admin/reports?state=closed")
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.Contains(t, page, "state")
}

// The user's page downloads the user's export and erases its data once
// confirmed (with the CSRF token).
func TestUserDataCard(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)
	ctx := context.Background()
	_, err := p.svc.CreateChannel(ctx, p.root.UserID, chat.CreateChannelInput{ChannelID: "room", Type: chat.ChannelTypeStandard, UserIDs: []string{"ann"}})
	require.NoError(t, err)
	_, err = p.svc.CreateMessage(ctx, "ann", chat.CreateMessageInput{ChannelID: "room", Type: chat.MessageTypeText, Data: chat.TextData("my secret")})
	require.NoError(t, err)
	b := p.browser("10.7.0.2")
	token := b.signedIn()
	_, page := b.get("/admin/users/ann")
	require.Contains(t, page, `id="export-link" href="/admin/users/ann/export"`)
	require.Contains(t, page, `id="erase-form"`)

	res, body := b.get("/admin/users/ann/export")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, `attachment; filename="ann.json"`, res.Header.Get("Content-Disposition"))
	require.Contains(t, body, "my secret")
	res, _ = b.get("/admin/users/nobody/export")
	require.Equal(t, http.StatusSeeOther, res.StatusCode, "a refusal goes back to the user's page")

	res, _ = b.post("/admin/users/ann/erase", url.Values{"confirm": {"yes"}})
	require.Equal(t, http.StatusForbidden, res.StatusCode, "no CSRF token")
	res, _ = b.post("/admin/users/ann/erase", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	_, page = b.get(res.Header.Get("Location"))
	require.Contains(t, page, "tick the box to confirm")
	ul, err := p.svc.GetUser(ctx, p.root.UserID, "ann")
	require.NoError(t, err)
	require.Equal(t, "ann", ul.Users[0].DisplayName, "not erased without the box")

	res, _ = b.post("/admin/users/ann/erase", url.Values{"csrf": {token}, "confirm": {"yes"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	_, page = b.get(res.Header.Get("Location"))
	require.Contains(t, page, "1 message deleted, 0 reactions removed")
	ul, err = p.svc.GetUser(ctx, p.root.UserID, "ann")
	require.NoError(t, err)
	require.Equal(t, chat.ErasedDisplayName, ul.Users[0].DisplayName)
	require.Len(t, p.auditOf(chat.AuditUserErase), 1)
	_, page = b.get("/admin/audit?action=user.erase")
	require.Contains(t, page, "user.erase")
}

package console

import (
	"net/http"
	"net/url"

	chat "github.com/chatengine/chat"
)

// reportsPageSize is the number of reports on one page of the queue.
const reportsPageSize = 25

// reportsRoutes serves the review queue (Service.QueryReports) and the
// resolution of a report (Service.ResolveReport).
func (h *handler) reportsRoutes(rt *router) {
	rt.get("/reports", h.reports)
	rt.post("/reports/{id}/resolve", h.resolveReport)
}

// reportFilter is the filter form's values: State is "open" (the
// default), "resolved" or "all".
type reportFilter struct {
	State, TargetType string
}

func (f reportFilter) values() url.Values {
	u := url.Values{"state": {f.State}}
	if f.TargetType != "" {
		u.Set("targetType", f.TargetType)
	}
	return u
}

// reportRow is one report as the page shows it.
type reportRow struct {
	chat.Report
	ReporterName string
	TargetName   string        // a reported user's display name
	Message      *chat.Message // a reported message, when it still exists
	AuthorID     string        // the reported message's author
	AuthorName   string
	ResolverName string
}

type reportsView struct {
	Filter         reportFilter
	Reports        []reportRow
	Next, Previous string
	Error          string
	Back           string // this page, to come back to after a resolution
}

func (h *handler) reports(q *req) {
	v := reportsView{Filter: reportFilter{State: q.form("state"), TargetType: q.form("targetType")}}
	if v.Filter.State == "" {
		v.Filter.State = chat.ReportOpen
	}
	state := v.Filter.State
	if state == "all" {
		state = ""
	}
	v.Back = "/reports?" + v.Filter.values().Encode()
	rl, err := h.svc.QueryReports(q.r.Context(), q.actor(), chat.ReportQuery{State: state, TargetType: v.Filter.TargetType,
		Token: q.form("token"), Limit: reportsPageSize})
	if err != nil {
		v.Error = h.human(err)
		q.render(http.StatusBadRequest, "reports", "reports", "Reports", v)
		return
	}
	users := map[string]chat.User{}
	for _, u := range rl.Users {
		users[u.UserID] = u
	}
	msgs := map[string]*chat.Message{}
	for i := range rl.Messages {
		msgs[rl.Messages[i].MessageID] = &rl.Messages[i]
	}
	name := func(id string) string {
		if u, ok := users[id]; ok && u.DisplayName != "" {
			return u.DisplayName
		}
		return id
	}
	for _, r := range rl.Reports {
		row := reportRow{Report: r, ReporterName: name(r.ReporterID)}
		if r.TargetType == chat.ReportTargetUser {
			row.TargetName = name(r.TargetID)
		} else if m := msgs[r.TargetID]; m != nil {
			row.Message, row.AuthorID, row.AuthorName = m, m.UserID, name(m.UserID)
		}
		if r.Resolution != nil {
			row.ResolverName = name(r.Resolution.ActorID)
		}
		v.Reports = append(v.Reports, row)
	}
	if rl.Paging != nil {
		link := func(tok string) string {
			if tok == "" {
				return ""
			}
			u := v.Filter.values()
			u.Set("token", tok)
			return h.cfg.Prefix + "/reports?" + u.Encode()
		}
		v.Next, v.Previous = link(rl.Paging.Next), link(rl.Paging.Previous)
	}
	q.render(http.StatusOK, "reports", "reports", "Reports", v)
}

// resolveText says what a resolution did, for the flash message.
var resolveText = map[string]string{
	chat.ResolveDismiss:       "Report dismissed.",
	chat.ResolveDeleteMessage: "Report resolved: the message is deleted.",
	chat.ResolveBanUser:       "Report resolved: the user is banned from the channel.",
	chat.ResolveGlobalBan:     "Report resolved: the user is banned everywhere.",
}

// resolveReport resolves a report. Every action but dismiss deletes or
// bans: the form's confirmation box must be ticked.
func (h *handler) resolveReport(q *req) {
	back := q.form("back")
	if len(back) < len("/reports") || back[:len("/reports")] != "/reports" {
		back = "/reports"
	}
	action := q.form("action")
	if action != chat.ResolveDismiss && !q.confirmed() {
		q.fail(back, "Deleting a message and banning a user cannot be undone from here: tick the box to confirm.")
		return
	}
	_, err := h.svc.ResolveReport(q.r.Context(), q.actor(), chat.ResolveReportInput{ReportID: q.pathID("id"), Action: action,
		ChannelID: q.form("channelId")})
	q.done(back, err, resolveText[action])
}

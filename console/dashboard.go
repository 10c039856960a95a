package console

import (
	"net/http"
	"strconv"

	chat "github.com/chatengine/chat"
)

// dashboardRoutes serves the overview: counts and recent activity.
func (h *handler) dashboardRoutes(rt *router) {
	rt.get("/{$}", h.dashboard)
}

// count is one figure of the dashboard.
type count struct {
	Label, Value, Href string
}

type dashboardView struct {
	Counts []count
	Events []chat.Event
	Errors []string
}

// atMost shows n, or "100+" when a page of 100 was full.
func atMost(n int) string {
	if n >= 100 {
		return "100+"
	}
	return strconv.Itoa(n)
}

func (h *handler) dashboard(q *req) {
	ctx, actor := q.r.Context(), q.actor()
	var v dashboardView
	note := func(err error) {
		if err != nil {
			v.Errors = append(v.Errors, h.human(err))
		}
	}
	p := h.cfg.Prefix
	if cl, err := h.svc.QueryChannels(ctx, actor, chat.ChannelQuery{Limit: 100}); err == nil {
		v.Counts = append(v.Counts, count{"Open channels", atMost(len(cl.Channels)), p + "/channels"})
	} else {
		note(err)
	}
	if ul, err := h.svc.QueryUsers(ctx, actor, chat.UserQuery{Limit: 100}); err == nil {
		v.Counts = append(v.Counts, count{"Users", atMost(len(ul.Users)), p + "/users"})
	} else {
		note(err)
	}
	if ul, err := h.svc.QueryUsers(ctx, actor, chat.UserQuery{Filter: chat.UsersFlagged, Limit: 100}); err == nil {
		v.Counts = append(v.Counts, count{"Flagged users", atMost(len(ul.Users)), p + "/users?filter=flagged"})
	} else {
		note(err)
	}
	for _, l := range []chat.RuleList{chat.Blacklist, chat.Whitelist} {
		if rr, err := h.svc.QueryRules(ctx, actor, l, nil); err == nil {
			v.Counts = append(v.Counts, count{string(l) + " entries", strconv.Itoa(len(rr.Records)), p + "/rules"})
		} else {
			note(err)
		}
	}
	if rl, err := h.svc.QueryRoles(ctx, actor, ""); err == nil {
		v.Counts = append(v.Counts, count{"Roles", strconv.Itoa(len(rl.Roles)), p + "/roles"})
	} else {
		note(err)
	}
	if wl, err := h.svc.ListWebhooks(ctx, actor); err == nil {
		v.Counts = append(v.Counts, count{"Webhooks", strconv.Itoa(len(wl.Webhooks)), p + "/webhooks"})
	} else {
		note(err)
	}
	if as, err := h.svc.ListAdmins(ctx); err == nil {
		v.Counts = append(v.Counts, count{"Admins", strconv.Itoa(len(as)), p + "/admins"})
	} else {
		note(err)
	}
	es, err := h.svc.RecentEvents(ctx, 20)
	note(err)
	v.Events = es
	q.render(http.StatusOK, "dashboard", "dashboard", "Dashboard", v)
}

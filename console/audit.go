package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sort"

	chat "github.com/chatengine/chat"
)

// auditPageSize is the number of entries on one page of the audit log.
const auditPageSize = 25

// auditRoutes serves the audit log (Service.QueryAudit): newest first,
// filtered by actor, target, channel and action, with keyset paging.
func (h *handler) auditRoutes(rt *router) {
	rt.get("/audit", h.audit)
}

// auditFilter is the filter form's values.
type auditFilter struct {
	ActorID, TargetID, ChannelID, Action string
}

// values returns the filter as query parameters (empty ones left out).
func (f auditFilter) values() url.Values {
	u := url.Values{}
	for k, v := range map[string]string{"actorId": f.ActorID, "targetId": f.TargetID, "channelId": f.ChannelID, "action": f.Action} {
		if v != "" {
			u.Set(k, v)
		}
	}
	return u
}

// auditRow is one entry as the page shows it.
type auditRow struct {
	chat.AuditEntry
	ActorName   string // the actor's display name, or its id
	ActorHref   string // the actor's user page ("" for the server's operator)
	TargetName  string // the target user's display name, when the target is a user
	TargetHref  string // the target's page, when the panel has one
	ChannelHref string
	Details     []detailItem
}

// detailItem is one parameter of an entry, as text.
type detailItem struct {
	Key, Value string
}

type auditView struct {
	Filter         auditFilter
	Actions        []string
	Entries        []auditRow
	Next, Previous string
	Error          string
}

func (h *handler) audit(q *req) {
	v := auditView{Actions: chat.AuditActions, Filter: auditFilter{
		ActorID: q.form("actorId"), TargetID: q.form("targetId"), ChannelID: q.form("channelId"), Action: q.form("action"),
	}}
	al, err := h.svc.QueryAudit(q.r.Context(), q.actor(), chat.AuditQuery{
		ActorID: v.Filter.ActorID, TargetID: v.Filter.TargetID, ChannelID: v.Filter.ChannelID, Action: v.Filter.Action,
		Token: q.form("token"), Limit: auditPageSize,
	})
	if err != nil {
		v.Error = h.human(err)
		q.render(http.StatusBadRequest, "audit", "audit", "Audit log", v)
		return
	}
	users := map[string]chat.User{}
	for _, u := range al.Users {
		users[u.UserID] = u
	}
	for _, e := range al.Audit {
		v.Entries = append(v.Entries, h.auditRow(e, users))
	}
	if al.Paging != nil {
		link := func(tok string) string {
			if tok == "" {
				return ""
			}
			u := v.Filter.values()
			u.Set("token", tok)
			return h.cfg.Prefix + "/audit?" + u.Encode()
		}
		v.Next, v.Previous = link(al.Paging.Next), link(al.Paging.Previous)
	}
	q.render(http.StatusOK, "audit", "audit", "Audit log", v)
}

// auditRow prepares one entry: names, links to the panel's pages of its
// actor, target and channel, and its details as text.
func (h *handler) auditRow(e chat.AuditEntry, users map[string]chat.User) auditRow {
	p := h.cfg.Prefix
	r := auditRow{AuditEntry: e}
	if e.ActorID != "" {
		r.ActorName, r.ActorHref = e.ActorID, p+"/users/"+esc(e.ActorID)
		if u, ok := users[e.ActorID]; ok && u.DisplayName != "" {
			r.ActorName = u.DisplayName
		}
	}
	if e.ChannelID != "" {
		r.ChannelHref = p + "/channels/" + esc(e.ChannelID)
	}
	switch e.TargetType {
	case chat.AuditTargetUser:
		r.TargetHref = p + "/users/" + esc(e.TargetID)
		if u, ok := users[e.TargetID]; ok && u.DisplayName != "" && u.DisplayName != e.TargetID {
			r.TargetName = u.DisplayName
		}
	case chat.AuditTargetChannel:
		r.TargetHref = p + "/channels/" + esc(e.TargetID)
	case chat.AuditTargetMessage:
		if e.ChannelID != "" {
			r.TargetHref = p + "/channels/" + esc(e.ChannelID) + "#m-" + url.PathEscape(e.TargetID)
		}
	case chat.AuditTargetWebhook:
		if e.Action != chat.AuditWebhookDelete {
			r.TargetHref = p + "/webhooks/" + esc(e.TargetID)
		}
	case chat.AuditTargetRule:
		r.TargetHref = p + "/rules"
	case chat.AuditTargetRole:
		r.TargetHref = p + "/roles?filter=" + url.QueryEscape(e.TargetID)
	case chat.AuditTargetAdmin:
		r.TargetHref = p + "/admins"
	case chat.AuditTargetReport:
		r.TargetHref = p + "/reports?state=all"
	}
	r.Details = detailItems(e.Details)
	return r
}

// detailItems lists an entry's details by key: strings as they are, no
// value as "none", anything else in its JSON form.
func detailItems(d map[string]any) []detailItem {
	out := make([]detailItem, 0, len(d))
	for k, v := range d {
		var s string
		switch x := v.(type) {
		case nil:
			s = "none"
		case string:
			s = x
		case bool:
			s = "no"
			if x {
				s = "yes"
			}
		default:
			b, err := json.Marshal(x)
			if err != nil {
				s = "?"
			} else {
				s = string(b)
			}
		}
		out = append(out, detailItem{Key: k, Value: s})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

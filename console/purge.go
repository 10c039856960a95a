package console

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	chat "github.com/chatengine/chat"
)

// purgeRoutes serves "Delete this user's messages" of a user's page: a
// page saying what will happen, whose confirmed form runs
// Service.PurgeUserMessages.
func (h *handler) purgeRoutes(rt *router) {
	rt.get("/users/{id}/purge", h.purgeConfirm)
	rt.post("/users/{id}/purge", h.purge)
}

// sinceLayouts are the forms the "since" field accepts; those without a
// zone are UTC.
var sinceLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"}

// parseSince reads the "since" field: "" is no limit.
func parseSince(s string) (*time.Time, string) {
	if s == "" {
		return nil, ""
	}
	for _, l := range sinceLayouts {
		if t, err := time.Parse(l, s); err == nil {
			t = t.UTC()
			return &t, ""
		}
	}
	return nil, "The time " + strconv.Quote(s) + " is not understood: write it as 2026-05-01 12:00 (UTC) or 2026-05-01T12:00:00+02:00, or leave it empty for every message."
}

type purgeView struct {
	User      chat.User
	ChannelID string
	Since     string // as the form sends it back (RFC 3339, UTC)
	SinceText string // as the page shows it
}

// purgeInput reads and checks the form of either step; on a refusal it
// has sent the browser back to the user's page with the reason.
func (h *handler) purgeInput(q *req) (purgeView, *time.Time, bool) {
	id := q.pathID("id")
	back := "/users/" + esc(id)
	var v purgeView
	since, msg := parseSince(q.form("since"))
	if msg != "" {
		q.fail(back, msg)
		return v, nil, false
	}
	ul, err := h.svc.GetUser(q.r.Context(), q.actor(), id)
	if err != nil {
		q.fail(back, h.human(err))
		return v, nil, false
	}
	v.User, v.ChannelID = ul.Users[0], q.form("channelId")
	if v.ChannelID != "" {
		if _, err := h.svc.GetChannel(q.r.Context(), q.actor(), v.ChannelID); err != nil {
			q.fail(back, h.human(err))
			return v, nil, false
		}
	}
	if since != nil {
		v.Since = since.Format(time.RFC3339Nano)
		v.SinceText = since.Format("2006-01-02 15:04:05 UTC")
	}
	return v, since, true
}

// purgeConfirm says what the purge will do, with the form that does it.
func (h *handler) purgeConfirm(q *req) {
	v, _, ok := h.purgeInput(q)
	if !ok {
		return
	}
	q.render(http.StatusOK, "purge", "users", "Delete the messages of "+v.User.DisplayName, v)
}

// purge runs the purge once confirmed. The request runs every batch; it
// goes on when the browser stops waiting, so a purge is not cut short by
// a closed tab (running it again would finish it anyway).
func (h *handler) purge(q *req) {
	v, since, ok := h.purgeInput(q)
	if !ok {
		return
	}
	id := v.User.UserID
	if !q.confirmed() {
		u := url.Values{}
		if v.ChannelID != "" {
			u.Set("channelId", v.ChannelID)
		}
		if v.Since != "" {
			u.Set("since", v.Since)
		}
		path := "/users/" + esc(id) + "/purge"
		if len(u) > 0 {
			path += "?" + u.Encode()
		}
		q.fail(path, "Deleted messages cannot be restored: tick the box to confirm.")
		return
	}
	res, err := h.svc.PurgeUserMessages(context.WithoutCancel(q.r.Context()), q.actor(),
		chat.PurgeUserMessagesInput{UserID: id, ChannelID: v.ChannelID, Since: since})
	text := ""
	if err == nil {
		text = "Deleted " + strconv.Itoa(res.Deleted) + " messages of " + id + "."
		if res.Deleted == 1 {
			text = "Deleted 1 message of " + id + "."
		}
	}
	q.done("/users/"+esc(id), err, text)
}

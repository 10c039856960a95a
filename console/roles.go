package console

import (
	"net/http"

	chat "github.com/chatengine/chat"
)

// rolesRoutes serves the roles and their permissions.
func (h *handler) rolesRoutes(rt *router) {
	rt.get("/roles", h.roles)
	rt.post("/roles", func(q *req) {
		id := q.form("roleId")
		perms := lines(q.r.PostForm.Get("permissions"))
		if perms == nil {
			perms = []string{}
		}
		_, err := h.svc.PutRoles(q.r.Context(), q.actor(), []string{id}, perms)
		q.done("/roles", err, "Role "+id+" saved.")
	})
}

type rolesView struct {
	Filter string
	Roles  []chat.Role
	Known  []string
	Error  string
}

func (h *handler) roles(q *req) {
	v := rolesView{Filter: q.form("filter"), Known: []string{
		chat.PermExemptFromBlacklist, chat.PermExemptFromWhitelist, chat.PermExemptFromMute, chat.PermExemptFromRateLimit,
		"Channel/ManageChannel", "Channel/ManageUsers", "Channel/MuteChannel", "Channel/MuteUser",
		"Channel/RateLimitChannel", "Channel/BanUser", "Channel/CloseChannel", "Channel/GlobalAccess", "Channel/ManageMessages",
	}}
	rl, err := h.svc.QueryRoles(q.r.Context(), q.actor(), v.Filter)
	if err != nil {
		v.Error = h.human(err)
	} else {
		v.Roles = rl.Roles
	}
	q.render(http.StatusOK, "roles", "roles", "Roles", v)
}

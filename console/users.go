package console

import (
	"net/http"
	"net/url"
	"slices"

	chat "github.com/chatengine/chat"
)

// usersRoutes serves the user list (search, flagged, paging) and one
// user's page: profile, roles, global ban, flags.
func (h *handler) usersRoutes(rt *router) {
	rt.get("/users", h.users)
	rt.get("/users/{id}", h.user)
	rt.post("/users/{id}/profile", h.userAction(func(q *req, id string) (string, error) {
		name := q.form("displayName")
		in := chat.UpdateUserInput{UserID: id, DisplayName: &name}
		if s := q.form("metadata"); s != "" {
			meta, err := parseMetadata("metadata", s)
			if err != nil {
				return "", err
			}
			in.Metadata = &meta
		}
		_, err := h.svc.UpdateUser(q.r.Context(), q.actor(), in)
		return "Profile saved.", err
	}))
	rt.post("/users/{id}/roles", h.userAction(func(q *req, id string) (string, error) {
		roles := q.r.PostForm["roles"]
		if roles == nil {
			roles = []string{}
		}
		// global-admin belongs to admin accounts: the Service keeps it on
		// a user that has it and refuses to give it, so the form leaves it out.
		roles = slices.DeleteFunc(roles, func(r string) bool { return r == chat.RoleGlobalAdmin })
		_, err := h.svc.UpdateUser(q.r.Context(), q.actor(), chat.UpdateUserInput{UserID: id, Roles: &roles})
		return "Roles saved.", err
	}))
	rt.post("/users/{id}/ban", h.userAction(func(q *req, id string) (string, error) {
		del := q.form("deleteMessages") == "yes"
		if del && !q.confirmed() {
			return "", chat.InvalidField("confirm", "deleting every message of the user cannot be undone: tick the box to confirm")
		}
		if err := h.svc.GlobalBan(q.r.Context(), q.actor(), id, del); err != nil {
			return "", err
		}
		if del {
			return id + " is banned everywhere and their messages are deleted.", nil
		}
		return id + " is banned everywhere.", nil
	}))
	rt.post("/users/{id}/unban", h.userAction(func(q *req, id string) (string, error) {
		return id + " is no longer banned.", h.svc.GlobalUnban(q.r.Context(), q.actor(), id)
	}))
	rt.post("/users/{id}/flag", h.userAction(func(q *req, id string) (string, error) {
		_, err := h.svc.FlagUser(q.r.Context(), q.actor(), id)
		return id + " flagged.", err
	}))
	rt.post("/users/{id}/unflag", h.userAction(func(q *req, id string) (string, error) {
		return id + "'s flags are cleared.", h.svc.ClearUserFlags(q.r.Context(), q.actor(), id)
	}))
	rt.post("/users/{id}/unblock", h.userAction(func(q *req, id string) (string, error) {
		blocked := q.form("blockedId")
		if blocked == "" {
			return "", chat.InvalidField("blockedId", "name the user to unblock")
		}
		_, err := h.svc.UnblockUser(q.r.Context(), q.actor(), id, blocked)
		return id + " no longer blocks " + blocked + ".", err
	}))
	rt.post("/users/{id}/revoke-tokens", h.userAction(func(q *req, id string) (string, error) {
		return "Every token issued to " + id + " until now is revoked.", h.svc.RevokeUserTokens(q.r.Context(), q.actor(), id)
	}))
}

func (h *handler) userAction(fn func(q *req, id string) (string, error)) func(q *req) {
	return func(q *req) {
		id := q.pathID("id")
		msg, err := fn(q, id)
		q.done("/users/"+esc(id), err, msg)
	}
}

type usersView struct {
	Search, Filter string
	Users          []chat.User
	Next, Previous string
	Error          string
}

func (h *handler) users(q *req) {
	if id := q.form("open"); id != "" {
		http.Redirect(q.w, q.r, h.cfg.Prefix+"/users/"+esc(id), http.StatusSeeOther)
		return
	}
	v := usersView{Search: q.form("search"), Filter: q.form("filter")}
	ul, err := h.svc.QueryUsers(q.r.Context(), q.actor(), chat.UserQuery{
		Search: v.Search, Filter: chat.UserFlagFilter(v.Filter), PageToken: q.form("token"), Limit: 20,
	})
	status := http.StatusOK
	if err != nil {
		v.Error, status = h.human(err), http.StatusBadRequest
	} else {
		v.Users = ul.Users
		if ul.Paging != nil {
			link := func(tok string) string {
				if tok == "" {
					return ""
				}
				u := url.Values{"token": {tok}}
				if v.Search != "" {
					u.Set("search", v.Search)
				}
				if v.Filter != "" {
					u.Set("filter", v.Filter)
				}
				return h.cfg.Prefix + "/users?" + u.Encode()
			}
			v.Next, v.Previous = link(ul.Paging.Next), link(ul.Paging.Previous)
		}
	}
	q.render(status, "users", "users", "Users", v)
}

type userView struct {
	User     chat.User
	Roles    []roleChoice
	Metadata string
	Push     pushView
	Blocks   blocksView
}

// blocksView is the user's blocks card: whom the user blocks, oldest
// first.
type blocksView struct {
	Blocks []blockEntry
	Error  string
}

// blockEntry is one blocked user.
type blockEntry struct {
	BlockedID   string
	DisplayName string
	CreatedAt   chat.Time
}

// blocksOf lists the blocks of user id for its page.
func (h *handler) blocksOf(q *req, id string) blocksView {
	bl, err := h.svc.ListBlocks(q.r.Context(), q.actor(), id)
	if err != nil {
		return blocksView{Error: h.human(err)}
	}
	names := make(map[string]string, len(bl.Users))
	for _, u := range bl.Users {
		names[u.UserID] = u.DisplayName
	}
	v := blocksView{Blocks: make([]blockEntry, 0, len(bl.Blocks))}
	for _, b := range bl.Blocks {
		v.Blocks = append(v.Blocks, blockEntry{BlockedID: b.BlockedID, DisplayName: names[b.BlockedID], CreatedAt: b.CreatedAt})
	}
	return v
}

type roleChoice struct {
	ID  string
	Has bool
}

func (h *handler) user(q *req) {
	id := q.pathID("id")
	ul, err := h.svc.GetUser(q.r.Context(), q.actor(), id)
	if err != nil {
		q.render(http.StatusNotFound, "message", "users", "User not found", h.human(err))
		return
	}
	u := ul.Users[0]
	v := userView{User: u}
	if len(u.Metadata) > 0 {
		v.Metadata = funcs["json"].(func(any) string)(u.Metadata)
	}
	if rl, err := h.svc.QueryRoles(q.r.Context(), q.actor(), ""); err == nil {
		for _, r := range rl.Roles {
			if r.RoleID == chat.RoleGlobalAdmin {
				continue
			}
			v.Roles = append(v.Roles, roleChoice{ID: r.RoleID, Has: slices.Contains(u.Roles, r.RoleID)})
		}
	}
	v.Push = h.pushOf(q, id)
	v.Blocks = h.blocksOf(q, id)
	q.render(http.StatusOK, "user", "users", u.DisplayName, v)
}

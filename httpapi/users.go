package httpapi

import (
	"net/http"
	"time"

	chat "github.com/chatengine/chat"
)

// queryUsers serves GET /users.
func (h *handler) queryUsers(w http.ResponseWriter, r *http.Request) error {
	p, err := h.decode(w, r)
	if err != nil {
		return err
	}
	q := chat.UserQuery{
		Search:    p.str("search"),
		Filter:    chat.UserFlagFilter(p.str("filter")),
		PageToken: p.str("pageToken"),
		Limit:     p.integer("limit"),
	}
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.QueryUsers(r.Context(), actor(r), q)
	return h.reply(w, out, err)
}

// getUser serves GET /users/{userId}.
func (h *handler) getUser(w http.ResponseWriter, r *http.Request) error {
	id, err := pathParam(r, "userId")
	if err != nil {
		return err
	}
	out, err := h.svc.GetUser(r.Context(), actor(r), id)
	return h.reply(w, out, err)
}

// updateUser serves PUT /users: a partial update where absent (or null)
// fields stay as they are.
func (h *handler) updateUser(w http.ResponseWriter, r *http.Request) error {
	p, err := h.decode(w, r)
	if err != nil {
		return err
	}
	in := chat.UpdateUserInput{
		UserID:      p.str("userId"),
		DisplayName: p.strPtr("displayName"),
		Roles:       p.strsPtr("roles"),
		Metadata:    p.objectPtr("metadata"),
	}
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.UpdateUser(r.Context(), actor(r), in)
	return h.reply(w, out, err)
}

// globalBan serves POST /users/ban.
func (h *handler) globalBan(w http.ResponseWriter, r *http.Request) error {
	p, err := h.decode(w, r)
	if err != nil {
		return err
	}
	id, del := p.str("userId"), p.boolean("deleteMessages")
	if err := p.Err(); err != nil {
		return err
	}
	return h.done(w, h.svc.GlobalBan(r.Context(), actor(r), id, del))
}

// globalUnban serves POST /users/unban.
func (h *handler) globalUnban(w http.ResponseWriter, r *http.Request) error {
	p, err := h.decode(w, r)
	if err != nil {
		return err
	}
	id := p.str("userId")
	if err := p.Err(); err != nil {
		return err
	}
	return h.done(w, h.svc.GlobalUnban(r.Context(), actor(r), id))
}

// flagUser serves POST /users/{userId}/flags.
func (h *handler) flagUser(w http.ResponseWriter, r *http.Request) error {
	id, err := pathParam(r, "userId")
	if err != nil {
		return err
	}
	out, err := h.svc.FlagUser(r.Context(), actor(r), id)
	return h.reply(w, out, err)
}

// clearUserFlags serves DELETE /users/{userId}/flags.
func (h *handler) clearUserFlags(w http.ResponseWriter, r *http.Request) error {
	id, err := pathParam(r, "userId")
	if err != nil {
		return err
	}
	return h.done(w, h.svc.ClearUserFlags(r.Context(), actor(r), id))
}

// queryRoles serves GET /roles.
func (h *handler) queryRoles(w http.ResponseWriter, r *http.Request) error {
	p, err := h.decode(w, r)
	if err != nil {
		return err
	}
	filter := p.str("filter")
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.QueryRoles(r.Context(), actor(r), filter)
	return h.reply(w, out, err)
}

// putRoles serves PUT /roles.
func (h *handler) putRoles(w http.ResponseWriter, r *http.Request) error {
	p, err := h.decode(w, r)
	if err != nil {
		return err
	}
	ids, perms := p.strs("publicIds"), p.strs("permissions")
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.PutRoles(r.Context(), actor(r), ids, perms)
	return h.reply(w, out, err)
}

// mintUserToken serves POST /users/{userId}/token {ttl?}: ttl in seconds,
// absent for the configured default, 0 for a token without expiry.
func (h *handler) mintUserToken(w http.ResponseWriter, r *http.Request) error {
	id, p, err := h.pathAndParams(w, r, "userId")
	if err != nil {
		return err
	}
	ttl := p.int64Ptr("ttl")
	if err := p.Err(); err != nil {
		return err
	}
	var d time.Duration // the configured default
	if ttl != nil {
		switch {
		case *ttl < 0 || *ttl > maxTokenTTL:
			return badRequest("ttl", "must be 0 (no expiry) to %d seconds", maxTokenTTL)
		case *ttl == 0:
			d = -1 // no expiry
		default:
			d = time.Duration(*ttl) * time.Second
		}
	}
	out, err := h.svc.IssueUserToken(r.Context(), actor(r), id, d)
	return h.reply(w, out, err)
}

// maxTokenTTL is the longest ttl of a minted user token: 10 years.
const maxTokenTTL = 10 * 366 * 24 * 3600

// revokeUserTokens serves POST /users/{userId}/tokens/revoke.
func (h *handler) revokeUserTokens(w http.ResponseWriter, r *http.Request) error {
	id, err := pathParam(r, "userId")
	if err != nil {
		return err
	}
	return h.done(w, h.svc.RevokeUserTokens(r.Context(), actor(r), id))
}

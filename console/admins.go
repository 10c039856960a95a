package console

import (
	"net/http"

	chat "github.com/chatengine/chat"
)

// adminsRoutes serves the admin accounts: creation with a password (the
// API token is shown once), password changes, token rotation (shown
// once) and revocation.
func (h *handler) adminsRoutes(rt *router) {
	rt.get("/admins", h.admins)
	rt.post("/admins", func(q *req) {
		name := q.form("name")
		if q.r.PostForm.Get("password") != q.r.PostForm.Get("password2") {
			q.fail("/admins", "The two passwords differ; type the same password twice.")
			return
		}
		a, token, err := h.svc.CreateAdminWithPassword(q.r.Context(), q.actor(), name, q.form("userId"), q.r.PostForm.Get("password"))
		if err != nil {
			q.done("/admins", err, "")
			return
		}
		h.showToken(q, a.Name, token, "Admin "+a.Name+" created; it can sign in here with its password. Copy its API token now: it is shown only this once.")
	})
	rt.post("/admins/{name}/rotate", func(q *req) {
		name := q.pathID("name")
		token, err := h.svc.RotateAdmin(q.r.Context(), q.actor(), name)
		if err != nil {
			q.done("/admins", err, "")
			return
		}
		h.showToken(q, name, token, "Admin "+name+" has a new API token; the old one no longer works. Copy it now: it is shown only this once.")
	})
	rt.post("/admins/{name}/revoke", func(q *req) {
		name := q.pathID("name")
		if !q.confirmed() {
			q.fail("/admins", "Revoking "+name+" cuts off its token and sessions: tick the box to confirm.")
			return
		}
		err := h.svc.RevokeAdmin(q.r.Context(), q.actor(), name)
		if err == nil && name == q.admin.Name {
			h.clearCookie(q.w, q.r, sessionCookie)
			h.setFlash(q.w, q.r, "ok", "You revoked your own account and are signed out.")
			http.Redirect(q.w, q.r, h.cfg.Prefix+"/signin", http.StatusSeeOther)
			return
		}
		q.done("/admins", err, "Admin "+name+" is revoked: its token, sessions and sign-in no longer work.")
	})
	rt.post("/admins/{name}/password", func(q *req) {
		name := q.pathID("name")
		if q.r.PostForm.Get("password") != q.r.PostForm.Get("password2") {
			q.fail("/admins", "The two passwords differ; type the same password twice.")
			return
		}
		err := h.svc.SetAdminPassword(q.r.Context(), name, q.r.PostForm.Get("password"))
		if err == nil && name == q.admin.Name {
			// Changing a password ends the admin's sessions, this one too.
			h.clearCookie(q.w, q.r, sessionCookie)
			h.setFlash(q.w, q.r, "ok", "Your password is changed; sign in with the new one.")
			http.Redirect(q.w, q.r, h.cfg.Prefix+"/signin", http.StatusSeeOther)
			return
		}
		q.done("/admins", err, "The password of "+name+" is set; its open sessions were ended.")
	})
}

type adminsView struct {
	Admins    []chat.Admin
	TokenFor  string
	Token     string
	Error     string
	MinLength int
}

func (h *handler) adminList(q *req) adminsView {
	v := adminsView{MinLength: chat.MinAdminPasswordChars}
	as, err := h.svc.ListAdmins(q.r.Context())
	if err != nil {
		v.Error = h.human(err)
	}
	v.Admins = as
	return v
}

func (h *handler) admins(q *req) {
	q.render(http.StatusOK, "admins", "admins", "Admins", h.adminList(q))
}

// showToken answers the POST itself with the token, which is never kept.
func (h *handler) showToken(q *req, name, token, text string) {
	v := h.adminList(q)
	v.TokenFor, v.Token = name, token
	h.renderPage(q.w, q.r, http.StatusOK, "admins", view{
		Title: "Admins", Nav: "admins", Admin: q.admin, CSRF: q.sess.CSRFToken, Data: v,
		Flash: &flash{Kind: "ok", Text: text},
	})
}

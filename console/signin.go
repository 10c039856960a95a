package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strconv"

	chat "github.com/chatengine/chat"
)

// signinRoutes serves the sign-in and sign-out, and the bare prefix.
func (h *handler) signinRoutes() {
	h.mux.HandleFunc("GET /signin", h.signinPage)
	h.mux.HandleFunc("POST /signin", h.signin)
	rt := &router{h: h}
	rt.post("/signout", func(q *req) {
		if err := h.svc.EndAdminSession(q.r.Context(), sessionID(q.r)); err != nil {
			q.done("/", err, "")
			return
		}
		h.clearCookie(q.w, q.r, sessionCookie)
		h.setFlash(q.w, q.r, "ok", "You are signed out.")
		http.Redirect(q.w, q.r, h.cfg.Prefix+"/signin", http.StatusSeeOther)
	})
}

// sessionID returns the session id the request's cookie carries.
func sessionID(r *http.Request) string {
	if c, err := r.Cookie(sessionCookie); err == nil {
		return c.Value
	}
	return ""
}

// signinView is the data of the sign-in page.
type signinView struct {
	Name  string
	Token string // the pre-session form token (double-submitted in a cookie)
}

// signinPage shows the sign-in form; a signed-in admin goes to the
// dashboard. The form carries a random token that is also set as a
// cookie: a sign-in posted by another site (which can set neither) is
// refused, so nobody can sign a browser in to an account of theirs.
func (h *handler) signinPage(w http.ResponseWriter, r *http.Request) {
	if id := sessionID(r); id != "" {
		if _, _, err := h.svc.AdminSessionFor(r.Context(), id, h.cfg.IdleTimeout); err == nil {
			http.Redirect(w, r, h.cfg.Prefix+"/", http.StatusSeeOther)
			return
		}
	}
	h.showSignin(w, r, http.StatusOK, "", nil)
}

func (h *handler) showSignin(w http.ResponseWriter, r *http.Request, status int, name string, f *flash) {
	token := newFormToken()
	h.setCookie(w, r, signinCookie, token, 3600)
	h.renderPage(w, r, status, "signin", view{Title: "Sign in", Flash: f, Data: signinView{Name: name, Token: token}})
}

func newFormToken() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// signin checks the name and password and opens a session. After
// MaxFailures failures for the name or from the address within the
// window, attempts answer 429 with Retry-After (no password is checked).
func (h *handler) signin(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		h.refuse(w, r, http.StatusForbidden, "Refused", "This sign-in was sent from another site.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		h.refuse(w, r, http.StatusBadRequest, "Refused", "The sign-in form could not be read.")
		return
	}
	c, err := r.Cookie(signinCookie)
	form := r.PostForm.Get("signin")
	if err != nil || form == "" || subtle.ConstantTimeCompare([]byte(c.Value), []byte(form)) != 1 {
		h.showSignin(w, r, http.StatusForbidden, r.PostForm.Get("name"), &flash{Kind: "error",
			Text: "The sign-in form was out of date (or sent from another site); try again."})
		return
	}
	name := r.PostForm.Get("name")
	password := r.PostForm.Get("password")
	keys := []string{"name:" + name, "addr:" + h.cfg.ClientAddr(r)}
	if wait := h.throttle.blocked(keys...); wait > 0 {
		secs := retryAfter(wait)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		h.showSignin(w, r, http.StatusTooManyRequests, name, &flash{Kind: "error",
			Text: "Too many failed sign-ins for this name or from this address. Try again in " + strconv.Itoa((secs+59)/60) + " minute(s)."})
		return
	}
	a, _, id, err := h.svc.SignInAdmin(r.Context(), name, password)
	if err != nil {
		if chat.ErrorCode(err) == chat.CodeUnauthorized {
			h.throttle.fail(keys...)
			h.showSignin(w, r, http.StatusUnauthorized, name, &flash{Kind: "error", Text: h.human(err) + "."})
			return
		}
		h.showSignin(w, r, http.StatusServiceUnavailable, name, &flash{Kind: "error", Text: h.human(err)})
		return
	}
	if _, err := h.svc.PruneAdminSessions(r.Context(), h.cfg.IdleTimeout); err != nil {
		h.log.Warn("console: pruning idle sessions", "err", err)
	}
	h.clearCookie(w, r, signinCookie)
	h.setCookie(w, r, sessionCookie, id, 0)
	h.setFlash(w, r, "ok", "Welcome, "+a.Name+".")
	http.Redirect(w, r, h.cfg.Prefix+"/", http.StatusSeeOther)
}

package console

import (
	"bytes"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/stream"
)

//go:embed templates static
var embedded embed.FS

// ContentSecurityPolicy is the policy of every response of the panel: its
// own script, style and images only (message images come from the API on
// the same origin), forms posting to the same origin only, no inline
// script or style, no framing.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// Cookie names.
const (
	sessionCookie = "chat_admin_session"
	flashCookie   = "chat_admin_flash"
	signinCookie  = "chat_admin_signin"
)

// maxFormBytes bounds the body of every form the panel accepts.
const maxFormBytes = 1 << 20

// Config configures the panel. Its zero value serves the panel mounted at
// /admin with 30-minute sessions.
type Config struct {
	// Prefix is the path where the host mounts the handler (with
	// http.StripPrefix); links and cookies use it. Default "/admin".
	Prefix string
	// IdleTimeout ends a session after this long without a request.
	// Default chat.DefaultAdminSessionIdle (30 min).
	IdleTimeout time.Duration
	// SecureCookies marks the cookies Secure even on plain HTTP requests
	// (for a server behind a proxy that ends TLS). Cookies of requests
	// that arrive over TLS are always Secure. Default false.
	SecureCookies bool
	// Events makes the channel page live from the event stream: the page
	// listens to GET /channels/{id}/events (Server-Sent Events from a
	// subscription to that channel's events) and refreshes its messages
	// when one arrives. Pass the *stream.Hub the API serves /events from.
	// Optional: without it the page asks for new messages every
	// PollInterval instead.
	Events Subscriber
	// EventPing is how often the channel page's event stream sends a
	// keep-alive comment and checks that the session is still valid
	// (the stream ends when it is not). Default 25 s.
	EventPing time.Duration
	// PollInterval is how often an open channel page asks for new
	// messages when there is no Events. Default 2 s.
	PollInterval time.Duration
	// MaxFailures failed sign-ins for one name or from one address within
	// FailureWindow make further attempts answer 429 until the window has
	// passed. Defaults 10 and 10 minutes. The count is kept per process.
	MaxFailures   int
	FailureWindow time.Duration
	// ClientAddr returns the address a sign-in is counted against.
	// Default: the host of the request's RemoteAddr (set it when a trusted
	// proxy forwards the client's address).
	ClientAddr func(r *http.Request) string
	// Now returns the current time for the sign-in throttle. Default
	// time.Now.
	Now func() time.Time
	// Logger receives unexpected failures. Default slog.Default().
	Logger *slog.Logger
	// PreSendHook describes the pre-send hook the Service was given
	// (chat.Config.PreSendHook), for the help of the blacklist and
	// whitelist page; the panel only shows it. Default nil: the page
	// says that no pre-send hook is configured.
	PreSendHook *PreSendHookInfo
}

// PreSendHookInfo describes a server's pre-send hook for the panel's help
// text (see docs/api.md, "The pre-send hook").
type PreSendHookInfo struct {
	// URL is the hook's endpoint; the page shows its host only. Default
	// empty: the page says a hook is configured without naming it.
	URL string
	// Timeout bounds one call. Default 0, shown as
	// webhook.DefaultPreSendTimeout (the hook's own default).
	Timeout time.Duration
	// RejectOnError is the policy when the hook gives no usable answer:
	// true refuses the message. Default false: the message is stored.
	RejectOnError bool
}

// handler is the panel.
type handler struct {
	svc      *chat.Service
	cfg      Config
	log      *slog.Logger
	pages    map[string]*template.Template
	throttle *throttle
	nav      []navItem
	mux      *http.ServeMux
}

// New returns the panel's handler over svc. It serves paths relative to
// where it is mounted; mount it with a trailing slash and strip the
// prefix, for example
// mux.Handle("/admin/", http.StripPrefix("/admin", console.New(svc, console.Config{}))).
func New(svc *chat.Service, cfg Config) http.Handler {
	if cfg.Prefix == "" {
		cfg.Prefix = "/admin"
	}
	cfg.Prefix = "/" + strings.Trim(cfg.Prefix, "/")
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = chat.DefaultAdminSessionIdle
	}
	if hub, ok := cfg.Events.(*stream.Hub); ok && hub == nil {
		cfg.Events = nil // a nil hub is no hub: the page polls
	}
	if cfg.EventPing <= 0 {
		cfg.EventPing = 25 * time.Second
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 2 * time.Second
	}
	if cfg.MaxFailures <= 0 {
		cfg.MaxFailures = 10
	}
	if cfg.FailureWindow <= 0 {
		cfg.FailureWindow = 10 * time.Minute
	}
	if cfg.ClientAddr == nil {
		cfg.ClientAddr = remoteHost
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	h := &handler{
		svc:      svc,
		cfg:      cfg,
		log:      cfg.Logger,
		pages:    parseTemplates(),
		throttle: newThrottle(cfg.MaxFailures, cfg.FailureWindow, cfg.Now),
		mux:      http.NewServeMux(),
	}
	assets, err := fs.Sub(embedded, "static")
	if err != nil {
		panic(err) // the embedded tree is part of the binary
	}
	files := http.FileServerFS(assets)
	for _, name := range []string{"app.js", "style.css", "favicon.svg"} {
		h.mux.Handle("GET /static/"+name, http.StripPrefix("/static", files))
	}
	h.signinRoutes()
	rt := &router{h: h}
	for _, p := range pages {
		p.routes(h, rt)
		if p.Title != "" {
			h.nav = append(h.nav, navItem{Key: p.Key, Title: p.Title, Href: cfg.Prefix + p.Path})
		}
	}
	return secure(h.mux)
}

// remoteHost returns the host part of r.RemoteAddr.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// parseTemplates parses every page template: each file of templates/
// other than layout.html defines "content" (and whatever it needs) on a
// copy of the layout, so pages never collide on names.
func parseTemplates() map[string]*template.Template {
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(embedded, "templates/layout.html"))
	names, err := fs.Glob(embedded, "templates/*.html")
	if err != nil {
		panic(err)
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		t := template.Must(template.Must(layout.Clone()).ParseFS(embedded, n))
		out[base] = t
	}
	return out
}

// secure sets the headers every response of the panel carries.
func secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", ContentSecurityPolicy)
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("Cross-Origin-Opener-Policy", "same-origin")
		if !strings.HasPrefix(r.URL.Path, "/static/") {
			hd.Set("Cache-Control", "no-store")
		} else {
			hd.Set("Cache-Control", "no-cache")
		}
		next.ServeHTTP(w, r)
	})
}

// req is one request of a signed-in admin.
type req struct {
	w     http.ResponseWriter
	r     *http.Request
	h     *handler
	admin *chat.Admin
	sess  *chat.AdminSession
}

// actor is the chat user the admin acts as.
func (q *req) actor() string { return q.admin.UserID }

// form returns a trimmed form value.
func (q *req) form(name string) string { return strings.TrimSpace(q.r.FormValue(name)) }

// router registers the routes of pages, behind the session check (and
// the CSRF check for POST).
type router struct{ h *handler }

// get serves a page to signed-in admins.
func (rt *router) get(pattern string, fn func(q *req)) {
	rt.h.mux.HandleFunc("GET "+pattern, func(w http.ResponseWriter, r *http.Request) {
		q, ok := rt.h.authenticate(w, r, true)
		if !ok {
			return
		}
		fn(q)
	})
}

// live serves what a page's script asks for by itself (a refreshed list,
// an event stream) to signed-in admins, without extending the session:
// an open page left alone does not keep its session alive.
func (rt *router) live(pattern string, fn func(q *req)) {
	rt.h.mux.HandleFunc("GET "+pattern, func(w http.ResponseWriter, r *http.Request) {
		q, ok := rt.h.authenticate(w, r, false)
		if !ok {
			return
		}
		fn(q)
	})
}

// post serves a state-changing request of a signed-in admin: the body is
// a form at most maxFormBytes long that carries the session's CSRF token
// in the field "csrf", and no cross-site browser sends it. Anything else
// is 403 and changes nothing. The session cookie is checked before the
// body is read: a request from a browser that is not signed in is
// answered at once, its body unread (see unread).
func (rt *router) post(pattern string, fn func(q *req)) {
	rt.h.mux.HandleFunc("POST "+pattern, func(w http.ResponseWriter, r *http.Request) {
		if !sameOrigin(r) {
			unread(w)
			rt.h.refuse(w, r, http.StatusForbidden, "Refused", "This form was sent from another site, so nothing was changed.")
			return
		}
		q, ok := rt.h.authenticate(w, r, true)
		if !ok {
			return
		}
		// q.r carries the admin in its context: the form is read there.
		q.r.Body = http.MaxBytesReader(w, q.r.Body, maxFormBytes)
		if err := q.r.ParseForm(); err != nil {
			rt.h.refuse(w, q.r, http.StatusBadRequest, "Refused", "The form could not be read (is it larger than 1 MiB?), so nothing was changed.")
			return
		}
		if !q.sess.CheckCSRF(q.r.PostForm.Get("csrf")) {
			rt.h.refuse(w, r, http.StatusForbidden, "Refused", "The form's security token is missing or out of date, so nothing was changed. Reload the page and try again.")
			return
		}
		fn(q)
	})
}

// sameOrigin refuses requests that a browser marks as cross-site:
// Sec-Fetch-Site cross-site or same-site, or, from browsers that do not
// send that header, an Origin header naming another host. (Sec-Fetch-Site
// is computed by the browser, so it holds behind a proxy that rewrites the
// Host header, where comparing Origin with Host would not.) Requests
// without these headers (non-browser clients) go on to the CSRF token
// check.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return false
	case "same-origin", "none":
		return true
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || o == "null" || !strings.EqualFold(u.Host, r.Host) {
			return false
		}
	}
	return true
}

// authenticate resolves the session cookie; touch records the request
// (extending the session). Without a valid session a page request is
// sent to the sign-in page, a fetch or an event stream gets 401.
func (h *handler) authenticate(w http.ResponseWriter, r *http.Request, touch bool) (*req, bool) {
	c, err := r.Cookie(sessionCookie)
	if err == nil {
		resolve := h.svc.AdminSessionFor
		if !touch {
			resolve = h.svc.CheckAdminSession
		}
		a, sess, err := resolve(r.Context(), c.Value, h.cfg.IdleTimeout)
		if err == nil {
			return &req{w: w, r: r, h: h, admin: a, sess: sess}, true
		}
		if chat.ErrorCode(err) != chat.CodeUnauthorized {
			h.log.Error("console: reading the session", "err", err)
			http.Error(w, "The server could not check your session; try again.", http.StatusServiceUnavailable)
			return nil, false
		}
		h.clearCookie(w, r, sessionCookie)
	}
	if r.Method == http.MethodGet && r.Header.Get("X-Requested-With") != "fetch" && !wantsEventStream(r) {
		h.setFlash(w, r, "info", "Please sign in.")
		http.Redirect(w, r, h.cfg.Prefix+"/signin", http.StatusSeeOther)
		return nil, false
	}
	if r.Method != http.MethodGet {
		unread(w)
	}
	h.refuse(w, r, http.StatusUnauthorized, "Signed out", "You are not signed in, or your session ended, so nothing was changed. Sign in again.")
	return nil, false
}

// unread prepares the answer to a request whose body the panel will not
// read (a refusal before it): the connection closes after the answer,
// and the server stops waiting for the body at once. Without this, net/http
// reads up to 256 KiB of a body left unread to reuse the connection, so a
// client sending its body slowly would hold the connection until the
// server's read timeout.
func unread(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	// A writer that cannot set deadlines (ErrNotSupported) leaves the
	// server's own read timeout in charge; the answer is the same.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// refuse answers a request that changed nothing with a page saying why,
// with a link to the sign-in page.
func (h *handler) refuse(w http.ResponseWriter, r *http.Request, status int, title, msg string) {
	h.renderPage(w, r, status, "message", view{Title: title, Flash: &flash{Kind: "error", Text: msg}})
}

// secureRequest reports whether cookies of r are marked Secure.
func (h *handler) secureRequest(r *http.Request) bool {
	return h.cfg.SecureCookies || r.TLS != nil
}

// setCookie sets an HttpOnly, SameSite=Strict cookie scoped to the panel.
func (h *handler) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name:     name,
		Value:    value,
		Path:     h.cfg.Prefix + "/",
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   h.secureRequest(r),
		SameSite: http.SameSiteStrictMode,
	})
}

func (h *handler) clearCookie(w http.ResponseWriter, r *http.Request, name string) {
	h.setCookie(w, r, name, "", -1)
}

// flash is a one-time message shown on the next page.
type flash struct {
	Kind string `json:"k"` // ok, error or info
	Text string `json:"t"`
}

// setFlash keeps a message for the next page in a short-lived cookie.
func (h *handler) setFlash(w http.ResponseWriter, r *http.Request, kind, text string) {
	if len(text) > 1500 {
		text = strings.ToValidUTF8(text[:1500], "") + "…"
	}
	b, _ := json.Marshal(flash{Kind: kind, Text: text})
	h.setCookie(w, r, flashCookie, base64.RawURLEncoding.EncodeToString(b), 120)
}

// takeFlash reads and clears the message left for this page.
func (h *handler) takeFlash(w http.ResponseWriter, r *http.Request) *flash {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return nil
	}
	h.clearCookie(w, r, flashCookie)
	b, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil {
		return nil
	}
	var f flash
	if json.Unmarshal(b, &f) != nil || f.Text == "" {
		return nil
	}
	switch f.Kind {
	case "ok", "error", "info":
	default:
		f.Kind = "info"
	}
	return &f
}

// view is what the layout renders around a page.
type view struct {
	Title  string
	Nav    string // the key of the current navigation entry
	Prefix string
	Admin  *chat.Admin
	CSRF   string
	Flash  *flash
	Pages  []navItem
	PollMs int64
	Data   any
}

// navItem is one entry of the navigation.
type navItem struct {
	Key, Title, Href string
}

// render writes the page name (a file of templates/) with data.
func (q *req) render(status int, name, nav, title string, data any) {
	q.h.renderPage(q.w, q.r, status, name, view{
		Title: title, Nav: nav, Admin: q.admin, CSRF: q.sess.CSRFToken, Data: data,
	})
}

func (h *handler) renderPage(w http.ResponseWriter, r *http.Request, status int, name string, v view) {
	t, ok := h.pages[name]
	if !ok {
		h.log.Error("console: no template", "name", name)
		http.Error(w, "Internal error", http.StatusInternalServerError)
		return
	}
	v.Prefix = h.cfg.Prefix
	v.PollMs = h.cfg.PollInterval.Milliseconds()
	if v.Flash == nil {
		v.Flash = h.takeFlash(w, r)
	}
	if v.Admin != nil {
		v.Pages = h.nav
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", v); err != nil {
		h.log.Error("console: rendering", "page", name, "err", err)
		http.Error(w, "Internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fragment writes one named template of a page alone (the live parts
// that the page's script fetches).
func (q *req) fragment(name, block string, data any) {
	t := q.h.pages[name]
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, block, view{Prefix: q.h.cfg.Prefix, CSRF: q.sess.CSRFToken, Admin: q.admin, Data: data}); err != nil {
		q.h.log.Error("console: rendering", "fragment", block, "err", err)
		http.Error(q.w, "Internal error", http.StatusInternalServerError)
		return
	}
	q.w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = q.w.Write(buf.Bytes())
}

// done ends an action: the outcome becomes a flash message and the
// browser is sent to path (under the prefix) with a GET.
func (q *req) done(path string, err error, okText string) {
	if err != nil {
		q.h.setFlash(q.w, q.r, "error", q.h.human(err))
	} else {
		q.h.setFlash(q.w, q.r, "ok", okText)
	}
	http.Redirect(q.w, q.r, q.h.cfg.Prefix+path, http.StatusSeeOther)
}

// fail is done for a refused input, before anything was tried.
func (q *req) fail(path, text string) {
	q.h.setFlash(q.w, q.r, "error", text)
	http.Redirect(q.w, q.r, q.h.cfg.Prefix+path, http.StatusSeeOther)
}

// human returns the message of err that a person can act on: the API's
// own message, never a bare code or an internal detail.
func (h *handler) human(err error) string {
	var ce *chat.Error
	if errors.As(err, &ce) && ce.Code != chat.CodeInternal && ce.Message != "" {
		return ce.Message
	}
	if ce != nil && ce.Code == chat.CodeUnavailable {
		return "The database cannot be reached right now; try again shortly."
	}
	h.log.Error("console: unexpected failure", "err", err)
	return "Something went wrong on the server; try again (the server log has the details)."
}

// confirmed reports whether the form's confirmation box was ticked.
func (q *req) confirmed() bool { return q.r.PostForm.Get("confirm") == "yes" }

// list splits a form field holding several values separated by commas,
// spaces or new lines.
func list(s string) []string {
	f := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' || r == ' ' || r == '\t' })
	if len(f) == 0 {
		return nil
	}
	return f
}

// lines splits a form field holding one value per line.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// pathID returns a path parameter, unescaped by the mux.
func (q *req) pathID(name string) string { return q.r.PathValue(name) }

// esc escapes an id for use as one path segment of a link.
func esc(id string) string { return url.PathEscape(id) }

// With returns a copy of v carrying data, for templates that render a
// part of a page with the layout's fields (prefix, CSRF token).
func (v view) With(data any) view {
	v.Data = data
	return v
}

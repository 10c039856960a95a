package chatpage

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"strings"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/httpapi"
)

//go:embed static
var static embed.FS

// ContentSecurityPolicy is the policy of every response of the page: its
// own scripts, styles and images only (the images of messages are served
// by the API on the same origin), requests to the same origin only (in
// CSP Level 3, which Chromium, Firefox and Safari follow, 'self' in
// connect-src also admits WebSocket connections to the same host and
// port: ws: from an http: page, wss: from an https: one), no inline
// script or style, no framing.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"

// Config configures the page. Its zero value serves the page for an API
// mounted at /api/v2 with sign-in by pasted token.
type Config struct {
	// APIPrefix is the path, on the page's own origin, where the HTTP API
	// is mounted. Default "/api/v2" (chat.DefaultAPIPrefix).
	APIPrefix string
	// DevSignIn, when not nil, turns on the development sign-in: the page
	// offers a box for a user id, and POST dev-token {"userId":"..."}
	// answers with the token DevSignIn returns, shaped as the API's
	// POST /users/:userId/token ({"token","userId","expiresAt"}); a
	// closure over Service.IssueUserToken fits. Anybody who can reach the page can then act as any user:
	// use it only on a machine of your own. Default nil (off: the page
	// asks for a token pasted by the person).
	DevSignIn func(ctx context.Context, userID string) (*chat.UserToken, error)
	// Logger receives the failures of the development sign-in. Default
	// slog.Default().
	Logger *slog.Logger
}

// maxDevTokenBody bounds the body of a development sign-in request.
const maxDevTokenBody = 4 << 10

// New returns the page's handler. It serves paths relative to where it is
// mounted: the page at "/", its assets beside it, and, with
// Config.DevSignIn, POST /dev-token. Mount it with a trailing slash (the
// page links its assets relatively), for example
// mux.Handle("/chat/", http.StripPrefix("/chat", chatpage.New(cfg))).
func New(cfg Config) http.Handler {
	if cfg.APIPrefix == "" {
		cfg.APIPrefix = chat.DefaultAPIPrefix
	}
	cfg.APIPrefix = strings.TrimRight(cfg.APIPrefix, "/")
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	assets, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is part of the binary
	}
	page := template.Must(template.ParseFS(assets, "index.html"))
	var buf bytes.Buffer
	if err := page.Execute(&buf, map[string]any{
		"APIPrefix": cfg.APIPrefix,
		"DevSignIn": cfg.DevSignIn != nil,
	}); err != nil {
		panic(err) // the template and its data are fixed
	}
	index := buf.Bytes()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(index)
	})
	files := http.FileServerFS(assets)
	for _, name := range []string{"app.js", "style.css", "favicon.svg"} {
		mux.Handle("GET /"+name, cacheRevalidate(files))
	}
	if cfg.DevSignIn != nil {
		mux.Handle("POST /dev-token", devToken(cfg))
	}
	return secure(mux)
}

// secure sets the headers every response of the page carries.
func secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

// cacheRevalidate makes browsers check the assets again on every load, so
// a new binary's page never runs an old script.
func cacheRevalidate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		next.ServeHTTP(w, r)
	})
}

// devTokenRequest is the body of POST /dev-token.
type devTokenRequest struct {
	UserID string `json:"userId"`
}

// devToken serves the development sign-in. It takes JSON only: a form
// that another site makes a browser submit cannot reach it.
func devToken(cfg Config) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fail := func(err error) { httpapi.WriteError(w, r, err, cfg.Logger) }
		mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if mt != "application/json" {
			fail(chat.Errorf(chat.CodeUnsupportedMedia, "send the body as application/json: {\"userId\":\"...\"}"))
			return
		}
		var in devTokenRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxDevTokenBody))
		if err := dec.Decode(&in); err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				fail(chat.Errorf(chat.CodeTooLarge, "the body is larger than %d bytes", maxDevTokenBody))
				return
			}
			fail(chat.InvalidField("userId", "the body must be a JSON object {\"userId\":\"...\"}"))
			return
		}
		if in.UserID == "" {
			fail(chat.InvalidField("userId", "is required"))
			return
		}
		tok, err := cfg.DevSignIn(r.Context(), in.UserID)
		if err != nil {
			fail(err)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(tok)
	})
}

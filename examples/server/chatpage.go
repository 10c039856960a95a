package main

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/chatpage"
	"github.com/chatengine/chat/httpapi"
)

// mountChatPage serves the end users' chat page at /chat/ (package
// chatpage), talking to the API mounted at /api/v2. With
// -unsafe-dev-sign-in the page also signs anybody in as any user id (POST
// /chat/dev-token, counted against anon, the bucket of its client
// address).
func mountChatPage(r chi.Router, svc *chat.Service, cfg *config, anon *httpapi.AnonLimiter, log *slog.Logger) {
	pc := chatpage.Config{APIPrefix: "/api/v2", Logger: log}
	if cfg.unsafeDevSignIn {
		pc.DevSignIn = devSignIn(svc)
		log.Warn("UNSAFE: -unsafe-dev-sign-in lets anybody who reaches /chat/ act as any user; use it on your own machine only")
	}
	page := http.StripPrefix("/chat", chatpage.New(pc))
	signin := anon.Limit(page)
	r.Handle("/chat/*", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost && req.URL.Path == "/chat/dev-token" {
			signin.ServeHTTP(w, req)
			return
		}
		page.ServeHTTP(w, req)
	}))
	r.Get("/chat", func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, "/chat/", http.StatusMovedPermanently)
	})
}

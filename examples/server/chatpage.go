package main

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/chatpage"
)

// mountChatPage serves the end users' chat page at /chat/ (package
// chatpage), talking to the API mounted at /api/v2. With
// -unsafe-dev-sign-in the page also signs anybody in as any user id.
func mountChatPage(r chi.Router, svc *chat.Service, cfg *config, log *slog.Logger) {
	pc := chatpage.Config{APIPrefix: "/api/v2", Logger: log}
	if cfg.unsafeDevSignIn {
		pc.DevSignIn = devSignIn(svc)
		log.Warn("UNSAFE: -unsafe-dev-sign-in lets anybody who reaches /chat/ act as any user; use it on your own machine only")
	}
	page := http.StripPrefix("/chat", chatpage.New(pc))
	r.Handle("/chat/*", page)
	r.Get("/chat", func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, "/chat/", http.StatusMovedPermanently)
	})
}

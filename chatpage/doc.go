// Package chatpage serves a small chat page for end users: a person signs
// in as a user, sees their channels with unread counts, reads and sends
// messages, uploads images and sees them through their signed links,
// creates and joins channels.
//
// The page is plain HTML, CSS and JavaScript embedded in the binary; it
// talks to the HTTP API (package httpapi) with a user token, as any client
// of the API would. It is served with a strict Content-Security-Policy
// (script-src 'self', no inline script) and shows every user-provided
// string as text, never as markup.
//
// Mount the handler where the page should live, for example
//
//	r.Mount("/chat", chatpage.New(chatpage.Config{APIPrefix: "/api/v2"}))
//	mux.Handle("/chat/", http.StripPrefix("/chat", chatpage.New(cfg)))
//
// Sign-in: the page asks the person for a user token, which the host
// application hands over (it mints one with Service.MintUserToken or any
// JWT library). For development, Config.DevSignIn lets anybody who can
// reach the page sign in as any user id: never enable it where the page is
// reachable by others.
//
// Until an event stream is available the page polls the API (by default
// every 2 s) for new messages and unread counts.
package chatpage

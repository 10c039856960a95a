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
// application hands over (it mints one with Service.IssueUserToken or any
// JWT library). For development, Config.DevSignIn lets anybody who can
// reach the page sign in as any user id: never enable it where the page is
// reachable by others.
//
// The page is live on the event stream (GET /events of the API, which
// httpapi serves when its Config.Events is set): it opens a WebSocket with
// a ticket from POST /events/ticket and shows new messages, edits and
// deletions and "Alice is typing…" as they happen, and updates the unread
// counts of the other channels. The person's own read markers come on the
// stream: when they read a channel in another tab or on another device,
// this page re-reads that channel's unread count, so its badge and the
// tab's title clear. The stream carries no read markers of others: "Seen
// by Bob" (under the person's own latest message that another member has
// read) comes from the stored markers, read with GET /channel/{id} when a
// channel opens, on each connection and when a message arrives in the
// open channel. It sends
// typing (at most once per 3 s while the person types) and marks the open
// channel read when it shows new messages in a visible tab. When the
// connection ends it reconnects with backoff (0.5 s doubling to 10 s,
// jittered), with a new ticket and after=<the last event id seen>; when
// the server cannot resume (resumed:false) it reads the channels and the
// open channel's messages again. It shows "Reconnecting…" meanwhile, and
// stops when the user is banned (close code 4003). It never polls; only
// the list of public channels to join, which no event announces, is read
// on each connection and by its Refresh button.
package chatpage

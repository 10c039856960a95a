// Package console is the admin panel: a web console over a chat.Service,
// served as an http.Handler with server-rendered pages (html/template) and
// a small script of its own, all embedded in the binary.
//
// Admins sign in with their name and password (chat.Service.SignInAdmin;
// set one with the example server's `admin passwd NAME`). A session is a
// record in the store, named by a random id in an HttpOnly, SameSite=Strict
// cookie (Secure under TLS), that ends after Config.IdleTimeout without a
// request, on sign-out, on a password change and when the admin is
// revoked; because it lives in the store, every process sharing the store
// knows it. Every state-changing request is a POST form carrying the
// session's CSRF token; a missing or wrong token is 403 and changes
// nothing. Every response carries a Content-Security-Policy without inline
// script or style, frame-ancestors 'none' and X-Frame-Options DENY. After
// Config.MaxFailures failed sign-ins for one name or from one address
// within Config.FailureWindow, sign-in answers 429 with Retry-After until
// the window has passed (counted per process).
//
// The panel acts as the signed-in admin's chat user, through the same
// Service methods as the HTTP API, so the same rules and error messages
// apply; the audit log names that user as the actor of every change made
// here, the admin accounts' included.
// The audit log page reads that log; the rules page's "Test a message"
// box is a dry run (Service.CheckMessage); a user's page can delete the
// user's messages (Service.PurgeUserMessages) after a confirmation step.
//
// A channel's page is live when Config.Events is set (the example server
// passes its *stream.Hub): its script listens to the channel's events as
// Server-Sent Events (GET /channels/{id}/events, a Hub subscription to that
// channel as an admin, resumed from Last-Event-ID) and re-reads the
// server-rendered message list when one arrives. The stream pings every
// Config.EventPing and checks the session then, and ends when the session
// has ended. Neither the stream nor the list's refreshes extend the
// session: an open page left alone signs out after Config.IdleTimeout. Without Config.Events the page polls the
// message list every Config.PollInterval. The channels page searches by a
// prefix of the channel id or of a word of the name (ChannelQuery.Search).
//
// Adding an area: write one file with a routes method (see channels.go),
// its template in templates/ (defining "content"), and add one entry to
// the pages list in nav.go.
package console

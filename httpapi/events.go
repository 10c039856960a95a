package httpapi

import (
	"context"
	"net/http"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/stream"
)

// ticketOrAuth lets a request with a ticket parameter through when the
// ticket is valid (single use: it is spent here), with its caller in the
// context; a used, expired or unknown ticket is 401 (400100). Any other
// request goes through auth.
func (h *handler) ticketOrAuth(next http.Handler) http.Handler {
	authed := h.auth(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !r.URL.Query().Has("ticket") {
			authed.ServeHTTP(w, r)
			return
		}
		if h.cfg.Events == nil {
			h.writeError(w, r, errNoStream)
			return
		}
		c, ok, err := h.cfg.Events.RedeemTicket(r.Context(), r.URL.Query().Get("ticket"))
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		if !ok {
			h.writeError(w, r, chat.Errorf(chat.CodeUnauthorized, "ticket: unknown, used or expired; ask POST /events/ticket for a new one"))
			return
		}
		if ri := infoFrom(r.Context()); ri != nil {
			ri.ticketed = &c
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), infoKey, &requestInfo{ticketed: &c})))
	})
}

var errNoStream = chat.Errorf(chat.CodeNotFound, "the event stream is not enabled on this server")

// streamCaller returns who opens a stream, with the access it
// authenticated with: the ticket's caller, the authenticated end user
// (its token's iat and exp), or the authenticated admin (as its user; its
// account and token).
func (h *handler) streamCaller(r *http.Request) (stream.Caller, error) {
	ri := infoFrom(r.Context())
	switch {
	case ri != nil && ri.ticketed != nil:
		return *ri.ticketed, nil
	case ri != nil && ri.user != nil:
		token, _ := bearer(r.Header.Get("Authorization"))
		a, err := h.svc.UserTokenAccess(token)
		if err != nil {
			return stream.Caller{}, err
		}
		return stream.Caller{UserID: ri.user.UserID, Access: &a}, nil
	case ri != nil && ri.admin != nil:
		a := chat.AdminAccess(ri.admin)
		return stream.Caller{UserID: ri.admin.UserID, Admin: true, Access: &a}, nil
	}
	return stream.Caller{UserID: actor(r), Admin: true}, nil
}

// events serves GET /events: a WebSocket, or Server-Sent Events with
// Accept: text/event-stream.
func (h *handler) events(w http.ResponseWriter, r *http.Request) error {
	if h.cfg.Events == nil {
		return errNoStream
	}
	c, err := h.streamCaller(r)
	if err != nil {
		return err
	}
	return h.cfg.Events.ServeEvents(w, r, c)
}

type ticketBody struct {
	Ticket    string    `json:"ticket"`
	ExpiresAt chat.Time `json:"expiresAt"`
}

// eventTicket serves POST /events/ticket: a single-use ticket, valid 60 s,
// that opens the caller's event stream without an Authorization header.
func (h *handler) eventTicket(w http.ResponseWriter, r *http.Request) error {
	if h.cfg.Events == nil {
		return errNoStream
	}
	c, err := h.streamCaller(r)
	if err != nil {
		return err
	}
	t, exp, err := h.cfg.Events.IssueTicket(r.Context(), c)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ticketBody{Ticket: t, ExpiresAt: chat.NewTime(exp.Truncate(time.Millisecond))})
	return nil
}

package stream

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	chat "github.com/chatengine/chat"
)

// WebSocket close codes of the stream.
const (
	// CloseTooSlow closes a connection that fell more than
	// Config.QueueSize events behind; the client may resume.
	CloseTooSlow websocket.StatusCode = 4008
	// CloseBanned closes the stream of a user who was globally banned.
	CloseBanned websocket.StatusCode = 4003
)

// Caller is who opens a stream: an admin (every event, or the channels of
// ?channelId=) or an end user (see Filter). UserID is the admin's acting
// user or the end user.
type Caller struct {
	UserID string
	Admin  bool
}

type ticket struct {
	c   Caller
	exp time.Time
}

// tickets are the unused tickets of this process.
type tickets struct {
	mu sync.Mutex
	m  map[string]ticket
}

// IssueTicket returns a new single-use ticket bound to c, for browsers
// that cannot send an Authorization header with a WebSocket or
// EventSource request, and its expiry (Config.TicketTTL, 60 s). Tickets
// live in this process: a ticket opens a stream only on the process that
// issued it.
func (h *Hub) IssueTicket(c Caller) (string, time.Time) {
	var b [32]byte
	_, _ = rand.Read(b[:])
	t := base64.RawURLEncoding.EncodeToString(b[:])
	now := time.Now()
	exp := now.Add(h.cfg.TicketTTL)
	h.tickets.mu.Lock()
	defer h.tickets.mu.Unlock()
	for k, v := range h.tickets.m {
		if now.After(v.exp) {
			delete(h.tickets.m, k)
		}
	}
	h.tickets.m[t] = ticket{c: c, exp: exp}
	return t, exp
}

// RedeemTicket returns the caller a ticket was issued to and forgets the
// ticket; ok is false for an unknown, used or expired ticket.
func (h *Hub) RedeemTicket(t string) (c Caller, ok bool) {
	h.tickets.mu.Lock()
	defer h.tickets.mu.Unlock()
	v, ok := h.tickets.m[t]
	if !ok {
		return Caller{}, false
	}
	delete(h.tickets.m, t)
	if time.Now().After(v.exp) {
		return Caller{}, false
	}
	return v.c, true
}

// Connections returns the number of event streams (WebSocket and SSE)
// that ServeEvents serves at this moment on this process; subscriptions
// made with Subscribe alone are not counted. It backs the
// chat_stream_connections gauge of the example server.
func (h *Hub) Connections() int { return int(h.conns.Load()) }

// ServeEvents serves GET /events for an authenticated caller: a WebSocket,
// or Server-Sent Events when the request accepts text/event-stream. The
// query takes after=<id> (SSE also the Last-Event-ID header) and, for
// admins, repeated channelId. Errors found before the stream starts are
// returned (chat.CodeBadRequest naming the parameter, or the store's) for
// the caller to answer; once streaming, ServeEvents returns nil.
func (h *Hub) ServeEvents(w http.ResponseWriter, r *http.Request, c Caller) error {
	q := r.URL.Query()
	sse := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	raw := q.Get("after")
	if raw == "" && sse {
		raw = r.Header.Get("Last-Event-ID")
	}
	var after *int64
	if raw != "" {
		v, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || v < 0 {
			return chat.Errorf(chat.CodeBadRequest, "after: %q is not an event id", raw)
		}
		after = &v
	}
	f := Filter{Admin: c.Admin, UserID: c.UserID}
	if c.Admin {
		for _, id := range q["channelId"] {
			if id == "" {
				return chat.Errorf(chat.CodeBadRequest, "channelId: must not be empty")
			}
			f.ChannelIDs = append(f.ChannelIDs, id)
		}
	}
	if !sse && !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return chat.Errorf(chat.CodeBadRequest, "GET /events needs a WebSocket upgrade or Accept: text/event-stream")
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	sub, err := h.Subscribe(ctx, f, after)
	if err != nil {
		return err
	}
	defer sub.Close()
	h.conns.Add(1)
	defer h.conns.Add(-1)
	hello := newFrame("", EventDidConnect, mustJSON(ConnectData{UserID: c.UserID, Resumed: sub.Resumed}), h.svc.Now())
	if sse {
		h.serveSSE(ctx, w, sub, *hello)
		return nil
	}
	// Streams authenticate by header or single-use ticket, never by
	// cookie, so a page of another origin gains nothing by opening one:
	// the origin check is not needed.
	//
	// A stream outlives the server's read and write timeouts, which also
	// stay on a hijacked connection: clear them (each write sets its own).
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return nil // Accept answered the request
	}
	h.serveWS(ctx, conn, sub, *hello)
	return nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// writeTimeout bounds one write or ping: a peer that stops reading is
// dropped rather than holding the connection forever.
const writeTimeout = 10 * time.Second

func (h *Hub) serveWS(ctx context.Context, conn *websocket.Conn, sub *Subscription, hello Frame) {
	ctx = conn.CloseRead(ctx) // reads (and answers) control frames; done when the peer closes
	write := func(f Frame) error {
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		defer cancel()
		return conn.Write(wctx, websocket.MessageText, f.JSON())
	}
	if write(hello) != nil {
		conn.CloseNow()
		return
	}
	ping := time.NewTicker(h.cfg.PingInterval)
	defer ping.Stop()
	for {
		f, pinged, err := sub.next(ctx, ping.C)
		switch {
		case errors.Is(err, ErrTooSlow):
			_ = conn.Close(CloseTooSlow, "too slow")
			return
		case errors.Is(err, ErrBanned):
			_ = conn.Close(CloseBanned, "cannot access the client SDK")
			return
		case errors.Is(err, ErrStopped):
			_ = conn.Close(websocket.StatusGoingAway, "server stopping")
			return
		case err != nil:
			conn.CloseNow()
			return
		case pinged:
			pctx, cancel := context.WithTimeout(ctx, writeTimeout)
			err = conn.Ping(pctx)
			cancel()
		default:
			err = write(f)
		}
		if err != nil {
			conn.CloseNow()
			return
		}
	}
}

func (h *Hub) serveSSE(ctx context.Context, w http.ResponseWriter, sub *Subscription, hello Frame) {
	rc := http.NewResponseController(w)
	// A stream outlives the server's read timeout; each write below sets
	// its own deadline.
	_ = rc.SetReadDeadline(time.Time{})
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(f Frame) error {
		_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		var err error
		if f.ID != "" {
			_, err = fmt.Fprintf(w, "id: %s\nevent: %s\ndata: %s\n\n", f.ID, f.Event, f.JSON())
		} else {
			_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", f.Event, f.JSON())
		}
		if err == nil {
			err = rc.Flush()
		}
		return err
	}
	if send(hello) != nil {
		return
	}
	ping := time.NewTicker(h.cfg.PingInterval)
	defer ping.Stop()
	for {
		f, pinged, err := sub.next(ctx, ping.C)
		if err != nil {
			if errors.Is(err, ErrTooSlow) {
				_, _ = fmt.Fprint(w, "event: stream.didClose\ndata: {\"code\":4008,\"reason\":\"too slow\"}\n\n")
				_ = rc.Flush()
			}
			return
		}
		if pinged {
			_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil || rc.Flush() != nil {
				return
			}
			continue
		}
		if send(f) != nil {
			return
		}
	}
}

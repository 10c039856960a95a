package stream

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
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

// IssueTicket returns a new single-use ticket bound to c, for browsers
// that cannot send an Authorization header with a WebSocket or
// EventSource request, and its expiry (Config.TicketTTL, 60 s). The
// ticket is kept in the store (as its SHA-256 only), so that any process
// sharing the store redeems it, once.
func (h *Hub) IssueTicket(ctx context.Context, c Caller) (string, time.Time, error) {
	var b [32]byte
	_, _ = rand.Read(b[:])
	t := base64.RawURLEncoding.EncodeToString(b[:])
	exp := chat.NewTime(h.svc.Now().Add(h.cfg.TicketTTL))
	err := h.svc.Store().Update(ctx, func(tx chat.Tx) error {
		return tx.PutTicket(ctx, &chat.StreamTicket{Hash: ticketHash(t), UserID: c.UserID, Admin: c.Admin, ExpiresAt: exp})
	})
	if err != nil {
		return "", time.Time{}, err
	}
	return t, exp.Time, nil
}

// RedeemTicket returns the caller a ticket was issued to and deletes the
// ticket; ok is false for an unknown, used or expired ticket. Of several
// redeems of one ticket at once, on any processes, one succeeds.
func (h *Hub) RedeemTicket(ctx context.Context, t string) (c Caller, ok bool, err error) {
	if t == "" || len(t) > 128 {
		return Caller{}, false, nil
	}
	var tk *chat.StreamTicket
	err = h.svc.Store().Update(ctx, func(tx chat.Tx) (err error) {
		tk, err = tx.TakeTicket(ctx, ticketHash(t))
		return err
	})
	switch {
	case chat.ErrorCode(err) == chat.CodeNotFound:
		return Caller{}, false, nil
	case err != nil:
		return Caller{}, false, err
	case !h.svc.Now().Before(tk.ExpiresAt.Time):
		return Caller{}, false, nil
	}
	return Caller{UserID: tk.UserID, Admin: tk.Admin}, true, nil
}

// ticketHash is what the store keeps of a ticket.
func ticketHash(t string) string {
	sum := sha256.Sum256([]byte(t))
	return hex.EncodeToString(sum[:])
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
// the caller to answer; once streaming, ServeEvents returns nil. An SSE
// stream is served until it ends, in the request's goroutine; a WebSocket
// is served by goroutines of its own (one while idle), and ServeEvents
// returns once the connection is upgraded: the connection then lives until
// the client leaves, the subscription ends, or Stop.
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
	if sse {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		sub, err := h.Subscribe(ctx, f, after)
		if err != nil {
			return err
		}
		defer sub.Close()
		h.conns.Add(1)
		defer h.conns.Add(-1)
		h.serveSSE(ctx, w, sub, *h.hello(c, sub))
		return nil
	}
	// A WebSocket outlives its request: once upgraded, the handler
	// returns, and the connection is served by the goroutine that reads
	// it and by a writer goroutine that runs only while there is
	// something to send (see wsStream). Its context keeps the request's
	// values but ends only with the connection.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	ws := &wsStream{h: h, running: true, cancel: cancel}
	sub, err := h.subscribe(ctx, f, after, ws.kick)
	if err != nil {
		cancel()
		return err
	}
	ws.sub = sub
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
		sub.Close()
		cancel()
		return nil // Accept answered the request
	}
	h.conns.Add(1)
	ws.conn = conn
	ws.ctx = conn.CloseRead(ctx) // reads (and answers) control frames; done when the peer closes
	context.AfterFunc(ws.ctx, func() { sub.close(ws.ctx.Err()) })
	if ws.write(*h.hello(c, sub)) != nil {
		ws.finish(func() { conn.CloseNow() })
		return nil
	}
	ws.ping = time.AfterFunc(h.cfg.PingInterval, ws.pingDue)
	ws.release()
	return nil
}

// hello returns the stream.didConnect frame of a new stream.
func (h *Hub) hello(c Caller, sub *Subscription) *Frame {
	return newFrame("", EventDidConnect, mustJSON(ConnectData{UserID: c.UserID, Resumed: sub.Resumed}), h.svc.Now())
}

// wsStream serves one WebSocket. An idle connection has one goroutine, the
// one that reads it (Conn.CloseRead); the hub's queueing of a frame, the
// end of the subscription and the ping timer each call kick, which starts
// a writer goroutine unless one runs. The writer sends what is queued and
// exits when nothing is left.
type wsStream struct {
	h      *Hub
	sub    *Subscription
	conn   *websocket.Conn
	ctx    context.Context // done when the connection's reading ends
	cancel context.CancelFunc
	ping   *time.Timer

	mu       sync.Mutex
	running  bool // a goroutine owns the writing
	pending  bool // kicked while running: look again before exiting
	pinging  bool // a ping is due
	finished bool
}

// kick makes sure a writer runs. It never blocks (the hub calls it with
// its lock held).
func (w *wsStream) kick() {
	w.mu.Lock()
	if w.running {
		w.pending = true
		w.mu.Unlock()
		return
	}
	w.running = true
	w.mu.Unlock()
	go w.pump()
}

func (w *wsStream) pingDue() {
	w.mu.Lock()
	w.pinging = true
	w.mu.Unlock()
	w.kick()
}

// release gives up the writing, unless a kick came meanwhile: then the
// caller writes on (pump) or starts the writer (the handler).
func (w *wsStream) release() {
	w.mu.Lock()
	if w.pending {
		w.pending = false
		w.mu.Unlock()
		go w.pump()
		return
	}
	w.running = false
	w.mu.Unlock()
}

func (w *wsStream) write(f Frame) error {
	wctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	return w.conn.Write(wctx, websocket.MessageText, f.JSON())
}

// writeRun is how many frames one write timeout covers when a writer
// finds several queued: writeTimeout bounds each run of up to writeRun
// frames. One timer per frame costs more than the write on a busy
// process.
const writeRun = 64

// pump writes until nothing is left to do, then exits; at the end of the
// subscription it closes the connection with the matching code.
func (w *wsStream) pump() {
	for {
		select {
		case <-w.sub.done:
			w.end()
			return
		default:
		}
		// Writes need no cancellation by the connection's context: a
		// connection whose reading ended is closed, and its writes fail.
		var wctx context.Context
		cancel := func() {}
		for n := 0; w.sub.Err() == nil; n++ {
			f, ok := w.sub.dequeue()
			if !ok {
				break
			}
			if n%writeRun == 0 {
				cancel()
				wctx, cancel = context.WithTimeout(context.Background(), writeTimeout)
			}
			if w.conn.Write(wctx, websocket.MessageText, f.JSON()) != nil {
				cancel()
				w.finish(func() { w.conn.CloseNow() })
				return
			}
		}
		cancel()
		w.mu.Lock()
		ping := w.pinging
		w.pinging = false
		if !ping && !w.pending {
			select {
			case <-w.sub.done:
			default:
				w.running = false
				w.mu.Unlock()
				return
			}
		}
		w.pending = false
		w.mu.Unlock()
		if ping {
			pctx, cancel := context.WithTimeout(w.ctx, writeTimeout)
			err := w.conn.Ping(pctx)
			cancel()
			if err != nil {
				w.finish(func() { w.conn.CloseNow() })
				return
			}
			w.ping.Reset(w.h.cfg.PingInterval)
		}
	}
}

// end sends what an ended subscription still has (a banned user receives
// its user.didGlobalBan) and closes the connection with the code of the
// subscription's end.
func (w *wsStream) end() {
	for w.sub.Err() != ErrTooSlow {
		f, ok := w.sub.dequeue()
		if !ok {
			break
		}
		if w.write(*f) != nil {
			w.finish(func() { w.conn.CloseNow() })
			return
		}
	}
	w.finish(func() {
		switch err := w.sub.Err(); {
		case errors.Is(err, ErrTooSlow):
			_ = w.conn.Close(CloseTooSlow, "too slow")
		case errors.Is(err, ErrBanned):
			_ = w.conn.Close(CloseBanned, "cannot access the client SDK")
		case errors.Is(err, ErrStopped):
			_ = w.conn.Close(websocket.StatusGoingAway, "server stopping")
		default:
			w.conn.CloseNow()
		}
	})
}

// finish closes the connection once, with close, and releases the rest.
func (w *wsStream) finish(close func()) {
	w.mu.Lock()
	if w.finished {
		w.mu.Unlock()
		return
	}
	w.finished = true
	w.mu.Unlock()
	if w.ping != nil {
		w.ping.Stop()
	}
	close()
	w.sub.Close()
	w.cancel()
	w.h.conns.Add(-1)
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

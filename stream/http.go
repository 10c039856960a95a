package stream

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
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
	// CloseRevoked closes a stream whose access ended, with the reason
	// "token revoked" (ErrRevoked), "token expired" (ErrExpired) or
	// "admin revoked" (ErrAdminRevoked).
	CloseRevoked websocket.StatusCode = 4001
)

// EventDidClose is the name of the last frame of an SSE stream that the
// server ends (a WebSocket has close codes instead); its data is
// CloseData.
const EventDidClose = "stream.didClose"

// CloseData is the data of stream.didClose: the WebSocket close code
// that stands for the same end, and the reason: "too slow" (4008),
// "banned" (4003), "revoked" or "expired" (4001).
type CloseData struct {
	Code   int    `json:"code"`
	Reason string `json:"reason"`
}

// closeOf returns how a stream that ended with err is closed: the
// WebSocket code and reason, and the SSE reason (ok false: the stream
// just ends, as when the client left).
func closeOf(err error) (code websocket.StatusCode, wsReason, sseReason string, ok bool) {
	switch {
	case errors.Is(err, ErrTooSlow):
		return CloseTooSlow, "too slow", "too slow", true
	case errors.Is(err, ErrBanned):
		return CloseBanned, "cannot access the client SDK", "banned", true
	case errors.Is(err, ErrRevoked):
		return CloseRevoked, "token revoked", "revoked", true
	case errors.Is(err, ErrExpired):
		return CloseRevoked, "token expired", "expired", true
	case errors.Is(err, ErrAdminRevoked):
		return CloseRevoked, "admin revoked", "revoked", true
	case errors.Is(err, ErrStopped):
		return websocket.StatusGoingAway, "server stopping", "", false
	}
	return 0, "", "", false
}

// Caller is who opens a stream: an admin (every event, or the channels of
// ?channelId=) or an end user (see Filter). UserID is the admin's acting
// user or the end user. Access, when not nil, is the credential the
// caller authenticated with: the stream (and a ticket) lasts only as long
// as it does (see Filter), and Config.MaxStreamsPerCaller counts an
// admin's streams by its account. Without it, nothing but a global ban
// ends the stream.
type Caller struct {
	UserID string
	Admin  bool
	Access *chat.Access
}

// IssueTicket returns a new single-use ticket bound to c, for browsers
// that cannot send an Authorization header with a WebSocket or
// EventSource request, and its expiry (Config.TicketTTL, 60 s). The
// ticket is kept in the store (as its SHA-256 only), so that any process
// sharing the store redeems it, once. It carries c.Access: it opens a
// stream only while that access is valid, and the stream lasts as long.
// An end user's ticket issued without an Access counts as issued under a
// token issued now, without expiry.
func (h *Hub) IssueTicket(ctx context.Context, c Caller) (string, time.Time, error) {
	var b [32]byte
	_, _ = rand.Read(b[:])
	t := base64.RawURLEncoding.EncodeToString(b[:])
	now := h.svc.Now()
	exp := chat.NewTime(now.Add(h.cfg.TicketTTL))
	tk := &chat.StreamTicket{Hash: ticketHash(t), UserID: c.UserID, Admin: c.Admin, ExpiresAt: exp}
	switch a := c.Access; {
	case a != nil && a.IsAdmin() != c.Admin, a != nil && !c.Admin && a.UserID != c.UserID:
		return "", time.Time{}, chat.Errorf(chat.CodeBadRequest, "stream: the access is not the caller's")
	case a != nil:
		tk.AdminName, tk.TokenHash, tk.TokenIssuedAt, tk.TokenExpiresAt = a.AdminName, a.TokenHash, a.IssuedAt, a.ExpiresAt
	case !c.Admin:
		tk.TokenIssuedAt = &now
	}
	if err := h.svc.SaveStreamTicket(ctx, tk); err != nil {
		return "", time.Time{}, err
	}
	return t, exp.Time, nil
}

// RedeemTicket returns the caller a ticket was issued to, with the access
// it was issued under, and deletes the ticket; ok is false for an
// unknown, used or expired ticket, and for one whose access is no longer
// valid (a revoked or expired token, a revoked or rotated admin account);
// the error is chat.CodeGlobalBanned for a globally banned user's. Of
// several redeems of one ticket at once, on any processes, one succeeds.
func (h *Hub) RedeemTicket(ctx context.Context, t string) (c Caller, ok bool, err error) {
	if t == "" || len(t) > 128 {
		return Caller{}, false, nil
	}
	tk, err := h.svc.RedeemStreamTicket(ctx, ticketHash(t))
	switch code := chat.ErrorCode(err); {
	case err == nil:
	case code == chat.CodeNotFound, code == chat.CodeUnauthorized:
		return Caller{}, false, nil
	default:
		return Caller{}, false, err
	}
	return Caller{UserID: tk.UserID, Admin: tk.Admin, Access: tk.Access()}, true, nil
}

// slotKey names whom Config.MaxStreamsPerCaller counts a stream against.
func slotKey(c Caller) string {
	switch {
	case !c.Admin:
		return "user\x00" + c.UserID
	case c.Access != nil:
		return "admin\x00" + c.Access.AdminName
	}
	return "admin-user\x00" + c.UserID
}

// streamsRetryAfter is the Retry-After of a stream refused by the cap: a
// slot frees when one of the caller's streams closes, which the server
// cannot foresee.
const streamsRetryAfter = 5 * time.Second

// takeSlot counts one more stream of key, unless the caller has
// Config.MaxStreamsPerCaller open already (chat.CodeRateLimited).
func (h *Hub) takeSlot(key string) error {
	max := h.cfg.MaxStreamsPerCaller
	h.slotsMu.Lock()
	defer h.slotsMu.Unlock()
	if max > 0 && h.slots[key] >= max {
		return &chat.Error{Code: chat.CodeRateLimited,
			Message: fmt.Sprintf("too many event streams: at most %d open at once per user or admin account; close one first", max),
			Detail:  []chat.Detail{chat.RetryAfter{Wait: streamsRetryAfter}}}
	}
	h.slots[key]++
	return nil
}

// freeSlot counts one stream of key less.
func (h *Hub) freeSlot(key string) {
	h.slotsMu.Lock()
	defer h.slotsMu.Unlock()
	if h.slots[key]--; h.slots[key] <= 0 {
		delete(h.slots, key)
	}
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
// returned (chat.CodeBadRequest naming the parameter; chat.CodeRateLimited,
// with a chat.RetryAfter, when the caller has Config.MaxStreamsPerCaller
// streams open on this process; chat.CodeUnauthorized when c.Access is no
// longer valid; or the store's) for the caller to answer; once streaming,
// ServeEvents returns nil. An SSE
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
	f := Filter{Admin: c.Admin, UserID: c.UserID, Access: c.Access}
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
	slot := slotKey(c)
	if err := h.takeSlot(slot); err != nil {
		return err
	}
	if sse {
		defer h.freeSlot(slot)
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
		h.freeSlot(slot)
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
	ws.out = &heldWriter{}
	conn, err := websocket.Accept(holdingWriter{w, ws.out}, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		sub.Close()
		cancel()
		h.freeSlot(slot)
		return nil // Accept answered the request
	}
	h.conns.Add(1)
	ws.slot = slot
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
	slot   string      // the caller's, freed when the connection ends
	out    *heldWriter // what conn writes to: the connection, held by runs of frames

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
		//
		// A run of frames found queued together is written to the
		// connection at once (heldWriter): one system call, and on TCP
		// full segments, instead of one of each per frame.
		var wctx context.Context
		cancel := func() {}
		failed := false
		for n := 0; w.sub.Err() == nil; n++ {
			f, ok := w.sub.dequeue()
			if !ok {
				break
			}
			if n%writeRun == 0 {
				cancel()
				if w.out.release() != nil {
					failed = true
					break
				}
				wctx, cancel = context.WithTimeout(context.Background(), writeTimeout)
				if w.sub.queued() > 0 {
					w.out.hold()
				}
			}
			if w.conn.Write(wctx, websocket.MessageText, f.JSON()) != nil {
				failed = true
				break
			}
		}
		cancel()
		if w.out.release() != nil || failed {
			w.finish(func() { w.conn.CloseNow() })
			return
		}
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
		if code, reason, _, _ := closeOf(w.sub.Err()); code != 0 {
			_ = w.conn.Close(code, reason)
		} else {
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
	w.h.freeSlot(w.slot)
}

// holdingWriter is the ResponseWriter a WebSocket is accepted on: its
// Hijack gives the WebSocket a writer over out instead of the connection.
type holdingWriter struct {
	http.ResponseWriter
	out *heldWriter
}

func (h holdingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := brw.Writer.Flush(); err != nil {
		c.Close()
		return nil, nil, err
	}
	h.out.conn = c
	brw.Writer.Reset(h.out)
	return c, brw, nil
}

// maxHeld is how many bytes a heldWriter keeps before it writes them out
// while held.
const maxHeld = 64 << 10

// heldBufs recycles the buffers of held runs: an idle connection keeps
// none.
var heldBufs = sync.Pool{New: func() any { return new([]byte) }}

// heldWriter writes to a connection; between hold and release it keeps
// what it is given and writes it in one piece at release (or on reaching
// maxHeld). Writes of the WebSocket's reader (pongs, close) may come
// meanwhile: they are kept with the rest, in order.
type heldWriter struct {
	conn net.Conn
	mu   sync.Mutex
	buf  *[]byte // nil unless held
	// writes counts the writes to conn, for tests.
	writes int
}

func (w *heldWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf == nil {
		w.writes++
		return w.conn.Write(p)
	}
	if len(*w.buf)+len(p) > maxHeld {
		if err := w.flushLocked(); err != nil {
			return 0, err
		}
	}
	*w.buf = append(*w.buf, p...)
	return len(p), nil
}

// hold starts keeping what is written.
func (w *heldWriter) hold() {
	w.mu.Lock()
	if w.buf == nil {
		w.buf = heldBufs.Get().(*[]byte)
	}
	w.mu.Unlock()
}

// release writes what was kept, within writeTimeout, and stops keeping.
func (w *heldWriter) release() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf == nil {
		return nil
	}
	err := w.flushLocked()
	if cap(*w.buf) <= maxHeld {
		*w.buf = (*w.buf)[:0]
		heldBufs.Put(w.buf)
	}
	w.buf = nil
	return err
}

func (w *heldWriter) flushLocked() error {
	if len(*w.buf) == 0 {
		return nil
	}
	w.writes++
	_ = w.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err := w.conn.Write(*w.buf)
	_ = w.conn.SetWriteDeadline(time.Time{})
	*w.buf = (*w.buf)[:0]
	return err
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
			if code, _, reason, ok := closeOf(err); ok {
				_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
				_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", EventDidClose, mustJSON(CloseData{Code: int(code), Reason: reason}))
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

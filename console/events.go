package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/stream"
)

// Subscriber is what the channel page needs of the event stream to be
// live: *stream.Hub satisfies it.
type Subscriber interface {
	Subscribe(ctx context.Context, f stream.Filter, after *int64) (*stream.Subscription, error)
}

// eventWriteTimeout bounds each write of the event stream, whatever the
// server's own write timeout.
const eventWriteTimeout = 10 * time.Second

// wantsEventStream reports whether r is an EventSource connection.
func wantsEventStream(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// channelEvents serves GET /channels/{id}/events: the events of one
// channel as Server-Sent Events, for the channel page's script. Each
// event of the log is one SSE message without an event name (so that
// EventSource's onmessage receives every kind), whose id is the event id
// and whose data is the stream's frame, {"id","event","data","createdAt"};
// the first is stream.didConnect {userId, resumed}. Ephemeral events
// (typing, read markers) are not sent: the page shows neither. A client
// that reconnects with Last-Event-ID (or ?after=) receives what it missed
// (see stream.Hub.Subscribe). A comment line every Config.EventPing keeps
// the connection open through proxies; the session is checked then too,
// without extending it, and the stream ends when the session has ended
// (the browser's reconnection then gets 401).
func (h *handler) channelEvents(q *req) {
	w, r := q.w, q.r
	if h.cfg.Events == nil {
		http.Error(w, "This server has no event stream; the page polls instead.", http.StatusNotFound)
		return
	}
	raw := r.URL.Query().Get("after")
	if raw == "" {
		raw = r.Header.Get("Last-Event-ID")
	}
	var after *int64
	if raw != "" {
		v, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || v < 0 {
			http.Error(w, "after: not an event id", http.StatusBadRequest)
			return
		}
		after = &v
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	sub, err := h.cfg.Events.Subscribe(ctx, stream.Filter{Admin: true, ChannelIDs: []string{q.pathID("id")}}, after)
	if err != nil {
		switch chat.ErrorCode(err) {
		case chat.CodeBadRequest:
			http.Error(w, "after: not an event id", http.StatusBadRequest)
		default:
			h.log.Error("console: subscribing to the event stream", "err", err)
			http.Error(w, "The event stream is not available; try again.", http.StatusServiceUnavailable)
		}
		return
	}
	defer sub.Close()

	rc := http.NewResponseController(w)
	// The stream outlives the server's read and write timeouts; each
	// write sets its own deadline.
	_ = rc.SetReadDeadline(time.Time{})
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(s string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout))
		if _, err := fmt.Fprint(w, s); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	send := func(f stream.Frame) bool {
		b, err := json.Marshal(f)
		if err != nil {
			h.log.Error("console: encoding an event", "err", err)
			return false
		}
		if f.ID != "" {
			return write("id: " + f.ID + "\ndata: " + string(b) + "\n\n")
		}
		return write("data: " + string(b) + "\n\n")
	}
	hello, _ := json.Marshal(stream.ConnectData{UserID: q.actor(), Resumed: sub.Resumed})
	if !send(stream.Frame{Event: stream.EventDidConnect, Data: hello, CreatedAt: h.svc.Now()}) {
		return
	}
	cookie, _ := r.Cookie(sessionCookie) // present: authenticate checked it
	frames := make(chan stream.Frame)
	go func() {
		defer close(frames)
		for {
			f, err := sub.Next(ctx)
			if err != nil {
				return
			}
			if f.ID == "" {
				continue // ephemeral
			}
			select {
			case frames <- f:
			case <-ctx.Done():
				return
			}
		}
	}()
	ping := time.NewTicker(h.cfg.EventPing)
	defer ping.Stop()
	for {
		select {
		case f, ok := <-frames:
			if !ok || !send(f) {
				return
			}
		case <-ping.C:
			if _, _, err := h.svc.CheckAdminSession(ctx, cookie.Value, h.cfg.IdleTimeout); err != nil {
				if chat.ErrorCode(err) != chat.CodeUnauthorized {
					h.log.Error("console: checking the session of an event stream", "err", err)
				}
				return
			}
			if !write(": ping\n\n") {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/lib/pq"
)

// Signal kinds: what a commit brought.
const (
	sigDeliveries = 1 << iota // deliveries enqueued, rescheduled or re-queued
	sigEvents                 // events relayed into the log
)

// watchers fans commit signals out to the channels returned by
// WatchOutbox, WatchEvents and WatchDeliveries, each of which wants some
// kinds of signal. Signals come from two sources: commits made through
// this Store (at once, after COMMIT returns) and, once a Watch call
// started it, a pq.Listener that LISTENs on the schema's channels and so
// hears the commits of every process.
type watchers struct {
	mu       sync.Mutex
	subs     map[chan struct{}]int                 // the kinds each channel wants
	ephem    map[chan chat.EphemeralEvent]struct{} // WatchEphemeral channels
	closed   bool
	done     chan struct{} // closed by close
	listener *pq.Listener  // running listener, nil until started
	polling  bool          // the relay's poll runs
	starting *listenStart  // in-flight start, nil otherwise
	loop     sync.WaitGroup
}

type listenStart struct {
	l    *pq.Listener
	done chan struct{}
	err  error
}

func (w *watchers) init() {
	w.subs = make(map[chan struct{}]int)
	w.ephem = make(map[chan chat.EphemeralEvent]struct{})
	w.done = make(chan struct{})
}

// signal wakes every watcher that wants one of kinds; a watcher that
// already has a signal pending keeps just that one.
func (w *watchers) signal(kinds int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch, want := range w.subs {
		if want&kinds == 0 {
			continue
		}
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// listening reports whether the LISTEN connection runs.
func (w *watchers) listening() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.listener != nil
}

func (w *watchers) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	close(w.done)
	for ch := range w.subs {
		close(ch)
	}
	w.subs = nil
	for ch := range w.ephem {
		close(ch)
	}
	w.ephem = nil
	if w.listener != nil {
		w.listener.Close()
	}
	if w.starting != nil {
		w.starting.l.Close() // unblocks its Listen
	}
	w.mu.Unlock()
	w.loop.Wait()
}

var errClosed = chat.Errorf(chat.CodeUnavailable, "postgres store is closed")

// WatchOutbox implements chat.OutboxWatcher. The returned channel (buffer
// 1) receives a value after every commit that enqueued, rescheduled or
// re-queued deliveries and after every relay pass that moved events into
// the log, in this process or, through LISTEN/NOTIFY, in any other process
// using the same schema; after the LISTEN connection is re-established it
// also receives one, since notifications may have been missed meanwhile.
// Signals may be coalesced. The channel is closed when ctx is done or the
// Store is closed. WatchEvents and WatchDeliveries each signal one of the
// two kinds.
//
// The first Watch call opens the LISTEN connection (Options.NotifyDSN) and
// waits until the server acknowledged LISTEN or ctx ends; if that fails
// the error is returned (CodeUnavailable) and the next call tries again.
// Without a NotifyDSN (New without the option) only this Store's own
// commits signal. The first Watch call also starts the relay's poll (see
// WatchEvents), which runs until Close.
func (s *Store) WatchOutbox(ctx context.Context) (<-chan struct{}, error) {
	return s.watch(ctx, sigDeliveries|sigEvents)
}

// WatchEvents implements chat.EventWatcher: the returned channel (buffer
// 1) receives a value after every relay pass, in any process, that moved
// events into the log, and nothing for commits that appended none. It
// also starts, on the first Watch call, the relay's poll: every second it
// looks for events committed by a process that ended before relaying them
// and moves them. See WatchOutbox for the rest.
func (s *Store) WatchEvents(ctx context.Context) (<-chan struct{}, error) {
	return s.watch(ctx, sigEvents)
}

// WatchDeliveries implements chat.DeliveryWatcher: the returned channel
// (buffer 1) receives a value after every commit, in any process, that
// enqueued, rescheduled or re-queued webhook deliveries, and nothing for
// other commits. See WatchOutbox for the rest.
func (s *Store) WatchDeliveries(ctx context.Context) (<-chan struct{}, error) {
	return s.watch(ctx, sigDeliveries)
}

func (s *Store) watch(ctx context.Context, kinds int) (<-chan struct{}, error) {
	if err := ctx.Err(); err != nil {
		return nil, dbErr(err)
	}
	if err := s.listen(ctx); err != nil {
		return nil, err
	}
	ch := make(chan struct{}, 1)
	w := &s.w
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil, errClosed
	}
	w.subs[ch] = kinds
	if !w.polling {
		w.polling = true
		w.loop.Add(1)
		go s.pollRelay()
	}
	w.mu.Unlock()
	context.AfterFunc(ctx, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, ok := w.subs[ch]; ok {
			delete(w.subs, ch)
			close(ch)
		}
	})
	return ch, nil
}

// listen starts the shared pq.Listener unless it runs already, and waits
// until it listens.
func (s *Store) listen(ctx context.Context) error {
	if s.opt.NotifyDSN == "" {
		return nil
	}
	w := &s.w
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return errClosed
	}
	if w.listener != nil {
		w.mu.Unlock()
		return nil
	}
	st := w.starting
	if st == nil {
		st = &listenStart{
			l:    pq.NewListener(s.opt.NotifyDSN, 100*time.Millisecond, 10*time.Second, nil),
			done: make(chan struct{}),
		}
		w.starting = st
		go s.startListener(st)
	}
	w.mu.Unlock()
	select {
	case <-st.done:
		if st.err != nil {
			return dbErr(st.err)
		}
		return nil
	case <-ctx.Done():
		return dbErr(ctx.Err())
	}
}

func (s *Store) startListener(st *listenStart) {
	err := st.l.Listen(s.notify)
	if err == nil {
		err = st.l.Listen(s.events)
	}
	if err == nil {
		err = st.l.Listen(s.ephem)
	}
	w := &s.w
	w.mu.Lock()
	w.starting = nil
	switch {
	case w.closed:
		if err == nil {
			err = errClosed
		}
		st.l.Close()
	case err != nil:
		st.l.Close()
	default:
		w.listener = st.l
		w.loop.Add(1)
		go s.relay(st.l)
	}
	st.err = err
	w.mu.Unlock()
	close(st.done)
}

// relay turns notifications (and the nil that pq sends after a reconnect)
// into signals, and pings the connection now and then so that a silently
// dropped connection is noticed and re-established.
func (s *Store) relay(l *pq.Listener) {
	defer s.w.loop.Done()
	ping := time.NewTicker(60 * time.Second)
	defer ping.Stop()
	for {
		select {
		case n, ok := <-l.Notify:
			if !ok {
				return
			}
			switch {
			case n == nil: // reconnected: anything may have been missed
				s.w.signal(sigDeliveries | sigEvents)
			case n.Channel == s.ephem:
				s.w.deliver(n.Extra)
			case n.Channel == s.events:
				s.w.signal(sigEvents)
			default:
				s.w.signal(sigDeliveries)
			}
		case <-ping.C:
			// An error means the connection is gone; the listener
			// reconnects by itself and then sends nil on Notify.
			go func() { _ = l.Ping() }()
		case <-s.w.done:
			// Keep draining until the closed listener closes Notify, so
			// that its goroutine never blocks on a full channel.
			go func() {
				for range l.Notify {
				}
			}()
			return
		}
	}
}

// ephemeralPayload is an ephemeral event as sent by NOTIFY.
type ephemeralPayload struct {
	Event     string          `json:"e"`
	ChannelID string          `json:"c"`
	UserID    string          `json:"u"`
	Data      json.RawMessage `json:"d"`
	At        int64           `json:"t"` // unix milliseconds
}

// maxNotifyPayload is the largest payload Postgres's NOTIFY takes (8000
// bytes, less one).
const maxNotifyPayload = 7999

// PublishEphemeral implements chat.EphemeralBroker with one NOTIFY (on the
// schema's ephemeral channel, outside any transaction): every process
// that watches it receives the event, this one included. The payload is
// small JSON (event, channel id, user id, data, time); one over Postgres's
// limit of 8000 bytes is CodeBadRequest. Without a LISTEN connection
// (New without Options.NotifyDSN) the event goes to this Store's watchers
// only, as in a single process.
func (s *Store) PublishEphemeral(ctx context.Context, ev chat.EphemeralEvent) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ephemeralPayload{Event: ev.Event, ChannelID: ev.ChannelID, UserID: ev.UserID,
		Data: ev.Data, At: ev.CreatedAt.UnixMilli()}); err != nil {
		return chat.Errorf(chat.CodeBadRequest, "ephemeral event: %v", err)
	}
	payload := bytes.TrimSpace(b.Bytes())
	if len(payload) > maxNotifyPayload {
		return chat.Errorf(chat.CodeBadRequest, "ephemeral event: %d bytes, over the %d of a notification", len(payload), maxNotifyPayload)
	}
	if s.opt.NotifyDSN == "" {
		s.w.deliver(string(payload)) // no LISTEN: this Store's watchers only
		return nil
	}
	_, err := s.db.ExecContext(ctx, `SELECT pg_notify($1, $2)`, s.ephem, string(payload))
	return dbErr(err)
}

// WatchEphemeral implements chat.EphemeralBroker: the returned channel
// receives the ephemeral events that any process published on this
// schema, from the moment WatchEphemeral returns (it waits, as WatchOutbox
// does, until the LISTEN connection listens). Events are not stored: one
// that arrives while the channel's buffer (64) is full is dropped, and
// those sent while the LISTEN connection was being re-established are
// lost. The channel is closed when ctx is done or the Store is closed.
func (s *Store) WatchEphemeral(ctx context.Context) (<-chan chat.EphemeralEvent, error) {
	if err := ctx.Err(); err != nil {
		return nil, dbErr(err)
	}
	if err := s.listen(ctx); err != nil {
		return nil, err
	}
	ch := make(chan chat.EphemeralEvent, 64)
	w := &s.w
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil, errClosed
	}
	w.ephem[ch] = struct{}{}
	w.mu.Unlock()
	context.AfterFunc(ctx, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, ok := w.ephem[ch]; ok {
			delete(w.ephem, ch)
			close(ch)
		}
	})
	return ch, nil
}

// deliver decodes a notification of the ephemeral channel and hands it to
// every WatchEphemeral channel without waiting. A payload that does not
// decode (nothing this package sent) is dropped.
func (w *watchers) deliver(payload string) {
	var p ephemeralPayload
	if json.Unmarshal([]byte(payload), &p) != nil || p.Event == "" {
		return
	}
	ev := chat.EphemeralEvent{Event: p.Event, ChannelID: p.ChannelID, UserID: p.UserID, Data: p.Data,
		CreatedAt: chat.NewTime(time.UnixMilli(p.At))}
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.ephem {
		select {
		case ch <- ev:
		default:
		}
	}
}

package chat

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// EventChannelDidStartTyping is the ephemeral event of Service.Typing.
// Ephemeral events go to the SubscribeEphemeral subscribers of every
// process sharing the store: they are never stored and never sent to
// webhooks, so they are not in EventNames.
const EventChannelDidStartTyping = "channel.didStartTyping"

// TypingInterval is the least time between two channel.didStartTyping
// events of one user in one channel. Calls in between succeed and publish
// nothing.
const TypingInterval = 2 * time.Second

// EphemeralEvent is an event that is published once, to the subscribers
// of the process where it happened (and, with a store that is an
// EphemeralBroker, of every process sharing the store), and then
// forgotten.
type EphemeralEvent struct {
	// Event is the event name, for example EventChannelDidStartTyping.
	Event string
	// ChannelID is the channel the event concerns; UserID the user who
	// caused it (an event stream sends a typing event to the channel's
	// other members).
	ChannelID string
	UserID    string
	// Data is the event's data as JSON, encoded once for every
	// subscriber, in the shape of the wire: TypingEventData for
	// channel.didStartTyping.
	Data json.RawMessage
	// CreatedAt is when the event happened.
	CreatedAt Time
}

// TypingEventData is the data of channel.didStartTyping.
type TypingEventData struct {
	// ChannelID is the channel where the user types.
	ChannelID string `json:"channelId"`
	// UserID is the user who types.
	UserID string `json:"userId"`
}

// EphemeralBroker is implemented by stores that several processes share
// (the Postgres adapter, with LISTEN/NOTIFY): it carries ephemeral events
// to every process. With such a store the Service publishes ephemeral
// events through it, and relays what it receives to its
// SubscribeEphemeral subscribers; other stores deliver in process.
type EphemeralBroker interface {
	// PublishEphemeral sends ev to the WatchEphemeral channels of every
	// process sharing the store, this one included. Delivery is at most
	// once: nothing is stored.
	PublishEphemeral(ctx context.Context, ev EphemeralEvent) error
	// WatchEphemeral returns a channel that receives the ephemeral events
	// published from the time it returns, by any process; it is closed
	// when ctx is done or the store is closed.
	WatchEphemeral(ctx context.Context) (<-chan EphemeralEvent, error)
}

// ephemeralSubs is the list of ephemeral event subscribers. Publishing
// reads a snapshot without a lock; subscribing and cancelling copy it.
// With an EphemeralBroker store, a relay runs while the list is not
// empty: stopRelay ends it.
type ephemeralSubs struct {
	mu        sync.Mutex
	next      int
	list      []ephemeralSub
	stopRelay context.CancelFunc
}

type ephemeralSub struct {
	id int
	fn func(EphemeralEvent)
}

// SubscribeEphemeral registers fn to receive every ephemeral event
// (channel.didStartTyping, channel.didMarkRead) and returns a function that unsubscribes (safe
// to call more than once). fn must not block: a transport hands the event
// to its own queues.
//
// With the memory and SQLite stores the events are those of this Service,
// and fn runs in the goroutine that caused them. With a store that is an
// EphemeralBroker (Postgres), the events of every process sharing the
// store arrive through it: the first subscriber starts a goroutine that
// relays them (it waits up to 10 s for the store to listen; a failure is
// logged and retried every second), the last cancel stops it.
func (s *Service) SubscribeEphemeral(fn func(EphemeralEvent)) (cancel func()) {
	e := &s.ephem
	e.mu.Lock()
	e.next++
	id := e.next
	list := make([]ephemeralSub, len(e.list), len(e.list)+1)
	copy(list, e.list)
	e.list = append(list, ephemeralSub{id: id, fn: fn})
	var relay context.Context
	b := s.ephemeralBroker()
	if b != nil && e.stopRelay == nil {
		var stop context.CancelFunc
		relay, stop = context.WithCancel(context.Background())
		e.stopRelay = stop
	}
	e.mu.Unlock()
	if relay != nil {
		s.startRelay(relay, b)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			list := make([]ephemeralSub, 0, len(e.list))
			for _, sub := range e.list {
				if sub.id != id {
					list = append(list, sub)
				}
			}
			e.list = list
			if len(list) == 0 && e.stopRelay != nil {
				e.stopRelay()
				e.stopRelay = nil
			}
		})
	}
}

// startRelay starts a goroutine that watches the broker and hands what
// it receives to the subscribers until ctx ends, re-watching a second
// after a failure. It waits until the first watch is in place (at most
// 10 s), so that events published after SubscribeEphemeral returns are
// seen.
func (s *Service) startRelay(ctx context.Context, b EphemeralBroker) {
	ready := make(chan struct{})
	go func() {
		for first := true; ; first = false {
			ch, err := b.WatchEphemeral(ctx)
			if first {
				close(ready)
			}
			switch {
			case err == nil:
				for ev := range ch {
					s.publishEphemeral(ev)
				}
			case ctx.Err() == nil:
				s.log.Warn("chat: watching ephemeral events", "err", err)
			}
			t := time.NewTimer(time.Second)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}()
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-ready:
	case <-t.C:
	}
}

// publishEphemeral calls every subscriber with ev.
func (s *Service) publishEphemeral(ev EphemeralEvent) {
	s.ephem.mu.Lock()
	list := s.ephem.list
	s.ephem.mu.Unlock()
	for _, sub := range list {
		sub.fn(ev)
	}
}

// typingThrottle remembers when each (user, channel) last published a
// typing event. Entries live in two generations: cur holds those of the
// current interval, prev those of the interval before. When an interval
// has passed since cur began, prev is dropped (all its entries are older
// than TypingInterval) and cur becomes prev, so memory holds at most the
// pairs that typed within the last two intervals.
type typingThrottle struct {
	mu       sync.Mutex
	cur      map[typingKey]time.Time
	prev     map[typingKey]time.Time
	curStart time.Time
}

type typingKey struct{ userID, channelID string }

// allow reports whether (userID, channelID) may publish at now, and if so
// records it.
func (t *typingThrottle) allow(userID, channelID string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur == nil || now.Sub(t.curStart) >= TypingInterval {
		if t.cur != nil && now.Sub(t.curStart) < 2*TypingInterval {
			t.prev = t.cur
		} else {
			t.prev = nil
		}
		t.cur = map[typingKey]time.Time{}
		t.curStart = now
	}
	k := typingKey{userID, channelID}
	last, ok := t.cur[k]
	if !ok {
		last, ok = t.prev[k]
	}
	if ok && now.Sub(last) < TypingInterval {
		return false
	}
	t.cur[k] = now
	return true
}

// size returns the number of remembered pairs.
func (t *typingThrottle) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.cur) + len(t.prev)
}

// Typing records that the acting user is typing in a channel: it publishes
// the ephemeral event channel.didStartTyping {channelId, userId} to the
// SubscribeEphemeral subscribers (of every process, with an
// EphemeralBroker store), at most once per user and channel every
// TypingInterval (2 s) within this process; calls in between succeed and
// publish nothing. Nothing is stored and no webhook receives it. The
// caller must be a member of the channel, or an admin (who may post to
// any open channel). Errors: CodeBadRequest, CodeNotFound (channel),
// CodeForbidden (closed), CodeGlobalBanned, CodeUserBanned,
// CodePermissionDenied (not a member).
func (s *Service) Typing(ctx context.Context, actorID, channelID string) error {
	if err := s.checkID("channelId", channelID); err != nil {
		return err
	}
	err := s.view(ctx, func(tx Tx) error {
		if _, err := openChannel(ctx, tx, channelID); err != nil {
			return err
		}
		_, err := s.authorize(ctx, tx, actorID, actTyping, channelID)
		return err
	})
	if err != nil {
		return err
	}
	now := s.now()
	if !s.typing.allow(actorID, channelID, now) {
		return nil
	}
	ev := EphemeralEvent{
		Event:     EventChannelDidStartTyping,
		ChannelID: channelID,
		UserID:    actorID,
		Data:      mustJSON(TypingEventData{ChannelID: channelID, UserID: actorID}),
		CreatedAt: NewTime(now),
	}
	return s.emitEphemeral(ctx, ev)
}

// emitEphemeral sends ev to the ephemeral subscribers of every process
// through the broker (Config.EphemeralBroker, or the store when it is an
// EphemeralBroker: Postgres), else to this Service's.
//
// It is the one way ephemeral events leave the Service: every kind
// (typing, read markers, and any later one) goes through the broker.
func (s *Service) emitEphemeral(ctx context.Context, ev EphemeralEvent) error {
	if b := s.ephemeralBroker(); b != nil {
		return b.PublishEphemeral(ctx, ev)
	}
	s.publishEphemeral(ev)
	return nil
}

// ephemeralBroker returns Config.EphemeralBroker, else the store when it
// is an EphemeralBroker, else nil.
func (s *Service) ephemeralBroker() EphemeralBroker {
	if s.cfg.EphemeralBroker != nil {
		return s.cfg.EphemeralBroker
	}
	if b, ok := s.store.(EphemeralBroker); ok {
		return b
	}
	return nil
}

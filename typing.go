package chat

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// EventChannelDidStartTyping is the ephemeral event of Service.Typing.
// Ephemeral events are published to in-process subscribers only
// (SubscribeEphemeral): they are never stored and never sent to webhooks,
// so they are not in EventNames.
const EventChannelDidStartTyping = "channel.didStartTyping"

// TypingInterval is the least time between two channel.didStartTyping
// events of one user in one channel. Calls in between succeed and publish
// nothing.
const TypingInterval = 2 * time.Second

// EphemeralEvent is an event that is published once, to the subscribers
// of the process where it happened, and then forgotten.
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

// ephemeralSubs is the list of ephemeral event subscribers. Publishing
// reads a snapshot without a lock; subscribing and cancelling copy it.
type ephemeralSubs struct {
	mu   sync.Mutex
	next int
	list []ephemeralSub
}

type ephemeralSub struct {
	id int
	fn func(EphemeralEvent)
}

// SubscribeEphemeral registers fn to receive every ephemeral event of this
// Service (channel.didStartTyping, channel.didMarkRead), in the goroutine that caused it, and
// returns a function that unsubscribes (safe to call more than once). fn
// must not block: a transport hands the event to its own queues. Events of
// other processes sharing the store are not seen: ephemeral events never
// leave the process where they happened.
func (s *Service) SubscribeEphemeral(fn func(EphemeralEvent)) (cancel func()) {
	e := &s.ephem
	e.mu.Lock()
	e.next++
	id := e.next
	list := make([]ephemeralSub, len(e.list), len(e.list)+1)
	copy(list, e.list)
	e.list = append(list, ephemeralSub{id: id, fn: fn})
	e.mu.Unlock()
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
		})
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
// SubscribeEphemeral subscribers, at most once per user and channel every
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
	s.publishEphemeral(EphemeralEvent{
		Event:     EventChannelDidStartTyping,
		ChannelID: channelID,
		UserID:    actorID,
		Data:      mustJSON(TypingEventData{ChannelID: channelID, UserID: actorID}),
		CreatedAt: NewTime(now),
	})
	return nil
}

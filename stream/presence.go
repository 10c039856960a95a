package stream

import (
	"context"

	chat "github.com/chatengine/chat"
)

// PresenceTracker is told when the subscriptions of end users start and
// end (Config.Presence); *chat.Presence implements it. Both calls are made
// once per subscription, possibly with the hub's lock held: they must not
// block.
type PresenceTracker interface {
	Open(userID string)
	Close(userID string)
}

var _ PresenceTracker = (*chat.Presence)(nil)

// presenceQueue bounds the user.didChangePresence events waiting for
// delivery; one more is dropped (ephemeral events are delivered at most
// once) and logged.
const presenceQueue = 1024

// DefaultPresenceMaxMembers is the default of Config.PresenceMaxMembers.
const DefaultPresenceMaxMembers = 100

// queuePresence hands a user.didChangePresence event to presenceLoop
// without waiting: finding who shares a channel with the user reads the
// store, which the ephemeral callback must not do.
func (h *Hub) queuePresence(ev chat.EphemeralEvent) {
	select {
	case h.presq <- ev:
	default:
		h.cfg.Logger.Warn("stream: presence event dropped, the queue is full", "userId", ev.UserID)
	}
}

// presenceLoop delivers the queued user.didChangePresence events until
// ctx ends.
func (h *Hub) presenceLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-h.presq:
			h.deliverPresence(ctx, ev)
		}
	}
}

// deliverPresence offers a user.didChangePresence event to the admins'
// subscriptions (those without a channel filter, and those naming a
// channel where the user is a member) and to the subscriptions of the
// other end users who are members of a channel where the user is a
// member, except those who block the user; of the user's channels, only
// those of at most Config.PresenceMaxMembers members count. The user's
// channels are read from the store, unless no subscription here is
// indexed by channel.
func (h *Hub) deliverPresence(ctx context.Context, ev chat.EphemeralEvent) {
	h.mu.Lock()
	byChannel := len(h.byChannel) > 0
	h.mu.Unlock()
	var chans []string
	if byChannel {
		var err error
		if chans, err = h.memberChannels(ctx, ev.UserID); err != nil {
			if ctx.Err() == nil {
				h.cfg.Logger.Warn("stream: reading the channels of a user for a presence event", "userId", ev.UserID, "err", err)
			}
			return
		}
	}
	f := newFrame("", ev.Event, ev.Data, ev.CreatedAt)
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.all {
		h.offerPresence(s, ev, f)
	}
	seen := map[*Subscription]bool{}
	for _, c := range chans {
		for s := range h.byChannel[c] {
			if seen[s] {
				continue
			}
			seen[s] = true
			if !s.f.Admin && (s.f.UserID == ev.UserID || s.blocked[ev.UserID]) {
				continue
			}
			h.offerPresence(s, ev, f)
		}
	}
}

// offerPresence queues a presence frame for one live subscription, with
// h.mu held.
func (h *Hub) offerPresence(s *Subscription, ev chat.EphemeralEvent, f *Frame) {
	if h.offered != nil {
		h.offered(s, 0, ev.Event, "")
	}
	s.push(f)
}

// memberChannels returns the ids of the channels where the user is a
// member, of at most Config.PresenceMaxMembers members.
func (h *Hub) memberChannels(ctx context.Context, userID string) ([]string, error) {
	return h.svc.MemberChannelIDs(ctx, userID, max(h.cfg.PresenceMaxMembers, 0))
}

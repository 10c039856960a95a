package stream

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/broker"
)

// Defaults of Config.
const (
	DefaultEventRetention = 24 * time.Hour
	DefaultQueueSize      = 1000
	DefaultPingInterval   = 25 * time.Second
	DefaultPollInterval   = time.Second
	// DefaultMaxStreamsPerCaller is Config.MaxStreamsPerCaller's default.
	DefaultMaxStreamsPerCaller = 10
)

// Errors that end a subscription.
var (
	// ErrTooSlow ends a subscription whose queue was full when an event
	// arrived: it fell more than Config.QueueSize events behind.
	ErrTooSlow = errors.New("stream: too slow")
	// ErrBanned ends a user's subscription after the user.didGlobalBan
	// event about that user.
	ErrBanned = errors.New("stream: user is globally banned")
	// ErrRevoked ends a subscription whose user token was revoked
	// (chat.Service.RevokeUserTokens after the token was issued).
	ErrRevoked = errors.New("stream: token revoked")
	// ErrExpired ends a subscription whose user token expired (its exp
	// plus chat.UserTokenLeeway passed).
	ErrExpired = errors.New("stream: token expired")
	// ErrAdminRevoked ends an admin's subscription when the admin account
	// was revoked or its token rotated.
	ErrAdminRevoked = errors.New("stream: admin revoked")
	// ErrStopped ends every subscription when the hub stops.
	ErrStopped = errors.New("stream: hub stopped")
	// ErrClosed is the error of a subscription closed by its owner.
	ErrClosed = errors.New("stream: subscription closed")
)

// Config configures a Hub. The zero value works.
type Config struct {
	// EventRetention is how long events stay in the log, and so how far
	// back a client may resume. Default DefaultEventRetention (24 h).
	EventRetention time.Duration
	// QueueSize bounds each subscriber's queue: a subscriber that falls
	// more than QueueSize events behind is closed with ErrTooSlow.
	// Default DefaultQueueSize (1,000).
	QueueSize int
	// PingInterval is the time between WebSocket pings (SSE comments).
	// Default DefaultPingInterval (25 s).
	PingInterval time.Duration
	// PollInterval is how often the hub reads the log without a signal
	// from the store, in case a notification was lost. Default
	// DefaultPollInterval (1 s).
	PollInterval time.Duration
	// TicketTTL is the lifetime of a ticket from POST /events/ticket.
	// Default 60 s.
	TicketTTL time.Duration
	// MaxStreamsPerCaller bounds the streams ServeEvents serves at once on
	// this process to each end user and each admin account; one more is
	// refused with chat.CodeRateLimited before the upgrade. Default
	// DefaultMaxStreamsPerCaller (10); negative: no bound.
	MaxStreamsPerCaller int
	// Logger receives the errors of the background work. Default
	// slog.Default().
	Logger *slog.Logger
	// Presence, when not nil, is told when each end user's subscription
	// starts and ends (admins' do not count), so that the user shows
	// online while it has one (chat.Presence). Default nil: nothing is
	// told, and user.didChangePresence events are still delivered.
	Presence PresenceTracker
	// PresenceMaxMembers bounds the channels whose members receive
	// user.didChangePresence: the event about a user goes to the members
	// of its channels of at most this many members (and to admins'
	// streams without a channel filter). In a larger channel every
	// member coming or going would be sent to every other member, the
	// square of its size; its members read User.Online of the users they
	// show instead. Default DefaultPresenceMaxMembers (100); negative: no
	// bound.
	PresenceMaxMembers int
	// Broker brings the hub the events of every process (package
	// broker). Default broker.InProcess over the Service (its
	// WatchEvents passes on the store's signals), which
	// reads the log when the store signals a commit (across processes
	// with Postgres) and every PollInterval.
	Broker broker.Broker
}

func (c Config) withDefaults() Config {
	if c.EventRetention <= 0 {
		c.EventRetention = DefaultEventRetention
	}
	if c.QueueSize <= 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.PingInterval <= 0 {
		c.PingInterval = DefaultPingInterval
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.TicketTTL <= 0 {
		c.TicketTTL = 60 * time.Second
	}
	if c.PresenceMaxMembers == 0 {
		c.PresenceMaxMembers = DefaultPresenceMaxMembers
	}
	if c.MaxStreamsPerCaller == 0 {
		c.MaxStreamsPerCaller = DefaultMaxStreamsPerCaller
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Frame is one message of a stream, as sent on the wire. ID is the event
// id in decimal; it is empty on ephemeral events and on stream.didConnect,
// which are not in the log.
type Frame struct {
	ID        string          `json:"id,omitempty"`
	Event     string          `json:"event"`
	Data      json.RawMessage `json:"data"`
	CreatedAt chat.Time       `json:"createdAt"`

	wire *frameWire // the frame as JSON, encoded once for every subscriber
}

// frameWire is the encoding of a hub's frame, made by the first
// subscriber that sends it: most logged events reach no subscriber, and
// encoding.json compacts the whole of the event's data again.
type frameWire struct {
	once sync.Once
	b    []byte
}

// newFrame returns a frame whose JSON encoding is made once, when first
// asked for, and shared.
func newFrame(id, event string, data json.RawMessage, at chat.Time) *Frame {
	return &Frame{ID: id, Event: event, Data: data, CreatedAt: at, wire: new(frameWire)}
}

// JSON returns the frame as sent on the wire. Frames made by the hub
// encode it once, shared by every subscriber; the returned bytes must not
// be modified.
func (f *Frame) JSON() []byte {
	if w := f.wire; w != nil {
		w.once.Do(func() { w.b = mustJSON(f) })
		return w.b
	}
	return mustJSON(f)
}

// EventDidConnect is the name of the first frame of every stream.
const EventDidConnect = "stream.didConnect"

// ConnectData is the data of stream.didConnect. Resumed is true when the
// stream continues from the requested id with nothing missing; false
// without an id, or when that id is older than the retention (the client
// must then re-read what it shows).
type ConnectData struct {
	UserID  string `json:"userId"`
	Resumed bool   `json:"resumed"`
}

// Filter selects what a subscription receives.
//
// With Admin set: every event, or, when ChannelIDs is not empty, the
// events of those channels. Otherwise the subscription is UserID's: the
// events of the channels where that user is a member when the event
// happens, and the events about the user itself (being added, removed,
// banned, muted, updated, globally banned: after that last one the
// subscription ends with ErrBanned).
//
// Access, when not nil, is the credential the subscriber authenticated
// with (an admin account's, or UserID's user token): the subscription
// is refused when it is no longer valid, and ends when it ends: with
// ErrRevoked when the user's tokens are revoked (those issued before),
// ErrExpired at the token's expiry, ErrAdminRevoked when the admin
// account is revoked or its token rotated, on every process sharing the
// store.
type Filter struct {
	Admin      bool
	UserID     string
	ChannelIDs []string
	Access     *chat.Access
}

// Hub follows the event log and fans it out to subscribers.
type Hub struct {
	svc *chat.Service
	cfg Config

	mu   sync.Mutex
	last int64 // the last event id offered to the live set
	live subSet
	// The live set indexed by whom an event reaches, so that offering an
	// event costs what its recipients cost, not the size of the live set:
	// all holds the admins' subscriptions without a channel filter;
	// byChannel, by channel, the end users' subscriptions whose user is a
	// member of it (moved by the membership events, see offerTo) and the
	// admins' subscriptions that name it; byUser the end users'
	// subscriptions by user (the events about that user); byAdmin the
	// admins' subscriptions made with an Access, by admin account.
	all       subSet
	byChannel bySet
	byUser    bySet
	byAdmin   bySet
	// offered, when not nil, is called with h.mu held each time an event
	// is offered to a subscription (id 0 for an ephemeral event). Set by
	// tests before Start.
	offered func(s *Subscription, id int64, event, channelID string)
	started bool
	stopped bool
	// The broker's feed, and where the hub is with the interest it wants
	// (see note): synced is the generation of the last Sync note taken
	// (syncWait is closed then, and renewed), moved the generation of the
	// interest the follower itself wanted while offering (an end user
	// joining a channel), drop the generation until which Event and
	// Position notes are dropped (0: none).
	feed     broker.Feed
	synced   uint64
	syncWait chan struct{}
	moved    uint64
	drop     uint64
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	conns atomic.Int64 // streams served by ServeEvents right now

	slotsMu sync.Mutex
	slots   map[string]int // streams served by ServeEvents, by caller

	presq chan chat.EphemeralEvent // user.didChangePresence events to deliver
}

// New returns a hub over svc (its event log). It starts nothing: call Start.
func New(svc *chat.Service, cfg Config) *Hub {
	return &Hub{svc: svc, cfg: cfg.withDefaults(), live: subSet{}, all: subSet{},
		byChannel: bySet{}, byUser: bySet{}, byAdmin: bySet{},
		slots: map[string]int{}, presq: make(chan chat.EphemeralEvent, presenceQueue), syncWait: make(chan struct{})}
}

// Start reads the log's position and starts following the broker
// (Config.Broker), and the retention job. Subscriptions made before
// Start fail.
func (h *Hub) Start(ctx context.Context) error {
	last, err := h.svc.LastEventID(ctx)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	b := h.cfg.Broker
	if b == nil {
		b = broker.InProcess(h.svc, h.cfg.PollInterval)
	}
	feed, err := b.Follow(runCtx)
	if err != nil {
		cancel()
		return err
	}
	h.mu.Lock()
	if h.started {
		h.mu.Unlock()
		cancel()
		feed.Close()
		return errors.New("stream: hub already started")
	}
	h.started, h.last, h.cancel, h.feed = true, last, cancel, feed
	h.mu.Unlock()
	unsub := func() {}
	if !feed.Ephemeral() {
		unsub = h.svc.SubscribeEphemeral(h.ephemeral)
	}
	h.wg.Add(3)
	go func() {
		defer h.wg.Done()
		h.presenceLoop(runCtx)
	}()
	go func() {
		defer h.wg.Done()
		defer unsub()
		defer feed.Close()
		h.follow(runCtx)
	}()
	go func() {
		defer h.wg.Done()
		h.retain(runCtx)
	}()
	return nil
}

// Stop ends the background work, waits for it, and closes every
// subscription with ErrStopped. It is idempotent.
func (h *Hub) Stop(ctx context.Context) error {
	h.mu.Lock()
	if h.stopped || !h.started {
		h.stopped = true
		h.mu.Unlock()
		return nil
	}
	h.stopped = true
	h.cancel()
	close(h.syncWait) // subscriptions waiting for the broker's interest see h.stopped
	h.syncWait = make(chan struct{})
	for s := range h.live {
		s.end(ErrStopped)
	}
	clear(h.live)
	clear(h.all)
	clear(h.byChannel)
	clear(h.byUser)
	clear(h.byAdmin)
	h.mu.Unlock()
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// readBatch is how many events one read of the log takes.
const readBatch = 500

func (h *Hub) follow(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.feed.Ready():
		}
		for _, n := range h.feed.Take() {
			if ctx.Err() != nil {
				return
			}
			h.note(ctx, n)
		}
	}
}

// note takes one note of the feed (see package broker). The hub's
// position (h.last) is the id up to which it offered every event of its
// interest: Event notes at or below it are repeats, dropped. After an
// Epoch note, or when the follower itself wanted new interest while
// offering (an end user's subscription joined a channel the hub did not
// follow: see follows), Event and Position notes may have a gap until the
// Sync note of that interest, so they are dropped until it; the Sync's
// read of the log then offers everything after the position.
func (h *Hub) note(ctx context.Context, n broker.Note) {
	switch n.Kind {
	case broker.Read:
		_ = h.pull(ctx) // the next Read tries again
	case broker.Sync:
		// The interest is in place only once the log was read after the
		// hub's position: try until it was (or the hub stops).
		for wait := 10 * time.Millisecond; h.pull(ctx) != nil; wait = min(2*wait, time.Second) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		h.mu.Lock()
		if n.Gen > h.synced {
			h.synced = n.Gen
			close(h.syncWait)
			h.syncWait = make(chan struct{})
		}
		if h.drop <= h.synced {
			h.drop = 0
		}
		h.mu.Unlock()
	case broker.Epoch:
		h.mu.Lock()
		h.drop = max(h.drop, n.Gen)
		h.mu.Unlock()
	case broker.Position:
		h.mu.Lock()
		if h.drop == 0 && n.Pos > h.last {
			h.last = n.Pos
		}
		h.mu.Unlock()
	case broker.Event:
		h.mu.Lock()
		skip := h.drop != 0 || n.Event.ID <= h.last
		h.mu.Unlock()
		if skip {
			return
		}
		e := n.Event
		if e.Data == nil {
			// Too large for the broker: the log has it.
			es, err := h.read(ctx, e.ID-1, 1)
			if err != nil {
				if ctx.Err() == nil {
					h.cfg.Logger.Warn("stream: reading the event log", "err", err)
				}
				return
			}
			if len(es) == 0 || es[0].ID != e.ID {
				return // deleted by retention
			}
			e = es[0]
		}
		h.mu.Lock()
		h.offer(e)
		h.mu.Unlock()
	case broker.Ephemeral:
		h.ephemeral(n.Ephemeral)
	case broker.Reset:
		h.reset(ctx)
	}
	h.mu.Lock()
	if h.moved > h.synced && h.moved > h.drop {
		h.drop = h.moved
	}
	h.mu.Unlock()
}

// reset ends every live subscription as too slow (their clients resume
// from the log) and moves the hub's position to the log's last id.
func (h *Hub) reset(ctx context.Context) {
	last, err := h.svc.LastEventID(ctx)
	if err != nil {
		if ctx.Err() == nil {
			h.cfg.Logger.Warn("stream: reading the event log", "err", err)
		}
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.live {
		h.leave(s)
		s.end(ErrTooSlow)
	}
	h.last = max(h.last, last)
}

// keys returns the broker keys (see package broker) of what s follows.
func (s *Subscription) brokerKeys() []string {
	var ks []string
	switch {
	case !s.f.Admin:
		ks = append(ks, broker.KeyUser(s.f.UserID), broker.KeyPresence)
		for c := range s.members {
			ks = append(ks, broker.KeyChannel(c))
		}
		return ks
	case s.chans == nil:
		ks = append(ks, broker.KeyAll)
	default:
		ks = append(ks, broker.KeyPresence)
		for c := range s.chans {
			ks = append(ks, broker.KeyChannel(c))
		}
	}
	if s.f.Access != nil {
		ks = append(ks, broker.KeyAdmin(s.f.Access.AdminName))
	}
	return ks
}

// want adds to the broker's interest the keys of s it does not hold yet,
// with h.mu held, and returns the generation to wait for (0: none).
func (h *Hub) want(s *Subscription) uint64 {
	if !h.feed.Keyed() {
		return 0
	}
	var missing []string
	for _, k := range s.brokerKeys() {
		if !s.keys[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return 0
	}
	if s.keys == nil {
		s.keys = map[string]bool{}
	}
	for _, k := range missing {
		s.keys[k] = true
	}
	if g := h.feed.Want(missing); g > h.synced {
		return g
	}
	return 0
}

// follows keeps the broker's interest in step when an end user's live
// subscription joins (now) or leaves a channel, with h.mu held. Interest
// the follower adds here is in place only at its Sync note: until then
// the follower drops Event notes and reads the log at the Sync (see note).
func (h *Hub) follows(s *Subscription, channelID string, now bool) {
	if !h.feed.Keyed() {
		return
	}
	k := broker.KeyChannel(channelID)
	switch {
	case now && !s.keys[k]:
		if s.keys == nil {
			s.keys = map[string]bool{}
		}
		s.keys[k] = true
		if g := h.feed.Want([]string{k}); g > h.moved {
			h.moved = g
		}
	case !now && s.keys[k]:
		delete(s.keys, k)
		h.feed.Release([]string{k})
	}
}

// unfollow releases the broker's interest of s, with h.mu held.
func (h *Hub) unfollow(s *Subscription) {
	if len(s.keys) == 0 {
		return
	}
	ks := make([]string, 0, len(s.keys))
	for k := range s.keys {
		ks = append(ks, k)
	}
	s.keys = nil
	h.feed.Release(ks)
}

// pull offers every new event of the log to the live set. Only the
// follower moves h.last, so reading it without the lock here is safe.
func (h *Hub) pull(ctx context.Context) error {
	for {
		h.mu.Lock()
		after := h.last
		h.mu.Unlock()
		es, err := h.read(ctx, after, readBatch)
		if err != nil {
			if ctx.Err() == nil {
				h.cfg.Logger.Warn("stream: reading the event log", "err", err)
			}
			return err
		}
		if len(es) == 0 {
			return nil
		}
		h.mu.Lock()
		for _, e := range es {
			h.offer(e)
		}
		h.mu.Unlock()
		if len(es) < readBatch {
			return nil
		}
	}
}

// offer offers a logged event to the live set, with h.mu held. An
// internal event is offered to no one: it may end the subscriptions of
// the user or admin account it names, found in byUser or byAdmin. Any
// other event is offered to the subscriptions that may receive it: the
// admins' without a filter, those indexed under its channel, and those
// of the users it is about; a subscription found twice is offered it once
// (offerTo). A global ban ends the banned users' subscriptions once the
// event is queued for them.
func (h *Hub) offer(e *chat.Event) {
	h.last = e.ID
	if chat.IsInternalEvent(e.Name) {
		if b, ok := chat.BlockEvent(e); ok {
			// The blocker's subscriptions learn whom they block.
			for s := range h.byUser[b.UserID] {
				s.block(e.Name, b.BlockedID)
			}
			return
		}
		d, ok := chat.AccessEvent(e)
		if !ok {
			return
		}
		set := h.byUser[d.UserID]
		if e.Name == chat.EventAdminDidRevokeToken {
			set = h.byAdmin[d.Admin]
		}
		for s := range set {
			if err := s.revokedBy(e, d); err != nil {
				h.leave(s)
				s.end(err)
			}
		}
		return
	}
	f := frameOf(e)    // one frame per event, shared by the subscribers
	var by eventActors // who did it, read once for the subscribers that block someone
	for s := range h.all {
		h.offerTo(s, e, f, &by, false)
	}
	for s := range h.byChannel[e.ChannelID] {
		h.offerTo(s, e, f, &by, true)
	}
	for _, u := range e.UserIDs {
		for s := range h.byUser[u] {
			h.offerTo(s, e, f, &by, false)
		}
	}
	if e.Name == chat.EventUserDidGlobalBan {
		for _, u := range e.UserIDs {
			for s := range h.byUser[u] {
				h.leave(s)
				s.end(ErrBanned)
			}
		}
	}
}

// offerTo offers a logged event to one live subscription, with h.mu held,
// unless it was offered already: found through another index, or
// replayed by catchUp beyond the hub's position when the subscription
// joined. When the event changes an end user's membership of its channel
// (admit), the subscription moves in byChannel before the event is
// queued: the event that adds the user reaches it through byUser, the
// next ones of the channel through byChannel; the event that removes it
// (or closes the channel) is the last one offered to it there.
//
// inChannel says that s was found in byChannel under the event's channel:
// it is then a member of that channel (an end user's subscription) or
// names it (an admin's), so an event that moves no membership is
// admitted without reading its member channels, unless it blocks
// someone. That is the common case of a message to a channel, and it
// reads nothing of s beyond its first cache lines.
func (h *Hub) offerTo(s *Subscription, e *chat.Event, f *Frame, by *eventActors, inChannel bool) {
	if e.ID <= s.pos {
		return
	}
	if h.offered != nil {
		h.offered(s, e.ID, e.Name, e.ChannelID)
	}
	s.pos = e.ID
	c := e.ChannelID
	moves := c != "" && movesMembership(e.Name)
	if inChannel && !moves && len(s.blocked) == 0 {
		s.push(f)
		return
	}
	moves = moves && !s.f.Admin
	was := moves && s.members[c]
	ok := s.admit(e, by)
	if now := moves && s.members[c]; now != was {
		if now {
			h.byChannel.add(c, s)
		} else {
			h.byChannel.remove(c, s)
		}
		h.follows(s, c, now)
	}
	if ok {
		s.push(f)
	}
}

// subSet is a set of subscriptions.
type subSet map[*Subscription]struct{}

// bySet maps keys (channel, user or admin account) to sets of
// subscriptions; a key with an empty set is deleted.
type bySet map[string]subSet

func (by bySet) add(key string, s *Subscription) {
	set := by[key]
	if set == nil {
		set = subSet{}
		by[key] = set
	}
	set[s] = struct{}{}
}

func (by bySet) remove(key string, s *Subscription) {
	if set := by[key]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(by, key)
		}
	}
}

// join adds s to the live set and its indexes, with h.mu held. An end
// user's member channels are final here: catchUp replayed the log up to
// the hub's position at least, and from now on only offerTo changes them.
func (h *Hub) join(s *Subscription) {
	h.live[s] = struct{}{}
	h.index(s, true)
}

// leave removes s from the live set and its indexes, with h.mu held.
func (h *Hub) leave(s *Subscription) {
	h.unfollow(s)
	if _, ok := h.live[s]; !ok {
		return
	}
	delete(h.live, s)
	h.index(s, false)
}

// index adds s to its index entries (add) or removes it from them.
func (h *Hub) index(s *Subscription, add bool) {
	op := bySet.remove
	if add {
		op = bySet.add
	}
	switch {
	case !s.f.Admin:
		op(h.byUser, s.f.UserID, s)
		for c := range s.members {
			op(h.byChannel, c, s)
		}
		return
	case s.chans == nil:
		if add {
			h.all[s] = struct{}{}
		} else {
			delete(h.all, s)
		}
	default:
		for c := range s.chans {
			op(h.byChannel, c, s)
		}
	}
	if s.f.Access != nil {
		op(h.byAdmin, s.f.Access.AdminName, s)
	}
}

func (h *Hub) read(ctx context.Context, after int64, limit int) (es []*chat.Event, err error) {
	return h.svc.ReadEvents(ctx, after, limit)
}

// retentionBatch bounds one delete of the retention job.
const retentionBatch = 1000

func (h *Hub) retain(ctx context.Context) {
	every := min(h.cfg.EventRetention/10, time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		h.deleteOld(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// deleteOld deletes the events older than the retention, then the expired
// tickets, a bounded batch per transaction so that no transaction holds
// the log for long.
func (h *Hub) deleteOld(ctx context.Context) {
	cut := h.svc.Now().Add(-h.cfg.EventRetention)
	for ctx.Err() == nil {
		n, err := h.svc.DeleteEventsBefore(ctx, cut, retentionBatch)
		if err != nil {
			if ctx.Err() == nil {
				h.cfg.Logger.Warn("stream: deleting old events", "err", err)
			}
			return
		}
		if n < retentionBatch {
			break
		}
	}
	// Expired tickets, likewise.
	now := h.svc.Now().Time
	for ctx.Err() == nil {
		n, err := h.svc.DeleteStreamTicketsBefore(ctx, now, retentionBatch)
		if err != nil {
			if ctx.Err() == nil {
				h.cfg.Logger.Warn("stream: deleting expired tickets", "err", err)
			}
			return
		}
		if n < retentionBatch {
			return
		}
	}
}

func (h *Hub) ephemeral(ev chat.EphemeralEvent) {
	if ev.Event == chat.EventUserDidChangePresence {
		h.queuePresence(ev)
		return
	}
	f := newFrame("", ev.Event, ev.Data, ev.CreatedAt)
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.all {
		h.offerEphemeral(s, ev, f)
	}
	for s := range h.byChannel[ev.ChannelID] {
		// The causing user's own subscriptions are offered the event
		// through byUser below, once.
		if s.f.Admin || s.f.UserID != ev.UserID {
			h.offerEphemeral(s, ev, f)
		}
	}
	for s := range h.byUser[ev.UserID] {
		h.offerEphemeral(s, ev, f)
	}
}

// offerEphemeral offers an ephemeral event to one live subscription,
// with h.mu held.
func (h *Hub) offerEphemeral(s *Subscription, ev chat.EphemeralEvent, f *Frame) {
	if h.offered != nil {
		h.offered(s, 0, ev.Event, ev.ChannelID)
	}
	if s.admitsEphemeral(ev) {
		s.push(f)
	}
}

// Subscribe starts a subscription. With after nil it receives the events
// committed from now on; with after set it first receives every retained
// event after that id that the filter admits, then the live ones, each
// once and in id order. Resumed reports whether after was honoured (see
// ConnectData). An after beyond the log's last id is CodeBadRequest.
// The subscription ends when ctx ends, on Close, or with ErrTooSlow,
// ErrBanned, ErrStopped, or, with an Access, ErrRevoked, ErrExpired or
// ErrAdminRevoked. An Access no longer valid is refused
// (chat.CodeUnauthorized).
func (h *Hub) Subscribe(ctx context.Context, f Filter, after *int64) (*Subscription, error) {
	return h.subscribe(ctx, f, after, nil)
}

// subscribe is Subscribe with a function called after each frame is
// queued and when the subscription ends (possibly with h.mu held: it must
// not block nor take h.mu).
func (h *Hub) subscribe(ctx context.Context, f Filter, after *int64, notify func()) (*Subscription, error) {
	if !f.Admin && f.UserID == "" {
		return nil, chat.Errorf(chat.CodeBadRequest, "stream: a user subscription needs a userId")
	}
	if a := f.Access; a != nil && (a.IsAdmin() != f.Admin || !f.Admin && a.UserID != f.UserID) {
		return nil, chat.Errorf(chat.CodeBadRequest, "stream: the access is not the subscriber's")
	}
	s := &Subscription{h: h, f: f, ready: make(chan struct{}, 1), done: make(chan struct{}), ctxDone: ctx.Done(), notify: notify}
	if f.Admin && len(f.ChannelIDs) > 0 {
		s.chans = map[string]bool{}
		for _, c := range f.ChannelIDs {
			s.chans[c] = true
		}
	}
	var from int64
	if after != nil {
		from = *after
	}
	st, err := h.svc.OpenStream(ctx, f.UserID, f.Admin, f.Access, from)
	if err != nil {
		return nil, err
	}
	last := st.LastEventID
	s.Resumed = st.Resumed
	if !f.Admin {
		s.loadMembership(st)
	}
	if after != nil && (*after < 0 || *after > last) {
		return nil, chat.Errorf(chat.CodeBadRequest, "after: %d is not an event id", *after)
	}
	h.mu.Lock()
	if !h.started || h.stopped {
		h.mu.Unlock()
		return nil, chat.Errorf(chat.CodeUnavailable, "the event stream is not running")
	}
	if !f.Admin && h.cfg.Presence != nil {
		// Every path from here ends the subscription (end tells Close).
		s.present = true
		h.cfg.Presence.Open(f.UserID)
	}
	h.mu.Unlock()
	// Live from the log's last id at subscription time, or replay from
	// after: either way catchUp joins the live set at the hub's position.
	// Without a resume the gap is a few events at most, read before
	// Subscribe returns: the subscription is live when it returns.
	s.pos, s.accessPos = last, last
	if f.Access != nil {
		if d, ok := f.Access.Deadline(); ok {
			// Set before it can fire: end reads it.
			s.expiry = time.AfterFunc(time.Hour, func() { s.close(ErrExpired) })
			s.expiry.Reset(d.Sub(h.svc.Now().Time))
		}
	}
	if s.Resumed {
		s.pos = *after
		go func() {
			if !f.Admin {
				if err := s.rewindMembership(ctx, last); err != nil {
					s.close(err)
					return
				}
			}
			s.catchUp(ctx)
		}()
	} else {
		s.catchUp(ctx)
	}
	context.AfterFunc(ctx, func() { s.close(ctx.Err()) })
	return s, nil
}

// Subscription is one subscriber's stream of frames.
type Subscription struct {
	// The fields that offering an event to the subscription reads and
	// writes come first, together in the first cache lines, so that
	// offering an event to a subscription that is cold in the CPU caches
	// costs as few misses as can be.
	h   *Hub
	pos int64 // the last event id offered
	// blocked holds the users the subscriber blocks (user subscriptions;
	// nil when none): their messages, reactions and typing are not sent.
	blocked map[string]bool
	// keys is the broker interest the subscription holds (see Hub.want),
	// guarded by h.mu.
	keys map[string]bool
	// The queue: a slice that grows with the backlog, up to
	// Config.QueueSize, and is released when drained, so that an idle
	// subscription holds no buffer. Frames are shared by every
	// subscriber: read only.
	qmu   sync.Mutex
	queue []*Frame
	ready chan struct{} // holds a signal after a frame was queued and after the end
	// notify, when not nil, is called after a frame was queued and when
	// the subscription ends (see Hub.subscribe).
	notify func()
	f      Filter
	// Resumed reports whether the subscription continues from the
	// requested id (see ConnectData).
	Resumed bool

	chans   map[string]bool // admin channel filter
	members map[string]bool // user: channels where it is a member
	// accessPos is the log's position when the Access was checked: an
	// admin.didRevokeToken after it ends the subscription.
	accessPos int64
	expiry    *time.Timer // ends the subscription at the Access's deadline
	present   bool        // counted by Config.Presence until it ends
	done      chan struct{}
	// ctxDone is the Done channel of the context the subscription was
	// made with: the subscription ends when it closes (see
	// Hub.subscribe), so Next given that context does not wait on it
	// (no wait queue shared by every subscription made with the same
	// context) and, without a ticker, waits on ready alone.
	ctxDone <-chan struct{}
	once    sync.Once
	err     error
	space   chan struct{} // holds a signal after a frame was taken; made by a waiting replay
}

// enqueue queues f unless the queue holds QueueSize frames already.
func (s *Subscription) enqueue(f *Frame) bool {
	s.qmu.Lock()
	if len(s.queue) >= s.h.cfg.QueueSize {
		s.qmu.Unlock()
		return false
	}
	s.queue = append(s.queue, f)
	s.qmu.Unlock()
	s.signal()
	if s.notify != nil {
		s.notify()
	}
	return true
}

// signal leaves a signal on ready unless one is there.
func (s *Subscription) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// dequeue takes the oldest queued frame, if any.
func (s *Subscription) dequeue() (*Frame, bool) {
	s.qmu.Lock()
	if len(s.queue) == 0 {
		s.qmu.Unlock()
		return nil, false
	}
	f := s.queue[0]
	s.queue[0] = nil
	s.queue = s.queue[1:]
	if len(s.queue) == 0 {
		s.queue = nil // release the buffer
	}
	space := s.space
	s.qmu.Unlock()
	if space != nil {
		select {
		case space <- struct{}{}:
		default:
		}
	}
	return f, true
}

// queued returns how many frames are queued.
func (s *Subscription) queued() int {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	return len(s.queue)
}

// enqueueWait queues f, waiting for room while the queue is full; false
// when the subscription ended first.
func (s *Subscription) enqueueWait(f *Frame) bool {
	for !s.enqueue(f) {
		s.qmu.Lock()
		if s.space == nil {
			s.space = make(chan struct{}, 1)
		}
		space := s.space
		full := len(s.queue) >= s.h.cfg.QueueSize
		s.qmu.Unlock()
		if !full {
			continue
		}
		select {
		case <-space:
		case <-s.done:
			return false
		}
	}
	return true
}

// loadMembership takes the user's blocks and member channels from the
// stream's start.
func (s *Subscription) loadMembership(st *chat.StreamStart) {
	for _, b := range st.Blocked {
		s.block(chat.EventUserDidBlock, b)
	}
	s.members = make(map[string]bool, len(st.Channels))
	for _, c := range st.Channels {
		s.members[c] = true
	}
}

// rewindMembership turns the user's member channels, read at event id
// last, into those at s.pos (the id the subscription resumes after), so
// that the replay sends each event by the membership when it happened.
// It reads the events in (s.pos, last]: for each channel, the first event
// there that changed the user's membership tells what it was at s.pos.
//
//   - joined (channel.didCreate, didJoin, didAddUsers naming the user):
//     not a member before;
//   - removed (channel.didRemoveUsers naming the user, which names only
//     users who were members) or closed with the user among the members
//     it removed: a member before;
//   - banned (channel.didBanUsers names non-members too) or closed
//     without the user: taken as not a member before, so a replay never
//     sends a channel's events to a user who may not have been in it;
//   - no such event: the membership at last.
func (s *Subscription) rewindMembership(ctx context.Context, last int64) error {
	decided := map[string]bool{}
	unblocked := map[string]bool{} // blocks decided, by blocked user
	for after := s.pos; after < last; {
		es, err := s.h.read(ctx, after, readBatch)
		if err != nil {
			return err
		}
		if len(es) == 0 {
			return nil
		}
		for _, e := range es {
			if e.ID > last {
				return nil
			}
			after = e.ID
			if b, ok := chat.BlockEvent(e); ok && b.UserID == s.f.UserID && !unblocked[b.BlockedID] {
				// The first block event about a user tells whether it
				// was blocked at s.pos: not if it was blocked since.
				unblocked[b.BlockedID] = true
				if e.Name == chat.EventUserDidBlock {
					delete(s.blocked, b.BlockedID)
				} else {
					s.block(chat.EventUserDidBlock, b.BlockedID)
				}
				continue
			}
			if e.ChannelID == "" || decided[e.ChannelID] {
				continue
			}
			about := slices.Contains(e.UserIDs, s.f.UserID)
			var member bool
			switch e.Name {
			case chat.EventChannelDidCreate, chat.EventChannelDidJoin, chat.EventChannelDidAddUsers:
				if !about {
					continue
				}
			case chat.EventChannelDidRemoveUsers:
				if !about {
					continue
				}
				member = true
			case chat.EventChannelDidBanUsers:
				if !about {
					continue
				}
			case chat.EventChannelDidClose:
				member = about
			default:
				continue
			}
			decided[e.ChannelID] = true
			if member {
				s.members[e.ChannelID] = true
			} else {
				delete(s.members, e.ChannelID)
			}
		}
	}
	return nil
}

// catchUp replays the log from s.pos, then joins the live set at exactly
// the hub's position. A resuming subscriber asked for the backlog, so the
// replay waits for it to read; otherwise a full queue is too slow, as in
// the live set.
func (s *Subscription) catchUp(ctx context.Context) {
	h := s.h
	for {
		h.mu.Lock()
		if h.stopped {
			h.mu.Unlock()
			s.close(ErrStopped)
			return
		}
		if s.pos >= h.last {
			// The follower offers only ids above s.pos: those replayed
			// beyond h.last are not offered again. A subscription that
			// ended meanwhile (close ends it with h.mu held) stays out.
			select {
			case <-s.done:
				h.mu.Unlock()
				return
			default:
			}
			// The broker must deliver what s follows before s joins:
			// new interest is in place at its Sync note, whose read of
			// the log moves h.last; the replay then goes on to it.
			if g := h.want(s); g != 0 {
				wait := h.syncWait
				for h.synced < g {
					h.mu.Unlock()
					select {
					case <-wait:
					case <-s.done:
						return
					case <-ctx.Done():
						s.close(ctx.Err())
						return
					}
					h.mu.Lock()
					if h.stopped {
						h.mu.Unlock()
						s.close(ErrStopped)
						return
					}
					wait = h.syncWait
				}
				h.mu.Unlock()
				continue
			}
			h.join(s)
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
		es, err := h.read(ctx, s.pos, readBatch)
		if err != nil {
			s.close(err)
			return
		}
		for _, e := range es {
			if s.admit(e, nil) {
				if !s.Resumed {
					if !s.enqueue(frameOf(e)) {
						s.close(ErrTooSlow)
						return
					}
				} else if !s.enqueueWait(frameOf(e)) {
					return
				}
			}
			s.pos = e.ID
			if end := s.ending(e); end != nil {
				s.close(end)
				return
			}
		}
	}
}

func frameOf(e *chat.Event) *Frame {
	return newFrame(strconv.FormatInt(e.ID, 10), e.Name, e.Data, e.CreatedAt)
}

// push queues a frame without waiting; a full queue ends the
// subscription. Called with h.mu held.
func (s *Subscription) push(f *Frame) {
	if !s.enqueue(f) {
		s.h.leave(s)
		s.end(ErrTooSlow)
	}
}

// admit reports whether the filter admits e, and keeps a user's set of
// member channels in step with the events about that user (the events
// movesMembership names). An end user who blocks someone is not sent the
// message and reaction events of the users it blocks (see eventActors;
// by, when not nil, keeps them for the other subscribers of the event).
func (s *Subscription) admit(e *chat.Event, by *eventActors) bool {
	if chat.IsInternalEvent(e.Name) {
		return false
	}
	if s.f.Admin {
		return s.chans == nil || s.chans[e.ChannelID]
	}
	about := slices.Contains(e.UserIDs, s.f.UserID)
	switch e.Name {
	case chat.EventChannelDidCreate, chat.EventChannelDidJoin, chat.EventChannelDidAddUsers:
		if about {
			s.members[e.ChannelID] = true
		}
	}
	ok := about || (e.ChannelID != "" && s.members[e.ChannelID])
	switch e.Name {
	case chat.EventChannelDidRemoveUsers, chat.EventChannelDidBanUsers:
		if about {
			delete(s.members, e.ChannelID)
		}
	case chat.EventChannelDidClose:
		delete(s.members, e.ChannelID)
	}
	if ok && len(s.blocked) > 0 {
		if by == nil {
			by = &eventActors{}
		}
		for _, u := range by.of(e) {
			if s.blocked[u] {
				return false
			}
		}
	}
	return ok
}

// movesMembership reports whether admit may change a user's membership
// of the channel of an event with this name.
func movesMembership(name string) bool {
	switch name {
	case chat.EventChannelDidCreate, chat.EventChannelDidJoin, chat.EventChannelDidAddUsers,
		chat.EventChannelDidRemoveUsers, chat.EventChannelDidBanUsers, chat.EventChannelDidClose:
		return true
	}
	return false
}

// block records that the subscriber blocks (user.didBlock) or no longer
// blocks (user.didUnblock) the user blocked.
func (s *Subscription) block(event, blocked string) {
	if event == chat.EventUserDidUnblock {
		delete(s.blocked, blocked)
		return
	}
	if s.blocked == nil {
		s.blocked = map[string]bool{}
	}
	s.blocked[blocked] = true
}

// eventActors reads, once per event, the users a blocker must not hear
// through it: the author of a message event's message, the reactor and
// the message's author of a reaction event. Only subscribers that block
// someone ask, so the events of a hub without blocks are never decoded.
type eventActors struct {
	done  bool
	users []string
}

func (a *eventActors) of(e *chat.Event) []string {
	if a.done {
		return a.users
	}
	a.done = true
	switch e.Name {
	case chat.EventMessageDidCreate, chat.EventMessageDidUpdate, chat.EventMessageDidDelete, chat.EventMessageDidFlag,
		chat.EventReactionDidAdd, chat.EventReactionDidRemove:
	default:
		return nil
	}
	var d struct {
		Messages []struct {
			UserID string `json:"userId"`
		} `json:"messages"`
		Reactions []struct {
			UserID string `json:"userId"`
		} `json:"reactions"`
	}
	if json.Unmarshal(e.Data, &d) != nil {
		return nil
	}
	for _, m := range d.Messages {
		a.users = append(a.users, m.UserID)
	}
	for _, r := range d.Reactions {
		a.users = append(a.users, r.UserID)
	}
	return a.users
}

// ending returns the error that e brings to this subscription, if any,
// when the subscription replays the log (live, Hub.offer decides).
func (s *Subscription) ending(e *chat.Event) error {
	switch {
	case e.Name == chat.EventUserDidGlobalBan:
		if !s.f.Admin && slices.Contains(e.UserIDs, s.f.UserID) {
			return ErrBanned
		}
	case chat.IsInternalEvent(e.Name):
		if b, ok := chat.BlockEvent(e); ok {
			if !s.f.Admin && b.UserID == s.f.UserID {
				s.block(e.Name, b.BlockedID)
			}
			return nil
		}
		if d, ok := chat.AccessEvent(e); ok {
			return s.revokedBy(e, d)
		}
	}
	return nil
}

// revokedBy returns the error that the internal event e, with data d,
// brings to this subscription: ErrRevoked when it revokes the user
// token of its Access, ErrAdminRevoked when it revokes the admin token of
// its Access after that was checked (a rotation before the check may
// have given the token that opened it).
func (s *Subscription) revokedBy(e *chat.Event, d chat.AccessEventData) error {
	a := s.f.Access
	switch {
	case a == nil:
	case e.Name == chat.EventUserDidRevokeTokens:
		if a.RevokedBy(d.UserID, d.RevokedAt) {
			return ErrRevoked
		}
	case e.Name == chat.EventAdminDidRevokeToken:
		if a.IsAdmin() && d.Admin == a.AdminName && e.ID > s.accessPos {
			return ErrAdminRevoked
		}
	}
	return nil
}

// admitsEphemeral: an admin receives every ephemeral event (of its
// channels when it names some); an end user the typing of the other
// members of its channels, and the moves of its own read markers alone
// (channel.didMarkRead), so that its other connections stay in sync: the
// read markers of others are not sent to end users.
func (s *Subscription) admitsEphemeral(ev chat.EphemeralEvent) bool {
	if s.f.Admin {
		return s.chans == nil || s.chans[ev.ChannelID]
	}
	if ev.Event == chat.EventChannelDidMarkRead {
		return ev.UserID == s.f.UserID
	}
	return ev.UserID != s.f.UserID && s.members[ev.ChannelID] && !s.blocked[ev.UserID]
}

// end records err and closes done; the first error wins.
func (s *Subscription) end(err error) {
	s.once.Do(func() {
		if s.expiry != nil {
			s.expiry.Stop()
		}
		s.err = err
		close(s.done)
		s.signal() // wakes a Next waiting on ready alone
		if s.present {
			s.h.cfg.Presence.Close(s.f.UserID)
		}
		if s.notify != nil {
			s.notify()
		}
	})
}

// close ends the subscription and leaves the live set.
func (s *Subscription) close(err error) {
	s.h.mu.Lock()
	s.h.leave(s)
	s.end(err)
	s.h.mu.Unlock()
}

// Close ends the subscription; Next then returns ErrClosed.
func (s *Subscription) Close() { s.close(ErrClosed) }

// Done is closed when the subscription ends; Err then says why.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Err returns why the subscription ended, or nil while it runs.
func (s *Subscription) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Next returns the next frame, waiting for it until ctx ends or the
// subscription ends. After the end it still returns the frames already
// queued (a banned user receives its user.didGlobalBan), except after
// ErrTooSlow, which is returned at once.
func (s *Subscription) Next(ctx context.Context) (Frame, error) {
	f, _, err := s.next(ctx, nil)
	return f, err
}

// next is Next with a ticker: pinged is true when tick fired first.
func (s *Subscription) next(ctx context.Context, tick <-chan time.Time) (f Frame, pinged bool, err error) {
	ctxDone := ctx.Done()
	if ctxDone == s.ctxDone {
		ctxDone = nil // its end closes done
	}
	for {
		select {
		case <-s.done:
			// Pass on end's signal on ready, which this call may have
			// taken, to any other call waiting on ready alone.
			s.signal()
			f, err = s.drain()
			return f, false, err
		default:
		}
		if f, ok := s.dequeue(); ok {
			return *f, false, nil
		}
		if ctxDone == nil && tick == nil {
			// Nothing else to wait for: a frame and the end both
			// signal ready. A plain receive wakes cheaper than a
			// select.
			<-s.ready
			continue
		}
		select {
		case <-s.ready:
		case <-s.done:
		case <-tick:
			return Frame{}, true, nil
		case <-ctxDone:
			return Frame{}, false, ctx.Err()
		}
	}
}

func (s *Subscription) drain() (Frame, error) {
	if s.err != ErrTooSlow {
		if f, ok := s.dequeue(); ok {
			return *f, nil
		}
	}
	return Frame{}, s.err
}

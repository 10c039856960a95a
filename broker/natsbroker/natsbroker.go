// Package natsbroker is the NATS JetStream broker (package broker): the
// events of the log reach the event streams of many processes through a
// NATS server or cluster (nats-server -js, 2.9 or later), and each process
// receives only the events of the channels, users and admin accounts its
// streams follow.
//
// # Publishing
//
// One process of the deployment at a time publishes: the holder of a
// lease (broker.Leaser: a Postgres advisory lock on a connection of its
// own, taken over by another process when its holder dies). It reads the
// events after the lease's stored position, in id order, publishes each
// to JetStream (stream Config.Stream, on the subjects below) with the
// header Nats-Msg-Id "<event id>.<n>" (n numbers the subjects of one
// event), waits for the acknowledgements, publishes the position on
// <prefix>.pos (core NATS), and only then advances the stored position. A
// crash between commit and publish, or between publish and the advance,
// loses nothing: the next holder publishes again from the stored
// position: at least once, and JetStream's duplicate window drops the
// repeats; the hubs drop them by id. Every process runs a candidate that
// tries the lease every second; the holder is woken by the store's
// commit signals (chat.EventWatcher) and polls every PollInterval.
//
// Subjects (ids escaped: every byte outside A-Z a-z 0-9 _ - becomes %XX):
//
//	<prefix>.ev.c.<channel id>   events of a channel
//	<prefix>.ev.u.<user id>      events about a user (one per user named),
//	                             the internal user.didRevokeTokens and blocks
//	<prefix>.ev.a.<admin name>   admin.didRevokeToken
//	<prefix>.ev.x                events of no channel, user or admin (reports)
//	<prefix>.eph.c.<channel id>  ephemeral events of a channel
//	<prefix>.eph.u.<user id>     ephemeral events of no channel, by user
//	<prefix>.eph.p               user.didChangePresence (every user's)
//	<prefix>.pos                 the publisher's position after each batch
//	<prefix>.sync                the publisher's barrier (see Following)
//
// An event larger than the connection's maximum payload is published
// without its data; the hub reads it from the log.
//
// # Following
//
// A hub's feed has a NATS connection of its own and core subscriptions on
// the subjects of its keys (a channel: ev.c and eph.c; a user: ev.u and
// eph.u; an admin account: ev.a; everything: ev.> and eph.>), all
// delivered in wire order into one queue. Core NATS delivers the messages
// of one publisher to one subscriber in order, and the store gives every
// event its id, so the hub offers an event unless it reached that id and
// a Position note moves it forward. Three things can open a gap, and each
// ends with a read of the log from the hub's position (a Sync note):
//
//   - new interest: a subscription reaches the publisher's server some
//     time after the feed sent it. The feed then sends a request to
//     <prefix>.sync, which the publisher answers. The request travels
//     behind the subscription, so once the publisher has it, everything
//     it publishes reaches the feed, and everything it published before
//     was committed before the answer: the hub's read of the log at the
//     answer (the Sync note) finds it. A stream joins only after the Sync
//     of its keys; an end user joining a channel makes the hub drop Event
//     notes until that channel's Sync.
//   - a new connection (a server lost, a reconnect): the feed's dialer
//     puts an Epoch note into the queue behind every message of the old
//     connection (the client dials only after its reader ended); the hub
//     drops Event notes until the Sync that follows.
//   - a full queue (the client drops the message): a Reset note; the hub
//     ends its streams as too slow, and their clients resume from the log.
//     The feed moves messages from the client into an unbounded queue at
//     once, so this takes a stalled process.
//
// The ephemeral events (typing, read markers, and any other kind the
// Service publishes) are core NATS messages: at most once, never stored.
package natsbroker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/broker"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Config configures a Broker.
type Config struct {
	// URLs are the NATS servers (nats://host:port), any of a cluster's.
	URLs []string
	// Prefix begins every subject. Default "chat".
	Prefix string
	// Stream is the JetStream stream that keeps the published events.
	// Default "CHAT_EVENTS".
	Stream string
	// Replicas is the replica count of the stream when this process
	// creates it (an existing stream keeps its own). Default 3 when the
	// URLs, or the servers the cluster announces, are three or more,
	// else 1.
	Replicas int
	// MaxAge is how long the stream keeps an event. Default 24 h.
	MaxAge time.Duration
	// Store is the event log.
	Store chat.Store
	// Leaser hands out the publisher's lease; nil: this process never
	// publishes (another must).
	Leaser broker.Leaser
	// PollInterval is how often the publisher reads the log without a
	// commit signal, and the candidates try the lease. Default 1 s.
	PollInterval time.Duration
	// StartTimeout bounds how long New waits for the servers and the
	// stream (a cluster that is starting elects its JetStream leader
	// first). Default 30 s.
	StartTimeout time.Duration
	// Logger receives the errors of the background work. Default
	// slog.Default().
	Logger *slog.Logger
}

// ParseURLs splits the example server's -broker value
// "nats://host:4222[,host:4223...]" into server URLs; a part without a
// scheme takes nats://.
func ParseURLs(s string) ([]string, error) {
	if !strings.HasPrefix(s, "nats://") {
		return nil, fmt.Errorf("natsbroker: %q does not begin with nats://", s)
	}
	var urls []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("natsbroker: empty server in %q", s)
		}
		if !strings.Contains(p, "://") {
			p = "nats://" + p
		}
		if _, _, err := net.SplitHostPort(strings.TrimPrefix(p, "nats://")); err != nil {
			return nil, fmt.Errorf("natsbroker: %q: %v", p, err)
		}
		urls = append(urls, p)
	}
	return urls, nil
}

// Broker is the NATS broker. It implements broker.Broker (the hub's side)
// and chat.EphemeralBroker (give it to chat.Config.EphemeralBroker).
type Broker struct {
	cfg    Config
	nc     *nats.Conn // publishing: events, positions, barrier answers, ephemeral events
	js     jetstream.JetStream
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	received atomic.Int64 // event and ephemeral messages received by the feeds
	leading  atomic.Bool

	// beforeAdvance, when not nil, runs after a batch was published and
	// acknowledged, before the position advances; an error abandons the
	// lease there (tests: a publisher that dies between publish and
	// advance).
	beforeAdvance func() error
	// beforePublish, likewise, before a batch is published.
	beforePublish func() error
}

var (
	_ broker.Broker        = (*Broker)(nil)
	_ chat.EphemeralBroker = (*Broker)(nil)
)

// New connects to NATS, creates or updates the stream, and starts the
// publisher's candidate when cfg.Leaser is set. Close ends it.
func New(ctx context.Context, cfg Config) (*Broker, error) {
	if len(cfg.URLs) == 0 {
		return nil, errors.New("natsbroker: no server URL")
	}
	if cfg.Store == nil {
		return nil, errors.New("natsbroker: no store")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "chat"
	}
	if cfg.Stream == "" {
		cfg.Stream = "CHAT_EVENTS"
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = 24 * time.Hour
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	b := &Broker{cfg: cfg}
	nc, err := b.connect("chat-publisher", nil)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	// A cluster that is starting may not have elected its JetStream
	// leader yet: try for up to StartTimeout.
	start, cancelStart := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancelStart()
	for {
		try, cancelTry := context.WithTimeout(start, 5*time.Second)
		err = b.ensureStream(try, nc, js)
		cancelTry()
		if err == nil || start.Err() != nil {
			break
		}
		select {
		case <-start.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("natsbroker: stream %s: %w", cfg.Stream, err)
	}
	b.nc, b.js = nc, js
	runCtx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	b.ctx = runCtx
	if cfg.Leaser != nil {
		b.startCandidate()
	}
	return b, nil
}

// startCandidate starts the goroutine that tries the lease.
func (b *Broker) startCandidate() {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.candidate(b.ctx)
	}()
}

// ensureStream creates the stream unless it exists; an existing stream
// keeps its configuration (every process would otherwise impose its own),
// so that its replicas, say, are changed with the nats tool.
func (b *Broker) ensureStream(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
	_, err := js.Stream(ctx, b.cfg.Stream)
	if err == nil || !errors.Is(err, jetstream.ErrStreamNotFound) {
		return err
	}
	replicas := b.cfg.Replicas
	if replicas <= 0 {
		// Three in a cluster of three nodes or more: the servers given
		// and those the server told of.
		replicas = 1
		if max(len(b.cfg.URLs), len(nc.Servers())) >= 3 {
			replicas = 3
		}
	}
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{
		Name:       b.cfg.Stream,
		Subjects:   []string{b.cfg.Prefix + ".ev.>"},
		Storage:    jetstream.FileStorage,
		Replicas:   replicas,
		MaxAge:     b.cfg.MaxAge,
		Duplicates: 2 * time.Minute,
	})
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return nil // another process created it meanwhile
	}
	return err
}

// connect opens a connection that reconnects forever; dial, when not nil,
// runs before each dial.
func (b *Broker) connect(name string, dial func()) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectBufSize(16 << 20),
		nats.Timeout(2 * time.Second),
		nats.RetryOnFailedConnect(true),
	}
	if dial != nil {
		opts = append(opts, nats.SetCustomDialer(dialer{before: dial}))
	}
	nc, err := nats.Connect(strings.Join(b.cfg.URLs, ","), opts...)
	if err != nil {
		return nil, fmt.Errorf("natsbroker: connecting to %s: %w", strings.Join(b.cfg.URLs, ","), err)
	}
	return nc, nil
}

type dialer struct{ before func() }

func (d dialer) Dial(network, address string) (net.Conn, error) {
	d.before()
	return (&net.Dialer{Timeout: 2 * time.Second}).Dial(network, address)
}

// Close stops the publisher (releasing its lease) and closes the
// connection. The feeds end with their hubs.
func (b *Broker) Close() error {
	if b.cancel != nil {
		b.cancel()
	}
	b.wg.Wait()
	if b.nc != nil {
		b.nc.Close()
	}
	return nil
}

// Received returns the number of event and ephemeral messages the feeds
// of this Broker received (a hub receives only those of its interest).
func (b *Broker) Received() int64 { return b.received.Load() }

// Publishing reports whether this process holds the publisher's lease.
func (b *Broker) Publishing() bool { return b.leading.Load() }

// escape makes an id one subject token.
func escape(id string) string {
	ok := true
	for i := 0; i < len(id); i++ {
		if !plain(id[i]) {
			ok = false
			break
		}
	}
	if ok && id != "" {
		return id
	}
	var sb strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		if plain(c) {
			sb.WriteByte(c)
		} else {
			fmt.Fprintf(&sb, "%%%02X", c)
		}
	}
	if sb.Len() == 0 {
		return "%"
	}
	return sb.String()
}

func plain(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// subjects returns the subjects an event is published on.
func (b *Broker) subjects(e *chat.Event) []string {
	p := b.cfg.Prefix + ".ev."
	var ss []string
	if e.ChannelID != "" {
		ss = append(ss, p+"c."+escape(e.ChannelID))
	}
	for _, u := range e.UserIDs {
		ss = append(ss, p+"u."+escape(u))
	}
	if e.Name == chat.EventAdminDidRevokeToken {
		if d, ok := chat.AccessEvent(e); ok && d.Admin != "" {
			ss = append(ss, p+"a."+escape(d.Admin))
		}
	}
	if len(ss) == 0 {
		ss = append(ss, p+"x")
	}
	return ss
}

// keySubjects returns the subjects of a broker key.
func (b *Broker) keySubjects(key string) []string {
	p := b.cfg.Prefix
	switch key {
	case broker.KeyAll:
		return []string{p + ".ev.>", p + ".eph.>"}
	case broker.KeyPresence:
		return []string{p + ".eph.p"}
	}
	id := escape(key[1:])
	switch key[0] {
	case 'c':
		return []string{p + ".ev.c." + id, p + ".eph.c." + id}
	case 'u':
		return []string{p + ".ev.u." + id, p + ".eph.u." + id}
	case 'a':
		return []string{p + ".ev.a." + id}
	}
	return nil
}

// wireEvent is an event as published. D is absent when the event was too
// large (the hub reads it from the log).
type wireEvent struct {
	ID        int64           `json:"id"`
	Name      string          `json:"e"`
	ChannelID string          `json:"c,omitempty"`
	UserIDs   []string        `json:"u,omitempty"`
	Data      json.RawMessage `json:"d,omitempty"`
	At        chat.Time       `json:"t"`
}

// wireEphemeral is an ephemeral event as published.
type wireEphemeral struct {
	Event     string          `json:"e"`
	ChannelID string          `json:"c,omitempty"`
	UserID    string          `json:"u,omitempty"`
	Data      json.RawMessage `json:"d"`
	At        chat.Time       `json:"t"`
}

// PublishEphemeral implements chat.EphemeralBroker: one core NATS message
// on <prefix>.eph.c.<channel>, <prefix>.eph.p for user.didChangePresence
// (followed by every process with end-user or filtered admin streams), or
// <prefix>.eph.u.<user> for another event of no channel. Delivery is at
// most once.
func (b *Broker) PublishEphemeral(ctx context.Context, ev chat.EphemeralEvent) error {
	data, err := json.Marshal(wireEphemeral{Event: ev.Event, ChannelID: ev.ChannelID, UserID: ev.UserID, Data: ev.Data, At: ev.CreatedAt})
	if err != nil {
		return chat.Errorf(chat.CodeBadRequest, "ephemeral event: %v", err)
	}
	if int64(len(data)) > b.nc.MaxPayload() {
		return chat.Errorf(chat.CodeBadRequest, "ephemeral event: %d bytes, over the broker's %d", len(data), b.nc.MaxPayload())
	}
	subj := b.cfg.Prefix + ".eph.c." + escape(ev.ChannelID)
	switch {
	case ev.Event == chat.EventUserDidChangePresence:
		subj = b.cfg.Prefix + ".eph.p"
	case ev.ChannelID == "":
		subj = b.cfg.Prefix + ".eph.u." + escape(ev.UserID)
	}
	if err := b.nc.Publish(subj, data); err != nil {
		return chat.Errorf(chat.CodeUnavailable, "ephemeral event: %v", err)
	}
	return nil
}

// WatchEphemeral implements chat.EphemeralBroker with a subscription to
// every ephemeral subject (chat.Service.SubscribeEphemeral's relay; a
// hub's feed subscribes to those of its interest only). Events that
// arrive while the channel's buffer (256) is full are dropped.
func (b *Broker) WatchEphemeral(ctx context.Context) (<-chan chat.EphemeralEvent, error) {
	in := make(chan *nats.Msg, 256)
	sub, err := b.nc.ChanSubscribe(b.cfg.Prefix+".eph.>", in)
	if err != nil {
		return nil, chat.Errorf(chat.CodeUnavailable, "watching ephemeral events: %v", err)
	}
	out := make(chan chat.EphemeralEvent, 256)
	go func() {
		defer close(out)
		defer func() { _ = sub.Unsubscribe() }()
		for {
			select {
			case <-ctx.Done():
				return
			case m := <-in:
				ev, ok := decodeEphemeral(m.Data)
				if !ok {
					continue
				}
				select {
				case out <- ev:
				default:
				}
			}
		}
	}()
	return out, nil
}

func decodeEphemeral(data []byte) (chat.EphemeralEvent, bool) {
	var w wireEphemeral
	if json.Unmarshal(data, &w) != nil || w.Event == "" {
		return chat.EphemeralEvent{}, false
	}
	return chat.EphemeralEvent{Event: w.Event, ChannelID: w.ChannelID, UserID: w.UserID, Data: w.Data, CreatedAt: w.At}, true
}

// candidate tries the lease every PollInterval and publishes while it
// holds it.
func (b *Broker) candidate(ctx context.Context) {
	t := time.NewTicker(b.cfg.PollInterval)
	defer t.Stop()
	for {
		l, err := b.cfg.Leaser.AcquireLease(ctx, b.cfg.Stream)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				b.cfg.Logger.Warn("natsbroker: taking the publisher's lease", "err", err)
			}
		case l != nil:
			b.leading.Store(true)
			err := b.publish(ctx, l)
			b.leading.Store(false)
			if errors.Is(err, errAbandon) {
				_ = l.Release() // as if the process had died
				return
			}
			if err != nil && ctx.Err() == nil {
				b.cfg.Logger.Warn("natsbroker: publishing", "err", err)
			}
			_ = l.Release()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// publishBatch bounds the events of one batch.
const publishBatch = 500

// ackWait bounds the wait for a batch's acknowledgements; the batch is
// then published again.
const ackWait = 2 * time.Second

// errAbandon ends a lease at a test's hook.
var errAbandon = errors.New("natsbroker: publisher abandoned")

// publish publishes the log while l holds, and answers the barrier.
func (b *Broker) publish(ctx context.Context, l broker.Lease) error {
	sync, err := b.nc.Subscribe(b.cfg.Prefix+".sync", func(m *nats.Msg) { _ = m.Respond(m.Data) })
	if err != nil {
		return err
	}
	defer func() { _ = sync.Unsubscribe() }()
	var wake <-chan struct{}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	if w, ok := b.cfg.Store.(chat.EventWatcher); ok {
		if ch, err := w.WatchEvents(wctx); err == nil {
			wake = ch
		}
	}
	poll := time.NewTicker(b.cfg.PollInterval)
	defer poll.Stop()
	// Only the lease's holder moves the position: read it once.
	pos, err := l.Published(ctx)
	if err != nil {
		return err
	}
	backoff := time.Duration(0)
	for {
		more, err := b.publishOnce(ctx, l, &pos)
		switch {
		case err == nil:
			backoff = 0
		case errors.Is(err, errAbandon) || ctx.Err() != nil:
			return err
		default:
			select {
			case <-l.Lost():
				return err
			default:
			}
			// NATS or JetStream is unavailable (a node lost, a leader
			// being elected): publish the batch again, the repeats are
			// dropped.
			b.cfg.Logger.Warn("natsbroker: publishing", "err", err)
			backoff = min(max(2*backoff, 100*time.Millisecond), 2*time.Second)
			select {
			case <-ctx.Done():
				return nil
			case <-l.Lost():
				return errors.New("natsbroker: the publisher's lease was lost")
			case <-time.After(backoff):
			}
			continue
		}
		if more {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-l.Lost():
			return errors.New("natsbroker: the publisher's lease was lost")
		case _, ok := <-wake:
			if !ok {
				wake = nil
			}
		case <-poll.C:
		}
	}
}

// publishOnce publishes one batch after the position *pos, and advances
// it; more is true when the batch was full.
func (b *Broker) publishOnce(ctx context.Context, l broker.Lease, pos *int64) (more bool, err error) {
	var es []*chat.Event
	if err := b.cfg.Store.View(ctx, func(tx chat.Tx) (err error) {
		es, err = tx.ReadEvents(ctx, *pos, publishBatch)
		return err
	}); err != nil {
		return false, err
	}
	if len(es) == 0 {
		return false, nil
	}
	if b.beforePublish != nil {
		if err := b.beforePublish(); err != nil {
			return false, err
		}
	}
	max := b.nc.MaxPayload()
	var futures []jetstream.PubAckFuture
	for _, e := range es {
		w := wireEvent{ID: e.ID, Name: e.Name, ChannelID: e.ChannelID, UserIDs: e.UserIDs, Data: e.Data, At: e.CreatedAt}
		data, err := json.Marshal(w)
		if err != nil {
			return false, err
		}
		if int64(len(data))+512 > max {
			w.Data = nil
			if data, err = json.Marshal(w); err != nil {
				return false, err
			}
		}
		for n, subj := range b.subjects(e) {
			m := nats.NewMsg(subj)
			m.Data = data
			f, err := b.js.PublishMsgAsync(m, jetstream.WithMsgID(strconv.FormatInt(e.ID, 10)+"."+strconv.Itoa(n)))
			if err != nil {
				return false, err
			}
			futures = append(futures, f)
		}
	}
	wait, cancel := context.WithTimeout(ctx, ackWait)
	defer cancel()
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return false, fmt.Errorf("natsbroker: publishing event: %w", err)
		case <-wait.Done():
			return false, fmt.Errorf("natsbroker: no acknowledgement: %w", wait.Err())
		}
	}
	last := es[len(es)-1].ID
	if err := b.nc.Publish(b.cfg.Prefix+".pos", strconv.AppendInt(nil, last, 10)); err != nil {
		return false, err
	}
	if b.beforeAdvance != nil {
		if err := b.beforeAdvance(); err != nil {
			return false, err
		}
	}
	if err := l.Advance(ctx, last); err != nil {
		return false, err
	}
	*pos = last
	return len(es) == publishBatch, nil
}

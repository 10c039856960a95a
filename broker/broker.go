// Package broker carries the events of the log, and the ephemeral events,
// from the process where they happened to the event streams of every
// process (package stream follows a Broker).
//
// Three ship. InProcess (the default): the hub reads the log when the
// store signals a commit and every poll interval; ephemeral events stay in
// the process. Postgres: the same reads, woken across processes by the
// store's LISTEN/NOTIFY, and the ephemeral events over NOTIFY; nothing
// else to run. NATS JetStream (package broker/natsbroker): one process at
// a time publishes the committed events, in id order, to subjects by
// channel, user and admin account, and each process subscribes only to the
// subjects of the channels and users its streams follow.
//
// Whatever the broker, the store is the source of truth: an event is
// written in the transaction of its change and its id (the store's)
// means the same on every process, so a stream resumes from the id of the
// last frame it received from any process.
//
// A broker hands the hub a Feed: a queue of Notes that the hub takes in
// order. A note tells the hub to read the log after the last id it
// reached (Read, Sync), brings an event with its id (Event: the hub
// offers it unless it reached that id already, so a repeat is harmless),
// moves the hub's position without an event (Position: every event of the
// hub's interest up to it was delivered), says that what follows may
// have a gap until the next Sync (Epoch), or that it had one (Reset).
package broker

import (
	"context"
	"sync"
	"time"

	chat "github.com/chatengine/chat"
)

// A Broker gives each hub a Feed.
type Broker interface {
	// Follow returns a feed that runs until ctx ends or it is closed.
	Follow(ctx context.Context) (Feed, error)
}

// A Feed is one hub's queue of notes, and its interest.
type Feed interface {
	// Ready receives a value (buffer 1) when notes may be waiting.
	Ready() <-chan struct{}
	// Take returns the notes waiting, in order, and empties the queue.
	Take() []Note
	// Want adds interest in keys (see Key) and returns 0 when every one
	// of them is delivered already, else the generation of the Sync note
	// after which they are: events of those keys with an id above the
	// log's position at that Sync reach the feed.
	Want(keys []string) uint64
	// Release removes interest that Want added, key by key.
	Release(keys []string)
	// Keyed reports whether the feed delivers by interest: when false,
	// Want and Release do nothing and need not be called.
	Keyed() bool
	// Ephemeral reports whether the feed brings the ephemeral events
	// (Ephemeral notes); otherwise the hub takes them from
	// chat.Service.SubscribeEphemeral.
	Ephemeral() bool
	// Close ends the feed.
	Close()
}

// Keys name what a stream follows.
const (
	// KeyAll is every event (an admin's stream without a channel filter).
	KeyAll = "*"
	// KeyPresence is the user.didChangePresence events of every user
	// (ephemeral, of no channel): the hub delivers each to the streams
	// of the users who share a channel with its user, which it finds in
	// the store, so every stream that may receive one follows them.
	KeyPresence = "p"
)

// KeyChannel is the key of a channel's events.
func KeyChannel(id string) string { return "c" + id }

// KeyUser is the key of the events about a user.
func KeyUser(id string) string { return "u" + id }

// KeyAdmin is the key of the events about an admin account.
func KeyAdmin(name string) string { return "a" + name }

// Kind is what a Note says.
type Kind int

// Kinds of note.
const (
	// Read: read the log after the hub's position (a commit signal, or
	// the poll).
	Read Kind = iota + 1
	// Event: an event of the hub's interest, with its id. Event.Data is
	// nil when the broker did not carry it (too large): read it.
	Event
	// Ephemeral: an ephemeral event of the hub's interest.
	Ephemeral
	// Position: every event of the hub's interest with an id up to Pos
	// was delivered.
	Position
	// Sync: interest wanted with a generation up to Gen is in place: read
	// the log after the hub's position; from now on the events of those
	// keys come as Event notes.
	Sync
	// Epoch: the connection was renewed; Event and Position notes may
	// have a gap until the Sync with generation Gen: drop them until it.
	Epoch
	// Reset: notes were lost and their order cannot be restored: the hub
	// ends every live stream as too slow (clients resume from the log).
	Reset
)

// A Note is one entry of a Feed.
type Note struct {
	Kind      Kind
	Event     *chat.Event
	Ephemeral chat.EphemeralEvent
	Pos       int64
	Gen       uint64
}

// Queue is a Feed's note queue, safe for concurrent use; brokers embed it.
type Queue struct {
	mu    sync.Mutex
	notes []Note
	ready chan struct{}
}

func (q *Queue) init() {
	if q.ready == nil {
		q.ready = make(chan struct{}, 1)
	}
}

// NewQueue returns an empty queue.
func NewQueue() *Queue {
	q := &Queue{}
	q.init()
	return q
}

// Push appends notes and signals Ready.
func (q *Queue) Push(ns ...Note) {
	q.mu.Lock()
	q.notes = append(q.notes, ns...)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// Len returns the number of notes waiting.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.notes)
}

// Ready implements Feed.
func (q *Queue) Ready() <-chan struct{} { return q.ready }

// Take implements Feed.
func (q *Queue) Take() []Note {
	q.mu.Lock()
	defer q.mu.Unlock()
	ns := q.notes
	q.notes = nil
	return ns
}

// InProcess returns the broker of one process (the default with every
// store): the hub reads the log when w signals a commit (give it the
// chat.Service, whose WatchEvents passes on the store's signals, or an
// event-watching store) and every poll interval; the ephemeral events go
// through chat.Service (in process, or through the store when it is a
// chat.EphemeralBroker). With a Postgres store the store's signals come
// from every process: see Postgres.
func InProcess(w chat.EventWatcher, poll time.Duration) Broker {
	return &logBroker{w: w, poll: poll}
}

// Postgres returns the broker of several processes on one Postgres
// database: the store's LISTEN/NOTIFY wakes the hub of every process
// after each relay pass that moved events into the log, and carries the
// ephemeral events (give the store to chat.Config.EphemeralBroker, or let
// the Service find it). A lost notification costs at most one poll
// interval. Every process reads every event from the log.
func Postgres(st interface {
	chat.Store
	chat.EventWatcher
	chat.EphemeralBroker
}, poll time.Duration) Broker {
	return &logBroker{w: st, poll: poll}
}

// logBroker is InProcess and Postgres: Read notes from the store's
// signals and a ticker.
type logBroker struct {
	w    chat.EventWatcher
	poll time.Duration
}

func (b *logBroker) Follow(ctx context.Context) (Feed, error) {
	runCtx, cancel := context.WithCancel(ctx)
	var wake <-chan struct{} // nil when w cannot signal: poll only
	if b.w != nil {
		ch, err := b.w.WatchEvents(runCtx)
		if err != nil {
			cancel()
			return nil, err
		}
		wake = ch
	}
	f := &logFeed{Queue: NewQueue(), cancel: cancel}
	poll := b.poll
	if poll <= 0 {
		poll = time.Second
	}
	f.Push(Note{Kind: Read})
	go func() {
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case _, ok := <-wake:
				if !ok {
					wake = nil
					continue
				}
			case <-t.C:
			}
			if f.Len() == 0 {
				f.Push(Note{Kind: Read})
			}
		}
	}()
	return f, nil
}

type logFeed struct {
	*Queue
	cancel context.CancelFunc
}

func (f *logFeed) Want([]string) uint64 { return 0 }
func (f *logFeed) Release([]string)     {}
func (f *logFeed) Keyed() bool          { return false }
func (f *logFeed) Ephemeral() bool      { return false }
func (f *logFeed) Close()               { f.cancel() }

// Lease is the right to publish the log to a broker, held by one process
// of a deployment at a time (see Leaser).
type Lease interface {
	// Published returns the id up to which the log was published.
	Published(ctx context.Context) (int64, error)
	// Advance records that the log was published up to id; it fails once
	// the lease is lost.
	Advance(ctx context.Context, id int64) error
	// Lost is closed when the lease is known to be lost.
	Lost() <-chan struct{}
	// Release gives the lease up.
	Release() error
}

// Leaser hands out the publisher's lease (store/postgres's Store is one).
type Leaser interface {
	// AcquireLease takes the lease named name, or returns nil, nil while
	// another process holds it.
	AcquireLease(ctx context.Context, name string) (Lease, error)
}

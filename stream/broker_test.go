package stream_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/broker"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/stream"
)

// scriptedFeed is a broker feed whose notes the test pushes, and which
// records the interest the hub wants: every Want is pending (a new
// generation) until the test pushes its Sync.
type scriptedFeed struct {
	*broker.Queue
	mu     sync.Mutex
	gen    uint64
	wanted map[string]int
	wants  chan uint64
}

func (f *scriptedFeed) Follow(context.Context) (broker.Feed, error) { return f, nil }
func (f *scriptedFeed) Keyed() bool                                 { return true }
func (f *scriptedFeed) Ephemeral() bool                             { return true }
func (f *scriptedFeed) Close()                                      {}

func (f *scriptedFeed) Want(keys []string) uint64 {
	f.mu.Lock()
	f.gen++
	g := f.gen
	for _, k := range keys {
		f.wanted[k]++
	}
	f.mu.Unlock()
	f.wants <- g
	return g
}

func (f *scriptedFeed) Release(keys []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range keys {
		if f.wanted[k]--; f.wanted[k] == 0 {
			delete(f.wanted, k)
		}
	}
}

func (f *scriptedFeed) interest() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, n := range f.wanted {
		out[k] = n
	}
	return out
}

// lastEvent returns the newest event of the log.
func (e *env) lastEvent() *chat.Event {
	e.t.Helper()
	last, err := e.svc.LastEventID(e.ctx)
	require.NoError(e.t, err)
	es, err := e.svc.ReadEvents(e.ctx, last-1, 1)
	require.NoError(e.t, err)
	require.Len(e.t, es, 1)
	return es[0]
}

// TestHubFollowsFeed drives the hub's side of a keyed broker note by
// note: a subscription waits for the Sync of the interest it wants; an
// Event note is offered once (a repeat is dropped); after an Epoch, Event
// notes are dropped until the Sync, whose read of the log delivers what
// they carried; a Position moves the hub past events of no interest; an
// end user joining a channel wants it, and the hub drops Event notes
// until its Sync; a Reset ends the streams as too slow; a closed
// subscription releases its interest.
func TestHubFollowsFeed(t *testing.T) {
	t.Parallel()
	feed := &scriptedFeed{Queue: broker.NewQueue(), wanted: map[string]int{}, wants: make(chan uint64, 16)}
	e := newEnv(t, memory.New(), stream.Config{Broker: feed})
	e.channel("c", "alice")
	e.channel("d", "bob")

	type result struct {
		s   *stream.Subscription
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := e.hub.Subscribe(e.ctx, stream.Filter{UserID: "alice"}, nil)
		done <- result{s, err}
	}()
	g := <-feed.wants
	require.Equal(t, map[string]int{broker.KeyUser("alice"): 1, broker.KeyChannel("c"): 1, broker.KeyPresence: 1}, feed.interest(),
		"its user, its channels and the presence events of its contacts")
	select {
	case <-done:
		t.Fatal("the subscription joined before the Sync of its interest")
	default:
	}
	feed.Push(broker.Note{Kind: broker.Sync, Gen: g})
	r := <-done
	require.NoError(t, r.err)
	alice := r.s
	defer alice.Close()

	// An Event note is offered once.
	e.post("alice", "c", "m1")
	m1 := e.lastEvent()
	feed.Push(broker.Note{Kind: broker.Event, Event: m1}, broker.Note{Kind: broker.Event, Event: m1})
	require.Equal(t, "m1", text(t, next(t, alice)))
	e.post("alice", "c", "m2")
	feed.Push(broker.Note{Kind: broker.Event, Event: e.lastEvent()})
	require.Equal(t, "m2", text(t, next(t, alice)), "m1 came once")

	// After an Epoch, Event notes are dropped until the Sync, which reads
	// the log.
	feed.Push(broker.Note{Kind: broker.Epoch, Gen: 100})
	e.post("alice", "c", "m3")
	feed.Push(broker.Note{Kind: broker.Event, Event: e.lastEvent()})
	e.post("alice", "c", "m4") // its note was lost
	m4 := e.lastEvent()
	feed.Push(broker.Note{Kind: broker.Sync, Gen: 100})
	require.Equal(t, "m3", text(t, next(t, alice)))
	require.Equal(t, "m4", text(t, next(t, alice)))
	feed.Push(broker.Note{Kind: broker.Event, Event: m4}) // a repeat
	e.post("alice", "c", "m5")
	feed.Push(broker.Note{Kind: broker.Event, Event: e.lastEvent()})
	require.Equal(t, "m5", text(t, next(t, alice)), "m3 and m4 came once")

	// A Position: the broker delivered every event of interest up to it.
	e.post("bob", "d", "elsewhere")
	feed.Push(broker.Note{Kind: broker.Position, Pos: e.lastEvent().ID})
	e.post("alice", "c", "m6")
	feed.Push(broker.Note{Kind: broker.Event, Event: e.lastEvent()})
	require.Equal(t, "m6", text(t, next(t, alice)))

	// Alice joins d: the hub wants d, and drops Event notes until its Sync.
	_, err := e.svc.AddUsers(e.ctx, e.admin, "d", []string{"alice"})
	require.NoError(t, err)
	feed.Push(broker.Note{Kind: broker.Event, Event: e.lastEvent()})
	gd := <-feed.wants
	require.Equal(t, 1, feed.interest()[broker.KeyChannel("d")])
	f := next(t, alice)
	require.Equal(t, chat.EventChannelDidAddUsers, f.Event)
	e.post("bob", "d", "in d")
	feed.Push(broker.Note{Kind: broker.Event, Event: e.lastEvent()}) // dropped: d was not in place
	e.post("bob", "d", "in d again")                                 // its note never came
	feed.Push(broker.Note{Kind: broker.Sync, Gen: gd})
	require.Equal(t, "in d", text(t, next(t, alice)))
	require.Equal(t, "in d again", text(t, next(t, alice)))

	// A Reset ends the streams as too slow, and releases their interest.
	feed.Push(broker.Note{Kind: broker.Reset})
	_, err = alice.Next(e.ctx)
	require.ErrorIs(t, err, stream.ErrTooSlow)
	require.Empty(t, feed.interest())
}

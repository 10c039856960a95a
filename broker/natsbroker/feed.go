package natsbroker

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/broker"
	"github.com/nats-io/nats.go"
)

// feedBuffer is the client's channel for one feed; the feed's goroutine
// empties it into the unbounded note queue at once.
const feedBuffer = 1 << 16

// syncRetry is how often an unanswered barrier request is sent again
// (no publisher yet, or a connection being renewed).
const syncRetry = 250 * time.Millisecond

// epochSubject marks, in a feed's channel, the start of a new connection.
const epochSubject = "\x00epoch"

// Follow implements broker.Broker: a feed with a connection of its own.
func (b *Broker) Follow(ctx context.Context) (broker.Feed, error) {
	f := &feed{
		Queue: broker.NewQueue(),
		b:     b,
		in:    make(chan *nats.Msg, feedBuffer),
		keys:  map[string]*keySubs{},
		kick:  make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
	nc, err := b.connect("chat-hub", f.dialing)
	if err != nil {
		return nil, err
	}
	f.nc = nc
	f.inbox = nats.NewInbox()
	// A client that drops a message of the feed's channel reports it
	// here; the order is lost, so the hub resets.
	nc.SetErrorHandler(func(_ *nats.Conn, s *nats.Subscription, err error) {
		if err == nats.ErrSlowConsumer && s != nil && f.owns(s) {
			f.Push(broker.Note{Kind: broker.Reset})
		}
	})
	for _, subj := range []string{f.inbox, b.cfg.Prefix + ".pos"} {
		s, err := nc.ChanSubscribe(subj, f.in)
		if err != nil {
			nc.Close()
			return nil, err
		}
		f.fixed = append(f.fixed, s)
	}
	runCtx, cancel := context.WithCancel(ctx)
	f.cancel = cancel
	f.wg.Add(2)
	go func() {
		defer f.wg.Done()
		f.drain(runCtx)
	}()
	go func() {
		defer f.wg.Done()
		f.barrier(runCtx)
	}()
	return f, nil
}

type feed struct {
	*broker.Queue
	b      *Broker
	nc     *nats.Conn
	in     chan *nats.Msg
	inbox  string
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kick   chan struct{}
	done   chan struct{}
	once   sync.Once

	mu     sync.Mutex
	fixed  []*nats.Subscription // the inbox and the positions
	keys   map[string]*keySubs
	gen    uint64 // the last generation handed out
	synced uint64 // the last generation answered
}

// keySubs are the subscriptions of one key, shared by its holders.
type keySubs struct {
	n    int
	gen  uint64 // in place once a Sync of this generation came
	subs []*nats.Subscription
}

func (f *feed) Keyed() bool     { return true }
func (f *feed) Ephemeral() bool { return true }

func (f *feed) owns(s *nats.Subscription) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, x := range f.fixed {
		if x == s {
			return true
		}
	}
	for _, k := range f.keys {
		for _, x := range k.subs {
			if x == s {
				return true
			}
		}
	}
	return false
}

// dialing runs before each dial of the feed's connection: the client
// dials only after the reader of the previous connection ended, so the
// marker follows every message of that connection in the channel.
// A full channel has dropped messages already: the hub resets.
func (f *feed) dialing() {
	select {
	case f.in <- &nats.Msg{Subject: epochSubject}:
	default:
		f.Push(broker.Note{Kind: broker.Reset})
	}
}

// Want implements broker.Feed.
func (f *feed) Want(keys []string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var g uint64
	added := false
	for _, k := range keys {
		ks := f.keys[k]
		if ks == nil {
			if !added {
				f.gen++
				added = true
			}
			ks = &keySubs{gen: f.gen}
			for _, subj := range f.b.keySubjects(k) {
				s, err := f.nc.ChanSubscribe(subj, f.in)
				if err != nil {
					f.b.cfg.Logger.Warn("natsbroker: subscribing", "subject", subj, "err", err)
					continue
				}
				ks.subs = append(ks.subs, s)
			}
			f.keys[k] = ks
		}
		ks.n++
		if ks.gen > f.synced {
			g = max(g, ks.gen)
		}
	}
	if added {
		select {
		case f.kick <- struct{}{}:
		default:
		}
	}
	return g
}

// Release implements broker.Feed.
func (f *feed) Release(keys []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range keys {
		ks := f.keys[k]
		if ks == nil {
			continue
		}
		if ks.n--; ks.n > 0 {
			continue
		}
		delete(f.keys, k)
		for _, s := range ks.subs {
			_ = s.Unsubscribe()
		}
	}
}

// Close implements broker.Feed.
func (f *feed) Close() {
	f.once.Do(func() {
		close(f.done)
		f.cancel()
		f.nc.Close()
		f.wg.Wait()
	})
}

// barrier sends the request of the newest generation to <prefix>.sync
// until it is answered (see the package doc).
func (f *feed) barrier(ctx context.Context) {
	t := time.NewTicker(syncRetry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.kick:
		case <-t.C:
		}
		f.mu.Lock()
		gen, synced := f.gen, f.synced
		f.mu.Unlock()
		if gen > synced && f.nc.IsConnected() {
			_ = f.nc.PublishMsg(&nats.Msg{Subject: f.b.cfg.Prefix + ".sync", Reply: f.inbox,
				Data: strconv.AppendUint(nil, gen, 10)})
		}
	}
}

// drain turns the messages of the feed's channel into notes, in order.
func (f *feed) drain(ctx context.Context) {
	evPrefix := f.b.cfg.Prefix + ".ev."
	ephPrefix := f.b.cfg.Prefix + ".eph."
	pos := f.b.cfg.Prefix + ".pos"
	for {
		var m *nats.Msg
		select {
		case <-ctx.Done():
			return
		case m = <-f.in:
		}
		switch {
		case m.Subject == epochSubject:
			f.mu.Lock()
			f.gen++
			g := f.gen
			f.mu.Unlock()
			f.Push(broker.Note{Kind: broker.Epoch, Gen: g})
			select {
			case f.kick <- struct{}{}:
			default:
			}
		case m.Subject == f.inbox:
			g, err := strconv.ParseUint(string(m.Data), 10, 64)
			if err != nil {
				continue
			}
			f.mu.Lock()
			fresh := g > f.synced
			if fresh {
				f.synced = g
			}
			f.mu.Unlock()
			if fresh {
				f.Push(broker.Note{Kind: broker.Sync, Gen: g})
			}
		case m.Subject == pos:
			if p, err := strconv.ParseInt(string(m.Data), 10, 64); err == nil {
				f.Push(broker.Note{Kind: broker.Position, Pos: p})
			}
		case strings.HasPrefix(m.Subject, evPrefix):
			f.b.received.Add(1)
			var w wireEvent
			if json.Unmarshal(m.Data, &w) != nil || w.ID <= 0 {
				continue
			}
			f.Push(broker.Note{Kind: broker.Event, Event: &chat.Event{ID: w.ID, Name: w.Name,
				ChannelID: w.ChannelID, UserIDs: w.UserIDs, Data: w.Data, CreatedAt: w.At}})
		case strings.HasPrefix(m.Subject, ephPrefix):
			f.b.received.Add(1)
			if ev, ok := decodeEphemeral(m.Data); ok {
				f.Push(broker.Note{Kind: broker.Ephemeral, Ephemeral: ev})
			}
		}
	}
}

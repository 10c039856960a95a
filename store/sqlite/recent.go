package sqlite

import (
	"sync"

	chat "github.com/chatengine/chat"
)

// recentSlots is how many of the latest committed events the store keeps
// in memory (recentEvents). A hub reads the log within about a
// millisecond of the commit signal; this covers bursts of hundreds of
// commits between two of its reads.
const recentSlots = 1024

// recentMaxData is the largest event data kept: a larger event is read from
// the log. With it the events kept hold at most 8 MiB of data (about 1 MiB
// with the events of text messages).
const recentMaxData = 8 << 10

// recentEvents holds the events the store's writer committed last, each
// in the slot of its id modulo recentSlots, so that the reads of the log
// that follow every commit signal (one per hub) need no read transaction.
// The writer adds a transaction's events after its COMMIT and before it
// signals the commit, so a reader woken by the signal finds them.
type recentEvents struct {
	mu    sync.Mutex
	slots [recentSlots]*chat.Event
}

// add keeps committed events (ids set), but those whose data is larger
// than recentMaxData.
func (r *recentEvents) add(es []*chat.Event) {
	if len(es) == 0 {
		return
	}
	r.mu.Lock()
	for _, e := range es {
		if len(e.Data) > recentMaxData {
			r.slots[e.ID%recentSlots] = nil // read from the log
			continue
		}
		r.slots[e.ID%recentSlots] = e
	}
	r.mu.Unlock()
}

// read returns copies of the events held with ids after+1, after+2, ...,
// at most limit (any number when limit <= 0), up to the first id not held.
func (r *recentEvents) read(after int64, limit int) []*chat.Event {
	if after < 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*chat.Event
	for id := after + 1; (limit <= 0 || len(out) < limit) && len(out) < recentSlots; id++ {
		e := r.slots[id%recentSlots]
		if e == nil || e.ID != id {
			break
		}
		c := *e
		out = append(out, &c)
	}
	return out
}

// RecentEvents implements chat.RecentEventReader: the events this store's
// writer committed last (see recentEvents). Events written by another
// process sharing the file are never held; a read that reaches one stops
// before it.
func (s *Store) RecentEvents(after int64, limit int) []*chat.Event {
	return s.recent.read(after, limit)
}

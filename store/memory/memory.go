package memory

import (
	"context"
	"sync"

	chat "github.com/chatengine/chat"
)

// Store is the in-memory chat.Store. The zero value is not usable; call New.
type Store struct {
	mu      sync.RWMutex
	d       *data
	closed  bool
	undoBuf []func() // reused by write transactions (guarded by the write lock)

	wmu      sync.Mutex
	watchers map[chan struct{}]int // the signal kinds each channel wants
	wclosed  bool
}

// Signal kinds: what a commit brought.
const (
	sigDeliveries = 1 << iota // deliveries enqueued or rescheduled
	sigEvents                 // events appended
)

var (
	_ chat.Store           = (*Store)(nil)
	_ chat.OutboxWatcher   = (*Store)(nil)
	_ chat.EventWatcher    = (*Store)(nil)
	_ chat.DeliveryWatcher = (*Store)(nil)
	_ chat.Tx              = (*tx)(nil)
)

// New returns an empty store. It starts no goroutines.
func New() *Store {
	return &Store{d: newData(), watchers: map[chan struct{}]int{}}
}

var (
	errClosed   = chat.Errorf(chat.CodeUnavailable, "memory store is closed")
	errTxDone   = chat.Errorf(chat.CodeInternal, "memory store: transaction used after it ended")
	errReadOnly = chat.Errorf(chat.CodeInternal, "memory store: write in a read-only transaction")
)

// Update runs fn in a read-write transaction. It returns ctx.Err() without
// calling fn when ctx is already done, fn's error (after undoing every write
// fn made) when fn fails, and re-panics after undoing when fn panics.
func (s *Store) Update(ctx context.Context, fn func(tx chat.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	signal, err := s.run(fn, true)
	if signal != 0 {
		s.notify(signal)
	}
	return err
}

// View runs fn in a read-only transaction; writes through its Tx fail.
func (s *Store) View(ctx context.Context, fn func(tx chat.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := s.run(fn, false)
	return err
}

func (s *Store) run(fn func(tx chat.Tx) error, write bool) (signal int, err error) {
	if write {
		s.mu.Lock()
	} else {
		s.mu.RLock()
	}
	t := &tx{d: s.d, write: write}
	if write {
		t.undo = s.undoBuf[:0]
	}
	finished := false
	defer func() {
		if !finished {
			// fn panicked or called runtime.Goexit (t.FailNow in a test).
			t.rollback()
		}
		t.done = true
		if write {
			if cap(t.undo) <= 1024 {
				clear(t.undo) // drop the closures' references
				s.undoBuf = t.undo[:0]
			}
			t.undo = nil
			s.mu.Unlock()
		} else {
			s.mu.RUnlock()
		}
	}()
	if s.closed {
		finished = true
		return 0, errClosed
	}
	if err := fn(t); err != nil {
		t.rollback()
		finished = true
		return 0, err
	}
	finished = true
	return t.signal, nil
}

// Close marks the store closed: later transactions fail with
// CodeUnavailable and every outbox watcher channel is closed. It is
// idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if !s.wclosed {
		s.wclosed = true
		for ch := range s.watchers {
			close(ch)
		}
		s.watchers = nil
	}
	return nil
}

// WatchOutbox implements chat.OutboxWatcher: the returned channel (buffer
// 1) receives a value after every commit that enqueued or rescheduled
// deliveries or appended events, and is closed when ctx is done or the
// store closed.
func (s *Store) WatchOutbox(ctx context.Context) (<-chan struct{}, error) {
	return s.watch(ctx, sigDeliveries|sigEvents)
}

// WatchEvents implements chat.EventWatcher: as WatchOutbox, for the
// commits that appended events only.
func (s *Store) WatchEvents(ctx context.Context) (<-chan struct{}, error) {
	return s.watch(ctx, sigEvents)
}

// WatchDeliveries implements chat.DeliveryWatcher: as WatchOutbox, for
// the commits that enqueued or rescheduled deliveries only.
func (s *Store) WatchDeliveries(ctx context.Context) (<-chan struct{}, error) {
	return s.watch(ctx, sigDeliveries)
}

func (s *Store) watch(ctx context.Context, kinds int) (<-chan struct{}, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ch := make(chan struct{}, 1)
	s.wmu.Lock()
	if s.wclosed {
		s.wmu.Unlock()
		return nil, errClosed
	}
	s.watchers[ch] = kinds
	s.wmu.Unlock()
	context.AfterFunc(ctx, func() {
		s.wmu.Lock()
		defer s.wmu.Unlock()
		if _, ok := s.watchers[ch]; ok {
			delete(s.watchers, ch)
			close(ch)
		}
	})
	return ch, nil
}

func (s *Store) notify(kinds int) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for ch, want := range s.watchers {
		if want&kinds == 0 {
			continue
		}
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// tx is one transaction. It is used only while its Store lock is held.
type tx struct {
	d      *data
	write  bool
	done   bool
	signal int // signal kinds to send after commit
	undo   []func()
}

func (t *tx) readable() error {
	if t.done {
		return errTxDone
	}
	return nil
}

func (t *tx) writable() error {
	if t.done {
		return errTxDone
	}
	if !t.write {
		return errReadOnly
	}
	return nil
}

// onUndo records the inverse of a mutation that was just made.
func (t *tx) onUndo(f func()) { t.undo = append(t.undo, f) }

func (t *tx) rollback() {
	for i := len(t.undo) - 1; i >= 0; i-- {
		t.undo[i]()
	}
	clear(t.undo)
	t.undo = t.undo[:0]
	t.signal = 0
}

// setKey sets m[k] = v and records the inverse.
func setKey[K comparable, V any](t *tx, m map[K]V, k K, v V) {
	old, had := m[k]
	m[k] = v
	t.onUndo(func() {
		if had {
			m[k] = old
		} else {
			delete(m, k)
		}
	})
}

// delKey deletes m[k] (if present) and records the inverse.
func delKey[K comparable, V any](t *tx, m map[K]V, k K) {
	old, had := m[k]
	if !had {
		return
	}
	delete(m, k)
	t.onUndo(func() { m[k] = old })
}

// replace overwrites *p with v and records the inverse. Stored structs are
// updated this way, never field by field, so every undo entry holds a full
// snapshot.
func replace[T any](t *tx, p *T, v T) {
	old := *p
	*p = v
	t.onUndo(func() { *p = old })
}

// innerMap returns m[k], creating it (with undo) when absent.
func innerMap[K comparable, K2 comparable, V any](t *tx, m map[K]map[K2]V, k K) map[K2]V {
	in, ok := m[k]
	if !ok {
		in = map[K2]V{}
		setKey(t, m, k, in)
	}
	return in
}

func notFound(what, id string) error {
	return chat.Errorf(chat.CodeNotFound, "%s %q not found", what, id)
}

func conflict(format string, args ...any) error {
	return chat.Errorf(chat.CodeConflict, format, args...)
}

package memory

import (
	"cmp"
	"context"
	"slices"
	"sync"

	chat "github.com/chatengine/chat"
)

// Store is the in-memory chat.Store. The zero value is not usable; call New.
type Store struct {
	mu       sync.RWMutex
	d        *data
	closed   bool
	wmu      sync.Mutex
	watchers map[chan struct{}]int // the signal kinds each channel wants; nil once closed
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

// pair is a key of two strings.
type pair [2]string

// data is everything the store holds; maps are made when first written.
type data struct {
	channels     map[string]*chat.Channel
	members      map[pair]*chat.ChannelUser // by (channel, user)
	messages     map[string]*chat.Message
	chanMsgs     map[string][]*chat.Message // per channel, in channelSegment order
	users        map[string]*chat.User
	offlineSince map[string]chat.Time
	procs        map[string]*chat.PresenceProcess
	streams      map[pair]bool // (process, user) stream rows
	roles        map[string]*chat.Role
	rules        map[pair]*chat.Rule // (list, ruleId)
	rulesVersion int64
	reactions    map[[3]string]*chat.Reaction // (user, message, name)
	flags        map[[3]string]bool           // (kind, target, flagger)
	admins       map[string]*chat.Admin
	sessions     map[string]*chat.AdminSession // by id hash
	webhooks     map[string]*chat.Webhook
	hooksVersion int64
	deliveries   map[string]*chat.Delivery
	attempts     map[string][]*chat.DeliveryAttempt
	events       []*chat.Event // in id order
	lastEventID  int64
	blobs        map[pair]*chat.Blob // (messageId, name)
	meta         map[string]string
	audit        map[string]*chat.AuditEntry
	tickets      map[string]*chat.StreamTicket
	reports      map[string]*chat.Report
	blocks       map[pair]*chat.Block // (blocker, blocked)
	devices      map[string]*chat.Device
	levels       map[pair]*chat.NotificationSetting // (user, channel)
	pushes       map[string]*chat.PushDelivery
	batches      map[string]*chat.PushBatch // by message id
}

// New returns an empty store. It starts no goroutines.
func New() *Store { return &Store{d: &data{}, watchers: map[chan struct{}]int{}} }

var (
	errClosed   = chat.Errorf(chat.CodeUnavailable, "memory store is closed")
	errTxDone   = chat.Errorf(chat.CodeInternal, "memory store: transaction used after it ended")
	errReadOnly = chat.Errorf(chat.CodeInternal, "memory store: write in a read-only transaction")
)

// Update runs fn in a read-write transaction. It returns ctx.Err() without
// calling fn when ctx is already done, fn's error (after undoing every write
// fn made) when fn fails, and re-panics after undoing when fn panics.
func (s *Store) Update(ctx context.Context, fn func(tx chat.Tx) error) error {
	signal, err := s.run(ctx, fn, true)
	if signal != 0 {
		s.notify(signal)
	}
	return err
}

// View runs fn in a read-only transaction; writes through its Tx fail.
func (s *Store) View(ctx context.Context, fn func(tx chat.Tx) error) error {
	_, err := s.run(ctx, fn, false)
	return err
}

func (s *Store) run(ctx context.Context, fn func(tx chat.Tx) error, write bool) (signal int, err error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if write {
		s.mu.Lock()
		defer s.mu.Unlock()
	} else {
		s.mu.RLock()
		defer s.mu.RUnlock()
	}
	if s.closed {
		return 0, errClosed
	}
	t := &tx{d: s.d, write: write}
	t.undo = t.buf[:0]
	committed := false
	defer func() {
		t.done = true
		if committed {
			return
		}
		// fn failed, panicked or called runtime.Goexit: undo its writes.
		for i := len(t.undo) - 1; i >= 0; i-- {
			t.undo[i]()
		}
		if r := recover(); r != nil {
			if r != errTxDone && r != errReadOnly {
				panic(r)
			}
			signal, err = 0, r.(error)
		}
	}()
	if err := fn(t); err != nil {
		return 0, err
	}
	committed = true
	return t.signal, nil
}

// Close marks the store closed: later transactions fail with
// CodeUnavailable and every watcher channel is closed. It is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for ch := range s.watchers {
		close(ch)
	}
	s.watchers = nil // and watch refuses new ones
	return nil
}

// WatchOutbox implements chat.OutboxWatcher: the channel (buffer 1) is
// signalled after commits that enqueued or rescheduled deliveries or
// appended events, and closed when ctx is done or the store closed.
func (s *Store) WatchOutbox(ctx context.Context) (<-chan struct{}, error) {
	return s.watch(ctx, sigDeliveries|sigEvents)
}

// WatchEvents implements chat.EventWatcher: as WatchOutbox, for events.
func (s *Store) WatchEvents(ctx context.Context) (<-chan struct{}, error) {
	return s.watch(ctx, sigEvents)
}

// WatchDeliveries implements chat.DeliveryWatcher: as WatchOutbox, for deliveries.
func (s *Store) WatchDeliveries(ctx context.Context) (<-chan struct{}, error) {
	return s.watch(ctx, sigDeliveries)
}

func (s *Store) watch(ctx context.Context, kinds int) (<-chan struct{}, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ch := make(chan struct{}, 1)
	s.wmu.Lock()
	if s.watchers == nil {
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
		if want&kinds != 0 {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// tx is one transaction. It is used only while its Store lock is held.
type tx struct {
	d      *data
	write  bool
	done   bool
	signal int       // signal kinds to send after commit
	undo   []func()  // the inverse of every change made, in order
	buf    [8]func() // undo's first array: most transactions make fewer changes
}

// r returns the data. Every read goes through r, every change through put, del and
// set, which call w: they panic when t is used after its transaction, or to write in
// a View (errors of the caller's code). Update and View recover, undo and return the error.
func (t *tx) r() *data {
	if t.done {
		panic(errTxDone)
	}
	return t.d
}

// w checks that t may write.
func (t *tx) w() {
	if t.r(); !t.write {
		panic(errReadOnly)
	}
}

// put sets (*m)[k] = v, making the map when it is nil, and records the inverse.
func put[K comparable, V any](t *tx, mp *map[K]V, k K, v V) {
	t.w()
	if *mp == nil {
		*mp = map[K]V{}
	}
	m := *mp
	old, had := m[k]
	m[k] = v
	t.undo = append(t.undo, func() {
		if had {
			m[k] = old
		} else {
			delete(m, k)
		}
	})
}

// del deletes m[k] (if present) and records the inverse.
func del[K comparable, V any](t *tx, m map[K]V, k K) {
	t.w()
	if old, had := m[k]; had {
		delete(m, k)
		t.undo = append(t.undo, func() { m[k] = old })
	}
}

// set overwrites *p with v and records the inverse. A stored struct is
// changed this way, as a whole, so that it keeps its address (the maps and
// lists that point at it need no change) and the undo holds a full copy.
func set[T any](t *tx, p *T, v T) {
	t.w()
	old := *p
	*p = v
	t.undo = append(t.undo, func() { *p = old })
}

// sortedValues returns the values of m that keep keeps (nil: all), in order (nil: any).
func sortedValues[K comparable, V any](m map[K]V, keep func(V) bool, order func(a, b V) int) []V {
	var out []V
	for _, v := range m {
		if keep == nil || keep(v) {
			out = append(out, v)
		}
	}
	if order != nil {
		slices.SortFunc(out, order)
	}
	return out
}

// newest orders by createdAt then id, newest first.
func newest(at1, at2 chat.Time, id1, id2 string) int {
	return cmp.Or(at2.Compare(at1.Time), cmp.Compare(id2, id1))
}

// cursor returns how an element compares with the keyset cursor c in a
// query's order (nil when c is nil), for window.
func cursor[C, T any](c *C, cmp func(x T, c *C) int) func(T) int {
	if c == nil {
		return nil
	}
	return func(x T) int { return cmp(x, c) }
}

// window pages a list sorted in a query's order. after(x) > 0 when x comes after the
// After cursor, before(x) < 0 when it comes before the Before cursor (nil: no cursor).
// With a Before cursor the rows are returned in reverse order, nearest the cursor
// first. Offset rows are skipped, then limit > 0 bounds the count.
func window[T any](l []T, after, before func(T) int, offset, limit int) []T {
	var out []T
	for _, x := range l {
		if (after == nil || after(x) > 0) && (before == nil || before(x) < 0) {
			out = append(out, x)
		}
	}
	if before != nil {
		slices.Reverse(out)
	}
	out = out[min(max(offset, 0), len(out)):]
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// first returns at most limit (> 0) elements of l.
func first[T any](l []T, limit int) []T { return window(l, nil, nil, 0, limit) }

// copies applies cp to every element of l.
func copies[T any](l []*T, cp func(*T) *T) []*T {
	out := make([]*T, len(l))
	for i, v := range l {
		out[i] = cp(v)
	}
	return out
}

// get returns a copy of m[k], or CodeNotFound.
func get[K comparable, V any](m map[K]*V, k K, cp func(*V) *V, what string) (*V, error) {
	if v, ok := m[k]; ok {
		return cp(v), nil
	}
	return nil, notFound(what, k)
}

// insert stores v at k, or returns CodeConflict when k is taken.
func insert[K comparable, V any](t *tx, m *map[K]*V, k K, v *V, what string) error {
	if _, ok := (*m)[k]; ok {
		return conflict("%s %v already exists", what, k)
	}
	put(t, m, k, v)
	return nil
}

// change stores, in place of m[k], a copy of it that fn changed, or CodeNotFound when absent.
func change[K comparable, V any](t *tx, m map[K]*V, k K, what string, fn func(v *V)) error {
	p, ok := m[k]
	if !ok {
		return notFound(what, k)
	}
	v := *p
	fn(&v)
	set(t, p, v)
	return nil
}

func notFound(what string, id any) error {
	if k, ok := id.(pair); ok { // as below, without fmt: a poster who is no member is common
		return &chat.Error{Code: chat.CodeNotFound, Message: what + " [" + k[0] + " " + k[1] + "] not found"}
	}
	return chat.Errorf(chat.CodeNotFound, "%s %v not found", what, id)
}

func conflict(format string, args ...any) error {
	return chat.Errorf(chat.CodeConflict, format, args...)
}

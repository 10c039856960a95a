package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	chat "github.com/chatengine/chat"
)

// Compile-time checks that Store implements the chat ports.
var (
	_ chat.Store           = (*Store)(nil)
	_ chat.OutboxWatcher   = (*Store)(nil)
	_ chat.EventWatcher    = (*Store)(nil)
	_ chat.DeliveryWatcher = (*Store)(nil)
)

// Options configures Open. The zero value (or a nil *Options) is the safe
// default: full durability, a 5 second busy timeout and a small read pool.
type Options struct {
	// Synchronous is SQLite's synchronous setting for the write connection:
	// "FULL" (the default) syncs the write-ahead log on every commit, so a
	// write acknowledged by Update survives a process crash and a power
	// loss. "NORMAL" syncs only at checkpoints: a process crash still loses
	// nothing, but a power loss or OS crash may roll back the most recently
	// acknowledged transactions (never corrupting the database); it trades
	// that for fewer fsyncs. "EXTRA" is accepted and, in WAL mode, is as safe as
	// "FULL". Other values (OFF in particular) are rejected.
	Synchronous string
	// BusyTimeout is how long a statement waits for a lock held by another
	// process sharing the file before failing with CodeUnavailable. The
	// default is 5 seconds.
	BusyTimeout time.Duration
	// MaxReadConns bounds the pool of read-only connections that serve
	// View. The default is the larger of 4 and runtime.NumCPU().
	MaxReadConns int
	// MaxBatch bounds how many waiting Update calls are committed together
	// in one transaction (group commit). The default is 128; 1 disables
	// group commit.
	MaxBatch int
}

func (o *Options) withDefaults() (Options, error) {
	var v Options
	if o != nil {
		v = *o
	}
	v.Synchronous = strings.ToUpper(strings.TrimSpace(v.Synchronous))
	switch v.Synchronous {
	case "":
		v.Synchronous = "FULL"
	case "FULL", "NORMAL", "EXTRA":
	default:
		return v, chat.Errorf(chat.CodeBadRequest, "sqlite: Synchronous must be FULL, NORMAL or EXTRA, not %q", v.Synchronous)
	}
	if v.BusyTimeout < 0 {
		return v, chat.Errorf(chat.CodeBadRequest, "sqlite: BusyTimeout must not be negative")
	}
	if v.BusyTimeout == 0 {
		v.BusyTimeout = 5 * time.Second
	}
	if v.MaxReadConns < 0 {
		return v, chat.Errorf(chat.CodeBadRequest, "sqlite: MaxReadConns must not be negative")
	}
	if v.MaxReadConns == 0 {
		v.MaxReadConns = max(4, runtime.NumCPU())
	}
	if v.MaxBatch < 0 {
		return v, chat.Errorf(chat.CodeBadRequest, "sqlite: MaxBatch must not be negative")
	}
	if v.MaxBatch == 0 {
		v.MaxBatch = 128
	}
	return v, nil
}

// Store is a chat.Store over one SQLite database file. It is safe for
// concurrent use. Writes go through one connection owned by a writer
// goroutine (see the package documentation on group commit); reads use a
// pool of query-only connections.
type Store struct {
	path string
	opt  Options
	// normal: the write connection runs with synchronous=NORMAL, set for
	// lazy transactions (see syncFor). Guarded by wlock.
	normal bool
	// vers are the counters of the versions table read in the write
	// transaction under way (see tx.version), emptied when one begins and
	// when a savepoint is rolled back. Guarded by wlock.
	vers map[string]int64
	// memo are the rows of lookups remembered in the write transaction
	// under way (memo.go), emptied as vers is. Guarded by wlock.
	memo map[memoKey]memoEntry
	// memoWrites are the tables each write statement names, for
	// forgetReads (memo.go). Guarded by wlock.
	memoWrites map[string]uint8

	wdb   *sql.DB // the single write connection's pool (MaxOpenConns 1)
	wconn *conn   // the write connection, used only by the holder of wlock
	wlock sync.Mutex
	rdb   *sql.DB // opens the read connections, query_only
	// rslots holds MaxReadConns slots, each an idle read connection or
	// nil (not opened yet, or closed after a failure). View takes a slot
	// for the length of its transaction; waiting callers are served in
	// arrival order (a channel's receivers are), where database/sql hands
	// a freed connection to a random waiter, which under load gave some
	// requests several times the mean wait.
	rslots chan *conn

	reqs       chan *request
	closing    chan struct{}
	writerDone chan struct{}
	closeOnce  sync.Once
	closeErr   error

	commits, committed atomic.Int64 // see Stats

	recent recentEvents // the events committed last (RecentEvents)

	// deferred is the bookkeeping of the deliveries kept with their
	// events (deferred.go); deferredLoop runs until deferredStop closes.
	deferred                   deferredState
	deferredStop, deferredDone chan struct{}

	wmu      sync.Mutex
	watchers map[*watcher]struct{}
	closed   bool // under wmu
}

// dsn returns the data source name of path with the given parameters.
func dsn(path string, params url.Values) string {
	p := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return "file:" + p + "?" + params.Encode()
}

// Open opens (creating if needed) the database at path, applies pending
// migrations and starts the writer goroutine. opt may be nil. path must be a
// file: the store opens it several times (one writer, a read pool), so
// ":memory:" does not work.
//
// In a program built without cgo, Open returns ErrNeedsCgo.
func Open(ctx context.Context, path string, opt *Options) (*Store, error) {
	if err := needsCgo(); err != nil {
		return nil, err
	}
	o, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, chat.Errorf(chat.CodeBadRequest, "sqlite: path must be a file path, not %q", path)
	}
	busy := strconv.FormatInt(o.BusyTimeout.Milliseconds(), 10)
	wp := url.Values{}
	wp.Set("_journal_mode", "WAL")
	wp.Set("_synchronous", o.Synchronous)
	wp.Set("_busy_timeout", busy)
	wp.Set("_foreign_keys", "1")
	wp.Set("_txlock", "immediate")
	wp.Set("_stmt_cache_size", "128")
	// SQLite's multi-thread mode (no mutex per connection): database/sql
	// hands a driver connection, and the statements and rows made on it,
	// to one goroutine at a time (every driver call is made under the
	// connection's lock), which is the rule of that mode; the driver's
	// cancellation uses sqlite3_interrupt, which is safe from any thread.
	// The serialized mode's mutexes took about a tenth of a short read's
	// CPU time.
	wp.Set("_mutex", "no")
	wdb, err := sql.Open("sqlite3", dsn(path, wp))
	if err != nil {
		return nil, translate(err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)
	fail := func(err error) (*Store, error) {
		wdb.Close()
		return nil, translate(err)
	}
	if err := Migrate(ctx, wdb); err != nil {
		return fail(err)
	}
	wc, err := wdb.Conn(ctx)
	if err != nil {
		return fail(err)
	}
	wconn := &conn{Conn: wc}
	// Group commit runs each Update in a savepoint, and SQLite copies the
	// pages a savepoint changes into a sub-journal. With the default
	// temp_store that sub-journal is a memory buffer allocated in 64 KiB
	// chunks (spilling to a temporary file past 64 KiB), allocated and
	// freed again for every savepoint, which made the C allocator grow and
	// trim its heap (page faults, madvise) on every Update. In memory it
	// uses small chunks. It holds only the undo of one uncommitted
	// savepoint; durability is the write-ahead log's and is unchanged.
	if _, err := wconn.ExecContext(ctx, "PRAGMA temp_store = MEMORY"); err != nil {
		wconn.Close()
		return fail(err)
	}
	rp := url.Values{}
	rp.Set("_synchronous", o.Synchronous)
	rp.Set("_busy_timeout", busy)
	rp.Set("_foreign_keys", "1")
	rp.Set("_query_only", "1")
	rp.Set("_stmt_cache_size", "64")
	rp.Set("_mutex", "no")
	rdb, err := sql.Open("sqlite3", dsn(path, rp))
	if err != nil {
		wconn.Close()
		return fail(err)
	}
	// View bounds the connections in use by its slots; one more lets the
	// store's own diagnostics (and tests) query rdb directly.
	rdb.SetMaxOpenConns(o.MaxReadConns + 1)
	rdb.SetMaxIdleConns(1)
	rdb.SetConnMaxLifetime(0)
	rdb.SetConnMaxIdleTime(0)
	if err := rdb.PingContext(ctx); err != nil {
		rdb.Close()
		wconn.Close()
		return fail(err)
	}
	s := &Store{
		path: path, opt: o,
		wdb: wdb, wconn: wconn, rdb: rdb,
		rslots:       make(chan *conn, o.MaxReadConns),
		reqs:         make(chan *request, 4096),
		closing:      make(chan struct{}),
		writerDone:   make(chan struct{}),
		watchers:     make(map[*watcher]struct{}),
		deferred:     newDeferredState(),
		deferredStop: make(chan struct{}),
		deferredDone: make(chan struct{}),
	}
	for i := 0; i < o.MaxReadConns; i++ {
		s.rslots <- nil
	}
	go s.writer(&writerState{})
	go s.deferredLoop()
	if err := s.backfillSearch(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.backfillChannelSearch(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Stats are counters of a Store since Open.
type Stats struct {
	// Commits is the number of write transactions committed (each one
	// fsync with Synchronous FULL).
	Commits int64
	// Updates is the number of Update calls whose writes were committed.
	// Updates / Commits is the average group commit size.
	Updates int64
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	return Stats{Commits: s.commits.Load(), Updates: s.committed.Load()}
}

// Path returns the database file path the store was opened with.
func (s *Store) Path() string { return s.path }

// Close stops the writer goroutine after the transactions already queued
// have run, fails later Update calls with CodeUnavailable, closes every
// WatchOutbox channel and closes the database. It is idempotent and safe to
// call concurrently.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.deferredStop)
		<-s.deferredDone
		// The deferred deliveries still open go to the outbox while the
		// writer runs; a failure leaves them to the sweep of the next
		// store to open the file.
		derr := s.closeDeferred(context.Background())
		close(s.closing)
		<-s.writerDone
		// Wait for a transaction running inline and keep the write
		// connection for good: later Update calls find it taken, queue,
		// and fail because the writer has stopped.
		s.wlock.Lock()
		s.wmu.Lock()
		s.closed = true
		for w := range s.watchers {
			w.close()
		}
		clear(s.watchers)
		s.wmu.Unlock()
		// Idle read connections; those in use are closed by View when
		// their transaction ends.
	drain:
		for {
			select {
			case c := <-s.rslots:
				if c != nil {
					c.Close()
				}
			default:
				break drain
			}
		}
		err1 := s.rdb.Close()
		err2 := s.wconn.Close()
		err3 := s.wdb.Close()
		if err := errors.Join(derr, err1, err2, err3); err != nil {
			s.closeErr = translate(err)
		}
	})
	return s.closeErr
}

var errClosed = &chat.Error{Code: chat.CodeUnavailable, Message: "sqlite store is closed"}

// View runs fn in a read-only transaction on a pooled read connection. All
// reads in fn see one consistent snapshot of the database (a deferred
// transaction in WAL mode). Writes through the Tx fail. When every read
// connection is busy, callers wait in arrival order.
func (s *Store) View(ctx context.Context, fn func(tx chat.Tx) error) (err error) {
	var c *conn
	select {
	case <-s.closing:
		return errClosed
	default:
	}
	select {
	case c = <-s.rslots:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.closing:
		return errClosed
	}
	if c == nil {
		rc, err := s.rdb.Conn(ctx)
		if err != nil {
			s.rslots <- nil
			return translate(err)
		}
		c = &conn{Conn: rc}
	}
	if err := c.control("BEGIN"); err != nil {
		s.putRead(c, false)
		return translate(err)
	}
	t := &tx{s: s, db: c}
	defer func() {
		// Runs on panics too; a statement interrupted by ctx may already
		// have ended the transaction, so a failed ROLLBACK only matters
		// when the connection is still inside one.
		t.finish()
		rerr := c.control("ROLLBACK")
		s.putRead(c, rerr != nil && connInTx(c.Conn))
	}()
	return fn(t)
}

// putRead returns a read connection to its slot, or closes it (leaving
// the slot empty, to be reopened by a later View) when it is broken or
// the store is closing.
func (s *Store) putRead(c *conn, broken bool) {
	select {
	case <-s.closing:
		broken = true
	default:
	}
	if broken {
		c.Close()
		c = nil
	}
	s.rslots <- c
}

// conn is a connection with its control statements (BEGIN, COMMIT,
// SAVEPOINT and the like) prepared once. The driver compiles a statement
// run without arguments anew on every call, bypassing its statement cache;
// these run several times per Update and per View. A conn is used by one
// goroutine at a time (the holder of its read slot, or of wlock).
//
// stmts are the other statements of the store, prepared on the driver
// connection once each (see prepared).
type conn struct {
	*sql.Conn
	ctl   map[string]*sql.Stmt
	stmts map[string]driver.Stmt
}

// maxPrepared bounds conn.stmts. The store's statements are constants or
// built from a bounded number of parts (a few hundred in all); a text
// beyond the bound runs through the driver's own statement cache.
const maxPrepared = 1024

// prepared returns statement q prepared on dc, the driver connection of
// c (the caller is inside c.Raw), preparing it on first use; nil when q
// is not kept (more than one statement, or the bound is reached), to be
// run through the driver's connection instead. A statement run through
// the driver's connection is taken from its cache and put back after
// every run (a scan of the cache, a reset and a finalizer removed each
// time: about a tenth of a short statement's CPU); a kept one is bound
// and stepped, and reset when it runs again or its rows are closed.
func (c *conn) prepared(dc any, q string) (driver.Stmt, error) {
	if st, ok := c.stmts[q]; ok {
		return st, nil
	}
	if len(c.stmts) >= maxPrepared || strings.Contains(q, ";") {
		return nil, nil
	}
	pc, ok := dc.(driver.ConnPrepareContext)
	if !ok {
		return nil, nil
	}
	st, err := pc.PrepareContext(context.Background(), q)
	if err != nil {
		return nil, err
	}
	if c.stmts == nil {
		c.stmts = make(map[string]driver.Stmt, 64)
	}
	c.stmts[q] = st
	return st, nil
}

// control runs one control statement on the connection.
func (c *conn) control(q string) error {
	st := c.ctl[q]
	if st == nil {
		var err error
		if st, err = c.PrepareContext(context.Background(), q); err != nil {
			return err
		}
		if c.ctl == nil {
			c.ctl = make(map[string]*sql.Stmt, 8)
		}
		c.ctl[q] = st
	}
	_, err := st.ExecContext(context.Background())
	return err
}

// Close closes the prepared statements and the connection.
func (c *conn) Close() error {
	for q, st := range c.ctl {
		st.Close()
		delete(c.ctl, q)
	}
	if len(c.stmts) > 0 {
		_ = c.Raw(func(any) error {
			for q, st := range c.stmts {
				st.Close()
				delete(c.stmts, q)
			}
			return nil
		})
	}
	return c.Conn.Close()
}

// request is one Update call waiting for the writer.
type request struct {
	ctx   context.Context
	fn    func(tx chat.Tx) error
	state atomic.Int32 // reqQueued, reqTaken or reqAbandoned
	err   error
	panic any
	done  chan struct{}
}

const (
	reqQueued int32 = iota
	reqTaken
	reqAbandoned
)

// Update runs fn in a read-write transaction and returns only after the
// commit is durable (as configured by Options.Synchronous). When the write
// connection is free and no call is waiting, fn runs at once on the calling
// goroutine in a transaction of its own. Otherwise the call is queued for
// the writer goroutine, which commits it together with the other waiting
// calls (group commit); fn then runs inside its own savepoint, so its error
// rolls back only its own writes. fn must not call Update itself (that
// would deadlock); it may call View.
//
// When ctx is done before fn started, Update returns ctx.Err() and fn never
// runs. Once fn has started, Update waits for its outcome: the Tx's later
// statements fail with ctx.Err(), and when fn returns that error its writes
// are rolled back. A panic in fn rolls back its writes and is re-raised in
// the caller's goroutine.
func (s *Store) Update(ctx context.Context, fn func(tx chat.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(s.reqs) == 0 && s.wlock.TryLock() {
		return s.runInline(ctx, fn)
	}
	r := &request{ctx: ctx, fn: fn, done: make(chan struct{})}
	select {
	case s.reqs <- r:
	case <-s.closing:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
			return ctx.Err()
		}
		<-r.done
	case <-s.writerDone:
		if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
			return errClosed
		}
		<-r.done
	}
	if r.panic != nil {
		panic(r.panic)
	}
	return r.err
}

// writerState belongs to one writer goroutine.
type writerState struct {
	// pending are requests (already taken) to run before reading the queue.
	pending []*request
	// The transaction being run, for recovery when a function calls
	// runtime.Goexit: its requests in order, the index of the next one to
	// start, and those whose functions succeeded (not yet committed).
	running []*request
	next    int
	ok      []*request
	// replaced is set when a new writer goroutine took over.
	replaced bool
}

// writer is the goroutine that commits queued Update calls. It waits for
// a request, takes the write connection, takes every request queued by then
// (up to MaxBatch), runs them in one IMMEDIATE transaction, each in a
// savepoint, commits once and then answers the callers.
func (s *Store) writer(w *writerState) {
	defer func() {
		if !w.replaced {
			close(s.writerDone)
		}
	}()
	var first *request
	batch := make([]*request, 0, s.opt.MaxBatch)
	take := func(r *request) {
		if r.state.CompareAndSwap(reqQueued, reqTaken) {
			batch = append(batch, r)
		}
	}
	for {
		closing := false
		first = nil
		if len(w.pending) == 0 {
			select {
			case first = <-s.reqs:
			case <-s.closing:
				closing = true // run what is queued, then stop
			}
		}
		s.wlock.Lock()
		batch = append(batch[:0], w.pending...)
		w.pending = nil
		if first != nil {
			take(first)
		}
	fill:
		for len(batch) < cap(batch) {
			select {
			case r := <-s.reqs:
				take(r)
			default:
				break fill
			}
		}
		n := len(batch)
		if n > 0 {
			s.runBatch(w, batch)
		}
		s.wlock.Unlock()
		if closing && n == 0 {
			return
		}
	}
}

// runInline runs fn on the calling goroutine in its own transaction; the
// caller holds s.wlock, which runInline releases. Used when the writer is
// idle and nothing is queued, it saves a lone writer two goroutine
// switches per transaction.
func (s *Store) runInline(ctx context.Context, fn func(tx chat.Tx) error) (err error) {
	defer s.wlock.Unlock()
	select {
	case <-s.closing:
		return errClosed
	default:
	}
	if err := s.syncFor(chat.LazyCommit(ctx)); err != nil {
		return translate(err)
	}
	clear(s.vers)
	clear(s.memo)
	if err := s.wexec("BEGIN IMMEDIATE"); err != nil {
		return translate(err)
	}
	t := &tx{s: s, db: s.wconn, write: true}
	committed := false
	defer func() {
		// Runs on errors, panics and runtime.Goexit alike.
		t.finish()
		if !committed && s.inTx() {
			if rerr := s.wexec("ROLLBACK"); rerr != nil {
				s.resetConn()
			}
		}
	}()
	if err := fn(t); err != nil {
		return err
	}
	if err := s.wexec("COMMIT"); err != nil {
		return translate(err)
	}
	committed = true
	s.commits.Add(1)
	s.committed.Add(1)
	s.recent.add(t.events)
	if t.deferred != nil {
		s.deferred.committed(t)
	}
	if t.signal != 0 {
		s.notifyOutbox(t.signal)
	}
	return nil
}

// wexec runs one control statement on the write connection.
func (s *Store) wexec(q string) error { return s.wconn.control(q) }

// inTx reports whether the write connection has an open transaction.
func (s *Store) inTx() bool { return connInTx(s.wconn.Conn) }

func (r *request) finish(err error) {
	r.err = err
	close(r.done)
}

var errGoexit = &chat.Error{Code: chat.CodeInternal,
	Message: "sqlite: the Update function called runtime.Goexit (t.FailNow outside the test's goroutine?)"}

// runFn runs r.fn on t. A panic becomes r.panic (re-raised in the caller's
// goroutine by Update). If fn calls runtime.Goexit, which ends the writer
// goroutine, the transaction is rolled back, its callers are answered and a
// new writer goroutine takes over the requests not yet started.
func (s *Store) runFn(w *writerState, r *request, t *tx) (err error) {
	normal := false
	defer func() {
		if normal {
			return
		}
		if p := recover(); p != nil {
			r.panic = p
			err = fmt.Errorf("panic in Update: %v", p)
			return
		}
		t.finish()
		if s.inTx() {
			_ = s.wexec("ROLLBACK")
		}
		r.finish(errGoexit)
		for _, o := range w.ok {
			o.finish(errBatchAborted)
		}
		w.replaced = true
		s.wlock.Unlock() // held by this goroutine's runBatch, which will not return
		go s.writer(&writerState{pending: w.running[w.next:]})
	}()
	if err = r.ctx.Err(); err == nil {
		err = r.fn(t)
	}
	normal = true
	return err
}

// syncFor sets the write connection's synchronous setting for the next
// transaction: NORMAL when it is lazy (each of its Update calls carries
// chat.WithLazyCommit), the configured one otherwise. In WAL mode a
// NORMAL commit is not fsynced: it survives a crash of the process, not
// one of the machine, until the next fsync of the log, which every
// configured commit makes, covers it. The setting stays until a
// transaction wants the other; one that cannot be set back makes the next
// transaction fail rather than commit without its fsync. Caller holds
// wlock.
func (s *Store) syncFor(lazy bool) error {
	lazy = lazy && s.opt.Synchronous != "NORMAL"
	if lazy == s.normal {
		return nil
	}
	q := "PRAGMA synchronous=" + s.opt.Synchronous // FULL or EXTRA (see Options)
	if lazy {
		q = "PRAGMA synchronous=NORMAL"
	}
	if err := s.wexec(q); err != nil {
		if lazy {
			return nil // committed as configured
		}
		return err
	}
	s.normal = lazy
	return nil
}

// runBatch runs the (taken) requests of one batch. See writer.
func (s *Store) runBatch(w *writerState, live []*request) {
	for len(live) > 0 {
		if len(live) == 1 {
			s.runOne(w, live[0])
			return
		}
		live = s.runGroup(w, live)
	}
}

// runOne runs a lone request in its own transaction, without savepoints.
func (s *Store) runOne(w *writerState, r *request) {
	w.running, w.next, w.ok = []*request{r}, 1, nil
	if err := s.syncFor(chat.LazyCommit(r.ctx)); err != nil {
		r.finish(translate(err))
		return
	}
	clear(s.vers)
	clear(s.memo)
	if err := s.wexec("BEGIN IMMEDIATE"); err != nil {
		r.finish(translate(err))
		return
	}
	t := &tx{s: s, db: s.wconn, write: true}
	err := s.runFn(w, r, t)
	t.finish()
	if err != nil {
		if s.inTx() {
			if rerr := s.wexec("ROLLBACK"); rerr != nil {
				s.resetConn()
			}
		}
		r.finish(err)
		return
	}
	if err := s.wexec("COMMIT"); err != nil {
		if s.inTx() {
			_ = s.wexec("ROLLBACK")
		}
		r.finish(translate(err))
		return
	}
	s.commits.Add(1)
	s.committed.Add(1)
	s.recent.add(t.events)
	if t.deferred != nil {
		s.deferred.committed(t)
	}
	if t.signal != 0 {
		s.notifyOutbox(t.signal)
	}
	r.finish(nil)
}

var errBatchAborted = &chat.Error{Code: chat.CodeUnavailable, Message: "the transaction was aborted; try again"}

// runGroup runs several requests in one transaction, each in a savepoint.
// It answers the requests it ran and returns those it could not start
// because the transaction was lost (they go into a new transaction).
func (s *Store) runGroup(w *writerState, rs []*request) (rest []*request) {
	w.running, w.next, w.ok = rs, 0, nil
	lazy := true
	for _, r := range rs {
		lazy = lazy && chat.LazyCommit(r.ctx)
	}
	err := s.syncFor(lazy)
	if err == nil {
		clear(s.vers)
		clear(s.memo)
		err = s.wexec("BEGIN IMMEDIATE")
	}
	if err != nil {
		err = translate(err)
		for _, r := range rs {
			r.finish(err)
		}
		return nil
	}
	signal := 0
	var events []*chat.Event // of the members that succeeded
	var deferred []*tx       // the members that succeeded with deferred deliveries
	abort := func(err error) {
		if s.inTx() {
			_ = s.wexec("ROLLBACK")
		}
		for _, r := range w.ok {
			r.finish(err)
		}
		w.ok = nil
	}
	for i, r := range rs {
		w.next = i + 1
		if err := s.wexec("SAVEPOINT g"); err != nil {
			abort(translate(err))
			r.finish(translate(err))
			return rs[i+1:]
		}
		t := &tx{s: s, db: s.wconn, write: true}
		err := s.runFn(w, r, t)
		t.finish()
		if err == nil {
			w.ok = append(w.ok, r)
			if rerr := s.wexec("RELEASE g"); rerr != nil {
				abort(translate(rerr))
				return rs[i+1:]
			}
			signal |= t.signal
			events = append(events, t.events...)
			if t.deferred != nil {
				deferred = append(deferred, t)
			}
			continue
		}
		// fn failed: undo its writes only. If the database already rolled
		// back the whole transaction (I/O error, disk full, interrupt),
		// the earlier requests of this batch are lost too.
		clear(s.vers) // the member may have bumped a counter
		clear(s.memo)
		if rerr := s.wexec("ROLLBACK TO g"); rerr != nil || !s.inTx() {
			abort(errBatchAborted)
			r.finish(err)
			return rs[i+1:]
		}
		if rerr := s.wexec("RELEASE g"); rerr != nil {
			abort(translate(rerr))
			r.finish(err)
			return rs[i+1:]
		}
		r.finish(err)
	}
	if err := s.wexec("COMMIT"); err != nil {
		abort(translate(err))
		return nil
	}
	s.commits.Add(1)
	s.committed.Add(int64(len(w.ok)))
	s.recent.add(events)
	if len(deferred) > 0 {
		s.deferred.committed(deferred...)
	}
	if signal != 0 {
		s.notifyOutbox(signal)
	}
	for _, r := range w.ok {
		r.finish(nil)
	}
	w.ok = nil
	return nil
}

// resetConn tries to bring the write connection back to autocommit mode
// after a failed ROLLBACK.
func (s *Store) resetConn() {
	for i := 0; i < 3 && s.inTx(); i++ {
		_ = s.wexec("ROLLBACK")
	}
}

// Signal kinds: what a commit brought.
const (
	sigDeliveries = 1 << iota // deliveries enqueued or rescheduled
	sigEvents                 // events appended
)

// watcher is one Watch subscription.
type watcher struct {
	ch    chan struct{}
	kinds int
	once  sync.Once
}

func (w *watcher) close() { w.once.Do(func() { close(w.ch) }) }

// WatchOutbox implements chat.OutboxWatcher. The returned channel (buffer 1)
// receives a value after every commit of this Store that enqueued or
// rescheduled deliveries or appended events; signals are coalesced. It is
// closed when ctx is done or the store is closed. Commits by other
// processes sharing the file are not signalled; poll NextDeliveryAt for
// those.
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
	w := &watcher{ch: make(chan struct{}, 1), kinds: kinds}
	s.wmu.Lock()
	if s.closed {
		s.wmu.Unlock()
		return nil, errClosed
	}
	s.watchers[w] = struct{}{}
	s.wmu.Unlock()
	context.AfterFunc(ctx, func() {
		s.wmu.Lock()
		delete(s.watchers, w)
		s.wmu.Unlock()
		w.close()
	})
	return w.ch, nil
}

func (s *Store) notifyOutbox(kinds int) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for w := range s.watchers {
		if w.kinds&kinds == 0 {
			continue
		}
		select {
		case w.ch <- struct{}{}:
		default:
		}
	}
}

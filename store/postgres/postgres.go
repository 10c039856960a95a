package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/lib/pq"
)

var (
	_ chat.Store           = (*Store)(nil)
	_ chat.OutboxWatcher   = (*Store)(nil)
	_ chat.EventWatcher    = (*Store)(nil)
	_ chat.DeliveryWatcher = (*Store)(nil)
	_ chat.Tx              = (*tx)(nil)
)

// Options configures a Store. The zero value works; every field states its
// default.
type Options struct {
	// Schema is the Postgres schema that holds the store's tables. It is
	// created when missing, and every statement names it explicitly, so the
	// connection's search_path does not matter. Several stores (for example
	// one per test, or one per tenant) can share a database by using
	// different schemas. Default "public".
	Schema string

	// MaxOpenConns bounds the connections of the pool that Open creates
	// (idle connections are kept up to the same number). It is ignored by
	// New, whose caller configures its own pool. Default 20.
	MaxOpenConns int

	// NotifyDSN is the connection string of the dedicated LISTEN connection
	// that WatchOutbox opens (through lib/pq) to hear about deliveries
	// committed by other processes. Default: the dsn given to Open. With
	// New and no NotifyDSN, WatchOutbox signals only the commits made
	// through this Store.
	NotifyDSN string

	// Retries is how many times Update runs its function again after
	// Postgres aborted the transaction with a serialization failure
	// (SQLSTATE 40001) or a deadlock (40P01). When the retries run out,
	// Update returns CodeUnavailable. Default 4; a negative value disables
	// retries.
	Retries int

	// NoPrepare runs every statement unprepared. Set it behind a
	// connection pooler in transaction mode that cannot keep prepared
	// statements (PgBouncer before 1.21). Default false: each statement is
	// prepared once per connection and reused, which saves one network
	// round trip per statement with lib/pq.
	NoPrepare bool

	// CommitGroups is how many transactions of Updates under
	// chat.WithCommitGroup (the Service's posts) this Store runs at once:
	// their keys (the posts' channels) are spread over this many queues,
	// and the Updates that arrive while their queue's transaction runs
	// share the next one and its commit (see the package documentation).
	// Fewer, fuller transactions cost the server less CPU per post than
	// one transaction per post; more queues let more cores work, and a
	// post that waits for a lock another transaction holds (an admin
	// changing its channel) holds up only its queue's transaction. A
	// negative value gives every key a queue of its own: posts to one
	// channel still share transactions, posts to different channels never
	// do. Default: GOMAXPROCS (2 queues on 2 cores, where 2 measured
	// best for 32 writers on 32 channels, against 1, 4 and 8).
	CommitGroups int

	// SkipMigrations makes Open and New use the schema as it is, for
	// deployments that run Migrate separately with a more privileged role.
	// Default false: Open and New apply pending migrations.
	SkipMigrations bool
}

// Store is a chat.Store backed by PostgreSQL. It is safe for concurrent use
// by many goroutines, and many processes may share one database and schema.
type Store struct {
	db     *sql.DB
	ownDB  bool
	schema string
	prefix string // quoted schema name and a dot, prepended to every table
	notify string // LISTEN/NOTIFY channel of the outbox
	events string // LISTEN/NOTIFY channel of relay passes
	ephem  string // LISTEN/NOTIFY channel of ephemeral events
	opt    Options

	sqlMu sync.RWMutex
	sqls  map[string]*statement // by template

	w     watchers
	rl    relayer
	churn churn // rows deleted from tables that churn (vacuum.go)

	bg       context.Context // background prepares; cancelled by Close
	bgCancel context.CancelFunc
	bgMu     sync.Mutex // orders bgWG.Add before Close's bgWG.Wait
	bgWG     sync.WaitGroup

	closed atomic.Bool

	statements atomic.Int64 // statements run in transactions, for tests that count round trips
	commits    atomic.Int64 // Update transactions committed, for tests of commit groups

	groups groups // commit groups with a transaction running (group.go)
}

// statement is one SQL template expanded for this store's schema, with its
// pool-level prepared form once a background prepare produced it.
type statement struct {
	sql       string
	writes    bool // may write rows (see writes)
	mu        sync.Mutex
	stmt      *sql.Stmt
	preparing bool
	failures  int
}

// Open connects to the database at dsn with lib/pq, applies pending
// migrations and returns a Store that owns the connection pool (Close
// closes it). dsn is a URL (postgres://user:pass@host:5432/db?sslmode=disable)
// or key=value pairs (host=... dbname=... sslmode=disable). lib/pq defaults
// to sslmode=require, so a local server without TLS needs sslmode=disable.
func Open(ctx context.Context, dsn string, opt *Options) (*Store, error) {
	var o Options
	if opt != nil {
		o = *opt
	}
	if o.NotifyDSN == "" {
		o.NotifyDSN = dsn
	}
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return nil, dbErr(err)
	}
	n := o.MaxOpenConns
	if n <= 0 {
		n = 20
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxIdleTime(5 * time.Minute)
	s, err := New(ctx, db, &o)
	if err != nil {
		db.Close()
		return nil, err
	}
	s.ownDB = true
	return s, nil
}

// New returns a Store over an existing pool, such as one opened with lib/pq
// or with pgx's stdlib driver, after applying pending migrations. The caller
// keeps ownership of db: Close does not close it.
func New(ctx context.Context, db *sql.DB, opt *Options) (*Store, error) {
	if db == nil {
		return nil, errors.New("postgres: nil *sql.DB")
	}
	var o Options
	if opt != nil {
		o = *opt
	}
	schema, err := schemaName(o.Schema)
	if err != nil {
		return nil, err
	}
	o.Schema = schema
	if o.Retries == 0 {
		o.Retries = 4
	}
	if o.Retries < 0 {
		o.Retries = 0
	}
	if !o.SkipMigrations {
		if err := Migrate(ctx, db, schema); err != nil {
			return nil, err
		}
	}
	s := &Store{
		db:     db,
		schema: schema,
		prefix: pq.QuoteIdentifier(schema) + ".",
		notify: notifyChannel(schema),
		events: eventsChannel(schema),
		ephem:  ephemeralChannel(schema),
		opt:    o,
		sqls:   make(map[string]*statement),
	}
	s.bg, s.bgCancel = context.WithCancel(context.Background())
	s.w.init()
	s.rl.init()
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

// Schema returns the name of the schema that holds the store's tables.
func (s *Store) Schema() string { return s.schema }

// DB returns the connection pool of the store.
func (s *Store) DB() *sql.DB { return s.db }

// Close stops the LISTEN connection, closes every channel returned by
// WatchOutbox and the prepared statements, and closes the pool when Open
// created it. It is safe to call more than once.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.w.close()
	s.bgMu.Lock()
	s.bgCancel()
	s.bgMu.Unlock()
	s.bgWG.Wait()
	s.sqlMu.Lock()
	for _, st := range s.sqls {
		st.mu.Lock()
		if st.stmt != nil {
			st.stmt.Close()
			st.stmt = nil
		}
		st.mu.Unlock()
	}
	s.sqlMu.Unlock()
	if s.ownDB {
		return s.db.Close()
	}
	return nil
}

func schemaName(name string) (string, error) {
	if name == "" {
		return "public", nil
	}
	if len(name) > 63 || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("postgres: invalid schema name %q (1-63 bytes, no NUL)", name)
	}
	return name, nil
}

// notifyChannel returns the LISTEN/NOTIFY channel of a schema's outbox.
func notifyChannel(schema string) string { return channelName("chat_outbox.", schema) }

// ephemeralChannel returns the LISTEN/NOTIFY channel of a schema's
// ephemeral events.
func ephemeralChannel(schema string) string { return channelName("chat_ephemeral.", schema) }

// channelName returns prefix and the schema name as a LISTEN/NOTIFY
// channel. Channel names are identifiers of at most 63 bytes; long schema
// names are hashed.
func channelName(prefix, schema string) string {
	c := prefix + schema
	if len(c) <= 63 {
		return c
	}
	h := fnv.New64a()
	h.Write([]byte(schema))
	return fmt.Sprintf("%s%016x", prefix, h.Sum64())
}

// maxReruns bounds how often one Update runs fn again because fn wrote a
// user it had read without a lock (see Update).
const maxReruns = 4

// Update runs fn in a READ COMMITTED read-write transaction and commits it
// when fn returns nil. The methods of chat.LockStore lock the rows they
// read (SELECT ... FOR NO KEY UPDATE) until the transaction ends, so a row
// fn reads with them and then writes cannot change in between; the Get,
// Query and List methods do not lock. When fn writes a user it read
// without a lock (GetUser rather than LockUser), the transaction is rolled
// back and fn runs again, this time reading that user with the lock.
//
// fn also runs again, up to Options.Retries more times, when Postgres
// aborted the transaction with a serialization failure (SQLSTATE 40001) or
// a deadlock (40P01). fn must therefore not leak state from a failed run.
// Any other failure, including a connection lost during the transaction,
// is returned without running fn again.
//
// Under chat.WithCommitGroup (and not chat.WithLazyCommit), fn may run in
// a transaction shared with other Updates of the same key, committed once
// for all of them (see runGroup); when the group cannot commit, fn runs
// again in a transaction of its own.
func (s *Store) Update(ctx context.Context, fn func(chat.Tx) error) error {
	var lockUsers map[string]bool
	retries, reruns := 0, 0
	key := ""
	if !chat.LazyCommit(ctx) {
		key = chat.CommitGroup(ctx)
	}
	for {
		var (
			t   *tx
			err error
			ran bool
		)
		if key != "" {
			// The first run only: runs again go alone.
			t, ran, err = s.runGroup(ctx, key, fn)
			key = ""
		}
		if !ran {
			t, err = s.run(ctx, true, lockUsers, fn)
		}
		switch {
		case t != nil && t.rerun && reruns < maxReruns:
			reruns++
			lockUsers = t.lockUsers
			continue
		case t != nil && t.retry && !t.rerun && retries < s.opt.Retries && ctx.Err() == nil:
			retries++
			d := time.Duration(1+rand.IntN(5*retries)) * time.Millisecond
			select {
			case <-ctx.Done():
				return err
			case <-time.After(d):
			}
			continue
		}
		return err
	}
}

// View runs fn in a REPEATABLE READ READ ONLY transaction: every read of fn
// sees the same snapshot, so consecutive pages are consistent. Reads take
// no row locks.
func (s *Store) View(ctx context.Context, fn func(chat.Tx) error) error {
	_, err := s.run(ctx, false, nil, fn)
	return err
}

// run runs fn once in a transaction and returns the transaction state
// (nil when it did not begin) and the outcome.
func (s *Store) run(ctx context.Context, write bool, lockUsers map[string]bool, fn func(chat.Tx) error) (*tx, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, dbErr(err)
	}
	opts := &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	if !write {
		opts = &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	}
	stx, err := s.begin(ctx, opts)
	if err != nil {
		return nil, dbErr(err)
	}
	// Ends the transaction unless it committed (after Commit, Rollback
	// does nothing).
	defer func() { _ = stx.Rollback() }()
	if write && chat.LazyCommit(ctx) {
		// Work that is done again when lost (chat.WithLazyCommit):
		// its commit waits for no WAL flush.
		if _, err := stx.ExecContext(ctx, "SET LOCAL synchronous_commit TO OFF"); err != nil {
			return nil, dbErr(err)
		}
	}
	t := &tx{s: s, tx: stx, write: write, lockUsers: lockUsers}
	if err := t.verdict(ctx, fn(t)); err != nil || !write {
		return t, err
	}
	if err := stx.Commit(); err != nil {
		t.retry = retryable(err)
		return t, dbErr(err)
	}
	s.commits.Add(1)
	s.committed(ctx, t)
	return t, nil
}

// verdict runs the deferred AppendMessage of fn's run, if fn returned
// nil, and returns the run's outcome before the commit: nil when the
// transaction may commit.
func (t *tx) verdict(ctx context.Context, err error) error {
	if err == nil {
		err = t.flushAppend(ctx) // a deferred AppendMessage
	}
	switch {
	case t.rerun || t.retry:
		return t.again
	case err != nil:
		return err
	case !t.write:
		return nil
	case t.failed != nil:
		// fn went on after a statement failed: the transaction cannot
		// commit, and the failure is the outcome.
		return dbErr(t.failed)
	}
	return nil
}

// committed does what follows the commit of t's writes: it wakes the
// local dispatchers, notifies the other processes' ones, and has the
// events appended moved to the log; it counts the push batches deleted
// (vacuum.go).
func (s *Store) committed(ctx context.Context, t *tx) {
	s.churned("push_batches", t.pushBatchesDeleted)
	if t.queued {
		s.w.signal(sigDeliveries)
	}
	if t.enqueued && len(t.appended) == 0 {
		// Deliveries enqueued by a transaction that is not a change of
		// the chat (which the local dispatcher takes at once): tell the
		// other processes' dispatchers too, outside the transaction.
		_, _ = s.db.ExecContext(ctx, `SELECT pg_notify($1, '')`, s.notify)
	}
	if len(t.appended) > 0 {
		if chat.EventIDsWanted(ctx) {
			s.afterCommit(ctx, t)
		} else {
			s.kickRelay()
		}
	}
}

// begin starts a pool transaction. BEGIN on a pooled session that the
// server ended meanwhile (a restart, a failover, pg_terminate_backend)
// fails before fn runs and the pool discards that connection, so begin
// tries again, up to once per connection the pool may hold, before it
// reports the store unavailable.
func (s *Store) begin(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error) {
	tries := s.db.Stats().MaxOpenConnections + 1
	if tries <= 1 || tries > 64 {
		tries = 64
	}
	for i := 1; ; i++ {
		stx, err := s.db.BeginTx(ctx, opts)
		if err == nil || i >= tries || !connLost(err) || ctx.Err() != nil {
			return stx, err
		}
	}
}

// dbErr is the one place where driver errors become chat errors:
// sql.ErrNoRows is CodeNotFound, unique_violation (23505) CodeConflict, a
// value the database refuses as input (class 22, data exception: a NUL
// byte or invalid UTF-8 in text, a malformed or out-of-range value)
// CodeBadRequest; lost or refused connections, server shutdown
// (57P01..57P03), too many connections (53300), serialization failures
// and deadlocks that outlived their retries (40001, 40P01) and cancelled
// contexts CodeUnavailable; any other error is CodeInternal. The driver's
// error stays in the chain for errors.Is; *chat.Error values pass through
// unchanged.
func dbErr(err error) error {
	if err == nil {
		return nil
	}
	var ce *chat.Error
	if errors.As(err, &ce) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) {
		return &chat.Error{Code: chat.CodeNotFound, Message: "not found", Err: err}
	}
	if code := sqlState(err); code != "" {
		switch {
		case code == "23505":
			return &chat.Error{Code: chat.CodeConflict, Message: "already exists", Err: err}
		case strings.HasPrefix(code, "22"):
			return &chat.Error{Code: chat.CodeBadRequest, Message: "invalid value: " + serverMessage(err), Err: err}
		case code == "40001", code == "40P01":
			return &chat.Error{Code: chat.CodeUnavailable, Message: "store busy: concurrent update, try again", Err: err}
		case code == "57014":
			return &chat.Error{Code: chat.CodeUnavailable, Message: "store request cancelled", Err: err}
		case code == "53300", code == "57P01", code == "57P02", code == "57P03",
			strings.HasPrefix(code, "08"), strings.HasPrefix(code, "53"):
			return &chat.Error{Code: chat.CodeUnavailable, Message: "store unavailable", Err: err}
		}
		return &chat.Error{Code: chat.CodeInternal, Err: err}
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &chat.Error{Code: chat.CodeUnavailable, Message: "store request cancelled", Err: err}
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.As(err, &ne):
		return &chat.Error{Code: chat.CodeUnavailable, Message: "store unavailable", Err: err}
	}
	return &chat.Error{Code: chat.CodeInternal, Err: err}
}

// serverMessage returns the primary message of a server error (for
// example `invalid byte sequence for encoding "UTF8": 0x00`), naming the
// column when the server reports one.
func serverMessage(err error) string {
	var pe *pq.Error
	if !errors.As(err, &pe) {
		return strings.TrimPrefix(err.Error(), "pq: ")
	}
	if pe.Column != "" {
		return pe.Column + ": " + pe.Message
	}
	return pe.Message
}

// connLost reports whether err means the session is gone: a failure of the
// connection itself, or the server ending it (57P01 admin shutdown or
// pg_terminate_backend, 57P02 crash shutdown, 57P03 cannot connect now, or
// a connection exception of class 08). lib/pq turns the server's FATAL
// errors into driver.ErrBadConn; drivers that pass them on (pgx's stdlib)
// are covered by the SQLSTATEs.
func connLost(err error) bool {
	switch code := sqlState(err); {
	case code == "57P01", code == "57P02", code == "57P03", strings.HasPrefix(code, "08"):
		return true
	case code != "":
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.As(err, &ne)
}

// sqlState returns the SQLSTATE of a server error of lib/pq or pgx (both
// implement SQLState), or "".
func sqlState(err error) string {
	var se interface{ SQLState() string }
	if errors.As(err, &se) {
		return se.SQLState()
	}
	return ""
}

// retryable reports whether err aborted the transaction in a way that
// running it again may fix: a serialization failure or a deadlock.
func retryable(err error) bool {
	switch sqlState(err) {
	case "40001", "40P01":
		return true
	}
	return false
}

// stmt returns the statement of a SQL template (in which "{s}" stands for
// the quoted schema and a dot), creating it on first use.
func (s *Store) stmt(tmpl string) *statement {
	s.sqlMu.RLock()
	st := s.sqls[tmpl]
	s.sqlMu.RUnlock()
	if st != nil {
		return st
	}
	s.sqlMu.Lock()
	defer s.sqlMu.Unlock()
	if st = s.sqls[tmpl]; st == nil {
		st = &statement{sql: strings.ReplaceAll(tmpl, "{s}", s.prefix), writes: writes(tmpl)}
		s.sqls[tmpl] = st
	}
	return st
}

// prepared returns the pool-level prepared statement of st, or nil while
// there is none yet. The first use starts preparing it in the background:
// preparing through the pool needs a connection of its own, and a
// transaction that waited for one while holding another could deadlock a
// small pool. Until the statement is ready it runs unprepared. Once ready,
// database/sql prepares it on each connection the first time a transaction
// on that connection uses it (on the transaction's own connection) and
// reuses it afterwards.
func (s *Store) prepared(st *statement) *sql.Stmt {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.stmt != nil || st.preparing || st.failures >= 3 || s.bg.Err() != nil {
		return st.stmt
	}
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	if s.bg.Err() != nil {
		return nil
	}
	st.preparing = true
	s.bgWG.Add(1)
	go func() {
		defer s.bgWG.Done()
		ctx, cancel := context.WithTimeout(s.bg, 30*time.Second)
		defer cancel()
		p, err := s.db.PrepareContext(ctx, st.sql)
		st.mu.Lock()
		defer st.mu.Unlock()
		st.preparing = false
		switch {
		case err != nil:
			st.failures++
		case s.bg.Err() != nil: // closed meanwhile
			p.Close()
		default:
			st.stmt = p
		}
	}()
	return nil
}

// tx implements chat.Tx over one *sql.Tx.
type tx struct {
	s     *Store
	tx    *sql.Tx
	write bool // an Update transaction

	pushBatchesDeleted int // by ExpandPushBatches: churned after the commit (vacuum.go)

	// heldChannels holds the channels whose rows this transaction has
	// locked (read by id, written, or locked before their relations).
	heldChannels map[string]bool
	// userRows maps the users this transaction read by id or wrote to
	// whether it holds their rows (read with a lock, written or inserted).
	userRows map[string]bool
	// lockUsers are the users to read with a lock: those that an earlier
	// run of the same Update wrote after reading them without one.
	lockUsers map[string]bool

	queued   bool       // enqueued, rescheduled or re-queued deliveries
	enqueued bool       // enqueued pending deliveries (EnqueueDeliveries)
	appended []appended // events appended, in order, with their pending keys
	floor    int64      // the log's last id when the events were appended
	failed   error      // the statement error that aborted the transaction
	retry    bool       // aborted by a serialization failure or a deadlock
	rerun    bool       // wrote a user it read without a lock
	again    error      // why retry or rerun, translated

	n     int64          // statements run so far
	wrote bool           // ran a statement that may write (statement.writes)
	broke bool           // a statement failed (fail)
	pend  *pendingAppend // a deferred AppendMessage
	// preRoles are the author's roles read by PrefetchPost.
	preRoles *prefetchedRoles
	// pendDel is an EnqueueDeliveries held back with pend, to run in
	// the same statement (see deferDeliveries).
	pendDel *pendingDeliveries
	pre     *prefetched // rows read by PrefetchPost
	vers    *versions   // versions read by PrefetchPost
	// targets are the push targets read by PrefetchPost, served once by
	// ListPushTargets until a statement names a table they come from.
	targets *prefetchedTargets
	// grp holds, in a commit group transaction, the posts whose writes
	// wait to be made together (groupwrite.go).
	grp *groupPosts
	// ahead are the rows of this member's post read with other posts'
	// (groupwrite.go), for its PrefetchPost.
	ahead *readAhead
}

// fail translates a statement error and remembers what it did to the
// transaction.
func (t *tx) fail(err error) error {
	if err == nil {
		return nil
	}
	t.broke = true
	if sqlState(err) != "" && t.failed == nil {
		t.failed = err
	}
	err = dbErr(err)
	if retryable(t.failed) && !t.retry {
		t.retry, t.again = true, err
	}
	return err
}

// lockRows is appended to the reads of the Lock methods: in an Update they
// lock the rows they return until the transaction ends. FOR NO KEY UPDATE conflicts with
// every write of the row and with other locking reads, but not with the
// key-share locks that inserts referencing the row take.
func (t *tx) lockRows() string {
	if t.write {
		return lockClause
	}
	return ""
}

// lockClause is what lockRows appends in an Update.
const lockClause = " FOR NO KEY UPDATE"

// plannedEachRun are the statements run without a prepared statement, so
// that the server plans each run with its arguments and the tables as
// they are then: the retention deletes, of tables that grow from empty.
// Their generic plan, cached on a connection while the table was small,
// could scan the whole table for every batch of 1,000 once it holds
// millions of rows (TestExplainChurnedTables: the finished pushes' did).
// They run seldom, and planning costs less than one such scan.
var plannedEachRun = map[string]bool{
	deleteEventsSQL:         true,
	deleteTicketsSQL:        true,
	deleteFinishedPushesSQL: true,
}

// txStmt returns the statement of a template bound to the transaction, or
// nil and the SQL text when it is to run unprepared.
func (t *tx) txStmt(ctx context.Context, tmpl string) (*sql.Stmt, string) {
	t.s.statements.Add(1)
	t.n++
	if t.vers != nil && strings.Contains(tmpl, "{s}versions") {
		t.vers = nil // a rule or webhook write may bump them
	}
	if t.preRoles != nil && strings.Contains(tmpl, "{s}roles") {
		t.preRoles = nil
	}
	if t.pre != nil && touchesPrefetched(tmpl) {
		t.pre = nil
	}
	if t.targets != nil && touchesTargets(tmpl) {
		t.targets = nil
	}
	st := t.s.stmt(tmpl)
	t.wrote = t.wrote || st.writes
	if t.grp != nil && st.writes && !postStatement(tmpl) && touchesAhead(tmpl) {
		t.grp.epoch++ // the rows read ahead may have changed
	}
	if t.s.opt.NoPrepare || plannedEachRun[tmpl] {
		return nil, st.sql
	}
	if p := t.s.prepared(st); p != nil {
		return t.tx.StmtContext(ctx, p), st.sql
	}
	return nil, st.sql
}

// exec runs a statement template with bound arguments and returns the
// number of rows it affected.
func (t *tx) exec(ctx context.Context, tmpl string, args ...any) (int64, error) {
	if err := t.flushBefore(ctx, tmpl, args); err != nil {
		return 0, err
	}
	if err := t.flushAppend(ctx); err != nil {
		return 0, err
	}
	p, q := t.txStmt(ctx, tmpl)
	var (
		res sql.Result
		err error
	)
	if p != nil {
		res, err = p.ExecContext(ctx, args...)
	} else {
		res, err = t.tx.ExecContext(ctx, q, args...)
	}
	if err != nil {
		return 0, t.fail(err)
	}
	n, err := res.RowsAffected()
	return n, t.fail(err)
}

// query runs a query template with bound arguments and calls scan for each
// row.
func (t *tx) query(ctx context.Context, tmpl string, args []any, scan func(*sql.Rows) error) error {
	if err := t.flushBefore(ctx, tmpl, args); err != nil {
		return err
	}
	if err := t.flushAppend(ctx); err != nil {
		return err
	}
	var (
		rows *sql.Rows
		err  error
	)
	if p, q := t.txStmt(ctx, tmpl); p != nil {
		rows, err = p.QueryContext(ctx, args...)
	} else {
		rows, err = t.tx.QueryContext(ctx, q, args...)
	}
	if err != nil {
		return t.fail(err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return t.fail(err)
		}
	}
	if err := rows.Err(); err != nil {
		return t.fail(err)
	}
	return t.fail(rows.Close())
}

// queryRow runs a query template that returns at most one row and scans it
// into dest; no row is CodeNotFound.
func (t *tx) queryRow(ctx context.Context, tmpl string, args []any, dest ...any) error {
	found := false
	err := t.query(ctx, tmpl, args, func(r *sql.Rows) error {
		found = true
		return r.Scan(dest...)
	})
	if err != nil {
		return err
	}
	if !found {
		return dbErr(sql.ErrNoRows)
	}
	return nil
}

// exists reports whether a query returns a row.
func (t *tx) exists(ctx context.Context, tmpl string, args ...any) (bool, error) {
	found := false
	err := t.query(ctx, tmpl, args, func(*sql.Rows) error { found = true; return nil })
	return found, err
}

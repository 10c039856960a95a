package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	chat "github.com/chatengine/chat"
	"github.com/lib/pq"
)

// Group commit.
//
// Update calls of one Store share one connection, the write lane. A call
// that finds the lane idle runs at once on its own goroutine, in its own
// transaction. Calls that arrive while the lane is busy queue up; when the
// running transaction has committed, everything queued by then (up to
// maxBatch calls) becomes the next batch: one READ COMMITTED transaction in
// which each call's function runs in turn, on its caller's goroutine, inside
// its own savepoint. A function that fails has its savepoint rolled back,
// which undoes its writes and releases the row locks it took, and the others
// are unaffected. After the last function the batch commits once, with one
// WAL flush, and only then are its callers answered, so no caller hears of
// success before its data is durable. Row locks are taken exactly as before,
// so several processes (each with its own lane) still serialize on the
// rows they share.
//
// Round trips: statements run through lib/pq's simple query protocol as
// EXECUTE of statements prepared on the lane connection (PREPARE, once per
// statement and connection), with their arguments as literals. That lets
// the statements that return nothing of interest (BEGIN, SAVEPOINT,
// ROLLBACK TO SAVEPOINT) travel in the same round trip as the next
// statement, so a transaction of two statements costs three round trips
// (BEGIN with the first statement, the second, COMMIT) instead of four,
// and each call in a batch costs no round trip beyond its statements.

// maxBatch bounds the calls committed together (and so the savepoints of
// one transaction).
const maxBatch = 64

// laneIdle is how long the lane keeps its connection (and the statements
// prepared on it) after the last transaction before returning it to the
// pool.
const laneIdle = 2 * time.Second

// lane is the write lane of a Store.
type lane struct {
	mu    sync.Mutex
	busy  bool      // a transaction runs on the lane
	queue []*greq   // calls waiting for the next batch
	conn  *sql.Conn // owned by the running transaction while busy
	prep  map[string]*prepared
	nprep int
	idle  *time.Timer
	epoch uint64 // counts idle periods, so a stale timer does nothing
}

// prepared is a statement prepared on the lane connection.
type prepared struct {
	name  string
	bytea []bool // parameters of type bytea
}

// greq is one queued Update call.
type greq struct {
	ctx   context.Context
	fn    func(chat.Tx) error
	lock  bool
	state atomic.Int32 // reqQueued, reqTaken, reqAbandoned
	idx   int
	turn  chan *batch // receives the batch when it is this call's turn
	done  chan struct{}
	ok    bool // fn succeeded; waits for the commit
	t     *tx
	err   error
	retry bool
}

const (
	reqQueued int32 = iota
	reqTaken
	reqAbandoned
)

// batch is one transaction on the lane.
type batch struct {
	s      *Store
	reqs   []*greq
	save   bool      // each call runs in a savepoint
	conn   *sql.Conn // nil until the first statement
	inTx   bool      // BEGIN was sent
	begun  bool      // BEGIN is pending or sent
	prefix []string  // statements to send before the next one
	broken error     // the connection failed: the transaction is lost
}

var errPanicked = &chat.Error{Code: chat.CodeInternal, Message: "postgres: update function did not return"}

// update runs fn through the write lane once (see Update for retries).
func (s *Store) update(ctx context.Context, lock bool, fn func(chat.Tx) error) (err error, retry bool) {
	if s.closed.Load() {
		return errClosed, false
	}
	if err := ctx.Err(); err != nil {
		return dbErr(err), false
	}
	r := &greq{ctx: ctx, fn: fn, lock: lock, turn: make(chan *batch, 1), done: make(chan struct{})}
	l := &s.lane
	l.mu.Lock()
	if !l.busy {
		l.busy = true
		l.epoch++
		l.mu.Unlock()
		r.state.Store(reqTaken)
		s.runTurn(&batch{s: s, reqs: []*greq{r}}, r)
		<-r.done
		return r.err, r.retry
	}
	l.queue = append(l.queue, r)
	l.mu.Unlock()
	var b *batch
	select {
	case b = <-r.turn:
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
			return dbErr(ctx.Err()), false
		}
		b = <-r.turn
	}
	s.runTurn(b, r)
	<-r.done
	return r.err, r.retry
}

// runTurn runs one call's function in the batch on the caller's goroutine,
// then passes the lane to the next call, or commits when it is the last.
func (s *Store) runTurn(b *batch, r *greq) {
	returned := false
	defer func() {
		if !returned { // fn panicked or called runtime.Goexit
			r.ok = false
			r.err = errPanicked
			b.undo(r)
		}
		s.endTurn(b, r)
	}()
	switch {
	case b.broken != nil:
		r.err, r.retry = b.broken, true
		returned = true
		return
	case r.ctx.Err() != nil:
		r.err = dbErr(r.ctx.Err())
		returned = true
		return
	}
	if !b.begun {
		b.begun = true
		b.prefix = append(b.prefix, "BEGIN ISOLATION LEVEL READ COMMITTED")
	}
	if b.save {
		b.prefix = append(b.prefix, "SAVEPOINT g"+strconv.Itoa(r.idx))
	}
	mark := len(b.prefix)
	t := &tx{s: s, b: b, write: true, lock: r.lock}
	r.t = t
	err := r.fn(t)
	t.finished = true
	returned = true
	switch {
	case err == nil && !t.retry && !t.aborted:
		r.ok = true
		return
	case err == nil && t.retry:
		err = t.retryErr
	case err == nil: // a statement failed and fn went on
		err = dbErr(pq.ErrInFailedTransaction)
	}
	r.err, r.retry = err, t.retry
	if !t.sent && len(b.prefix) >= mark {
		// Nothing of this call reached the server: drop its savepoint
		// (and BEGIN, for a lone call).
		b.prefix = b.prefix[:mark-1]
		if !b.save {
			b.prefix, b.begun = nil, false
		}
		return
	}
	b.undo(r)
}

// undo rolls back the writes of a failed call: its savepoint (sent with
// the next statement), or the whole transaction when it runs alone.
func (b *batch) undo(r *greq) {
	if b.save {
		b.prefix = append(b.prefix, "ROLLBACK TO SAVEPOINT g"+strconv.Itoa(r.idx))
		return
	}
	b.rollback()
}

// rollback ends the transaction without committing.
func (b *batch) rollback() {
	b.prefix, b.begun = nil, false
	if !b.inTx || b.conn == nil {
		return
	}
	b.inTx = false
	if _, err := b.conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		b.s.dropConn(b)
	}
}

// endTurn hands the lane to the next call of the batch, or, after the last
// one, commits, answers every caller and starts the next batch.
func (s *Store) endTurn(b *batch, r *greq) {
	if r.idx+1 < len(b.reqs) {
		b.reqs[r.idx+1].turn <- b
		return
	}
	s.commit(b)
	for _, q := range b.reqs {
		close(q.done)
	}
	s.nextBatch()
}

// commit commits the batch when any call succeeded and sets the outcome of
// those calls.
func (s *Store) commit(b *batch) {
	var ok []*greq
	for _, q := range b.reqs {
		if q.ok {
			ok = append(ok, q)
		}
	}
	fail := func(err error, retry bool) {
		for _, q := range ok {
			q.ok, q.err, q.retry = false, err, retry
		}
	}
	if b.broken != nil {
		fail(b.broken, true)
		return
	}
	if len(ok) == 0 {
		b.rollback()
		return
	}
	if !b.inTx {
		// The functions wrote nothing: there is nothing to commit.
		b.prefix, b.begun = nil, false
		return
	}
	q := strings.Join(append(b.prefix, "COMMIT"), "; ")
	b.prefix, b.begun, b.inTx = nil, false, false
	if _, err := b.conn.ExecContext(context.Background(), q); err != nil {
		if sqlState(err) == "" {
			// The outcome is unknown: the connection failed.
			s.dropConn(b)
			fail(dbErr(err), false)
			return
		}
		// A statement before COMMIT or COMMIT itself failed: nothing was
		// committed. Make sure the transaction is over.
		if _, rerr := b.conn.ExecContext(context.Background(), "ROLLBACK"); rerr != nil {
			s.dropConn(b)
		}
		fail(dbErr(err), b.save || retryable(err))
		return
	}
	notified := false
	for _, q := range ok {
		notified = notified || q.t.notified
	}
	if notified {
		s.w.signal()
	}
}

// nextBatch starts the next batch from the queue, or marks the lane idle.
func (s *Store) nextBatch() {
	l := &s.lane
	l.mu.Lock()
	var reqs []*greq
	for len(l.queue) > 0 && len(reqs) < maxBatch {
		q := l.queue[0]
		l.queue[0] = nil
		l.queue = l.queue[1:]
		if q.state.CompareAndSwap(reqQueued, reqTaken) {
			q.idx = len(reqs)
			reqs = append(reqs, q)
		}
	}
	if len(l.queue) == 0 {
		l.queue = nil
	}
	if len(reqs) == 0 {
		l.busy = false
		l.epoch++
		if s.closed.Load() {
			l.release()
		} else if l.conn != nil {
			epoch := l.epoch
			if l.idle != nil {
				l.idle.Stop()
			}
			l.idle = time.AfterFunc(laneIdle, func() { s.idleRelease(epoch) })
		}
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	b := &batch{s: s, reqs: reqs, save: len(reqs) > 1}
	reqs[0].turn <- b
}

// idleRelease returns the lane connection to the pool when the lane stayed
// idle since the epoch.
func (s *Store) idleRelease(epoch uint64) {
	l := &s.lane
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.busy && l.epoch == epoch {
		l.release()
	}
}

// closeLane returns the lane connection at Close (or, when a transaction
// runs, when it ends).
func (s *Store) closeLane() {
	l := &s.lane
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.idle != nil {
		l.idle.Stop()
	}
	if !l.busy {
		l.release()
	}
}

// release returns the connection to the pool; l.mu is held and the lane
// idle.
func (l *lane) release() {
	if l.conn != nil {
		l.conn.Close()
		l.conn, l.prep = nil, nil
	}
}

// dropConn discards the lane connection after it failed.
func (s *Store) dropConn(b *batch) {
	l := &s.lane
	if b.conn != nil {
		_ = b.conn.Raw(func(any) error { return driver.ErrBadConn })
		b.conn.Close()
	}
	b.conn, b.inTx, b.begun, b.prefix = nil, false, false, nil
	l.conn, l.prep = nil, nil
}

// laneConn returns the lane connection, taking one from the pool when
// there is none. Only the running transaction calls it.
func (s *Store) laneConn(ctx context.Context) (*sql.Conn, error) {
	l := &s.lane
	if l.conn == nil {
		c, err := s.db.Conn(ctx)
		if err != nil {
			return nil, err
		}
		l.conn, l.prep = c, make(map[string]*prepared)
	}
	return l.conn, nil
}

// fail marks the batch broken after a connection failure.
func (b *batch) fail(err error) {
	if b.broken == nil {
		b.broken = dbErr(err)
	}
	b.s.dropConn(b)
}

// statement runs a statement template of the transaction t on the lane:
// exec (rows affected) when query is false, else a query whose rows the
// caller reads and closes.
func (b *batch) statement(t *tx, ctx context.Context, tmpl string, args []any, query bool) (*sql.Rows, int64, error) {
	if t.finished {
		return nil, 0, sql.ErrTxDone
	}
	if b.broken != nil {
		return nil, 0, b.broken
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	// Statements run with a context that is never cancelled: lib/pq
	// closes the connection when a context ends during a statement, which
	// would lose the whole batch. The caller's context is checked before
	// each statement instead.
	bg := context.Background()
	if b.conn == nil {
		c, err := b.s.laneConn(ctx)
		if err != nil {
			return nil, 0, err
		}
		b.conn = c
	}
	st := b.s.stmt(tmpl)
	lits, p, err := b.literals(t, st.sql, args)
	if err != nil {
		return nil, 0, b.sendErr(t, err)
	}
	prefix := b.takePrefix(t)
	var text string
	if lits == nil {
		// Run unprepared through the extended protocol: with NoPrepare,
		// or for arguments that cannot travel as literals.
		if prefix != "" {
			if _, err := b.conn.ExecContext(bg, prefix); err != nil {
				return nil, 0, b.sendErr(t, err)
			}
		}
		if query {
			rows, err := b.conn.QueryContext(bg, st.sql, args...)
			return rows, 0, b.sendErr(t, err)
		}
		res, err := b.conn.ExecContext(bg, st.sql, args...)
		if err != nil {
			return nil, 0, b.sendErr(t, err)
		}
		n, err := res.RowsAffected()
		return nil, n, err
	}
	text = prefix + "EXECUTE " + p.name
	if len(lits) > 0 {
		text += "(" + strings.Join(lits, ", ") + ")"
	}
	if query {
		rows, err := b.conn.QueryContext(bg, text)
		return rows, 0, b.sendErr(t, err)
	}
	res, err := b.conn.ExecContext(bg, text)
	if err != nil {
		return nil, 0, b.sendErr(t, err)
	}
	n, err := res.RowsAffected()
	return nil, n, err
}

// takePrefix returns the pending statements as the start of a query and
// records that the transaction began.
func (b *batch) takePrefix(t *tx) string {
	t.sent = true
	if len(b.prefix) == 0 {
		return ""
	}
	b.inTx = true
	q := strings.Join(b.prefix, "; ") + "; "
	b.prefix = b.prefix[:0]
	return q
}

// sendErr notes what a failed statement did to the transaction.
func (b *batch) sendErr(t *tx, err error) error {
	if err == nil {
		return nil
	}
	if sqlState(err) != "" {
		t.aborted = true
	} else if connFailed(err) {
		b.fail(err)
	}
	return err
}

// literals prepares the statement on the lane connection when needed and
// returns its arguments as SQL literals, or nil when the statement is to
// run unprepared.
func (b *batch) literals(t *tx, sqlText string, args []any) ([]string, *prepared, error) {
	if b.s.opt.NoPrepare {
		return nil, nil, nil
	}
	l := &b.s.lane
	p := l.prep[sqlText]
	if p == nil {
		l.nprep++
		name := "chat_" + strconv.Itoa(l.nprep)
		// PREPARE is not transactional; the pending statements go first
		// so that a failure lands in the right savepoint.
		q := b.takePrefix(t) + "PREPARE " + name + " AS " + sqlText +
			"; SELECT parameter_types::oid[]::text FROM pg_prepared_statements WHERE name = '" + name + "'"
		var types sql.NullString
		if err := b.conn.QueryRowContext(context.Background(), q).Scan(&types); err != nil {
			return nil, nil, err
		}
		p = &prepared{name: name}
		for _, o := range strings.Split(strings.Trim(types.String, "{}"), ",") {
			p.bytea = append(p.bytea, o == "17")
		}
		l.prep[sqlText] = p
	}
	lits := make([]string, len(args))
	for i, a := range args {
		lit, ok := literal(a, i < len(p.bytea) && p.bytea[i])
		if !ok {
			return nil, nil, nil
		}
		lits[i] = lit
	}
	return lits, p, nil
}

// literal returns a as lib/pq would send it as a text parameter, quoted
// as an SQL literal; ok is false for values that cannot be sent inside a
// query text (a NUL byte, invalid UTF-8) or of an unexpected type.
func literal(a any, bytea bool) (string, bool) {
	v, err := driver.DefaultParameterConverter.ConvertValue(a)
	if err != nil {
		return "", false
	}
	var s string
	switch x := v.(type) {
	case nil:
		return "NULL", true
	case int64:
		s = strconv.FormatInt(x, 10)
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		s = strconv.FormatBool(x)
	case time.Time:
		s = string(pq.FormatTimestamp(x))
	case []byte:
		if bytea {
			s = `\x` + hex.EncodeToString(x)
		} else {
			s = string(x)
		}
	case string:
		if bytea {
			s = `\x` + hex.EncodeToString([]byte(x))
		} else {
			s = x
		}
	default:
		return "", false
	}
	if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
		return "", false
	}
	return pq.QuoteLiteral(s), true
}

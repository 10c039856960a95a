package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
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
// Pipelining: only one batch at a time runs its functions (it holds the
// lane's turn), but the turn passes to the next batch as soon as a batch
// sends its COMMIT, not when the COMMIT returns. The next batch runs on
// another lane connection (up to maxLaneConns), so its statements overlap
// the previous batch's WAL flush. A committing transaction waits for no
// lock, so the batches of one Store cannot deadlock each other: a function
// that needs a row the committing batch wrote waits for that COMMIT, as a
// transaction of another process would, and then sees the committed row.
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

// laneIdle is how long the lane keeps its connections (and the statements
// prepared on them) after the last transaction before returning them to
// the pool.
const laneIdle = 2 * time.Second

// maxLaneConns bounds the connections of the lane: one for the batch that
// runs its functions, the others for batches whose COMMIT is in flight. It
// is lowered for small pools (see New).
const maxLaneConns = 3

// lane is the write lane of a Store.
type lane struct {
	mu    sync.Mutex
	busy  bool    // a batch runs its functions (holds the turn)
	queue []*greq // calls waiting for the next batch
	free  []*laneConn
	open  int           // lane connections, free or in use
	max   int           // bound of open
	freed chan struct{} // closed when a connection is returned; nil if nobody waits
	idle  *time.Timer
	epoch uint64        // counts idle periods, so a stale timer does nothing
	after time.Duration // laneIdle
	nprep atomic.Int64  // names of prepared statements
}

// laneConn is a pooled connection of the lane with the statements prepared
// on it.
type laneConn struct {
	c    *sql.Conn
	prep map[string]*prepared
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
	lc     *laneConn // nil until the first statement
	conn   *sql.Conn // lc.c
	inTx   bool      // BEGIN was sent
	begun  bool      // BEGIN is pending or sent
	prefix []string  // statements to send before the next one
	broken error     // the connection failed or a pending statement did: the transaction is lost
	// pending: prefix holds statements of predicted appends (predict.go);
	// inflight: the statement being sent carries them.
	pending, inflight bool
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
	b.prefix, b.begun, b.pending = nil, false, false
	if !b.inTx || b.conn == nil {
		return
	}
	b.inTx = false
	if _, err := b.conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		b.s.dropConn(b)
	}
}

// endTurn hands the lane to the next call of the batch, or, after the last
// one, passes the turn to the next batch, commits, answers every caller and
// returns the connection.
func (s *Store) endTurn(b *batch, r *greq) {
	if r.idx+1 < len(b.reqs) {
		b.reqs[r.idx+1].turn <- b
		return
	}
	if b.pending {
		// The batch's appends go out with its COMMIT, predicted from the
		// rows as this batch leaves them: the next batch must not reach
		// the server first.
		s.commit(b)
		s.nextBatch()
	} else {
		s.nextBatch()
		s.commit(b)
	}
	for _, q := range b.reqs {
		if q.t != nil && !q.ok {
			for _, id := range q.t.predicted {
				s.pred.forget(id, true)
			}
		}
		close(q.done)
	}
	s.putConn(b)
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
	if !b.inTx && !b.pending {
		// The functions wrote nothing: there is nothing to commit.
		b.prefix, b.begun = nil, false
		return
	}
	pending := b.pending
	q := strings.Join(append(b.prefix, "COMMIT"), "; ")
	b.prefix, b.begun, b.inTx, b.pending = nil, false, false, false
	if _, err := b.conn.ExecContext(context.Background(), q); err != nil {
		if sqlState(err) == "" || connLost(err) {
			// The outcome is unknown: the connection failed. When the
			// batch posted a message, whether that message is stored
			// tells.
			s.dropConn(b)
			s.suspectLane()
			switch committed, cerr := s.committed(ok); {
			case cerr != nil:
				fail(dbErr(err), false)
				return
			case !committed:
				fail(batchLost(err), true)
				return
			}
		} else {
			// A statement before COMMIT or COMMIT itself failed: nothing
			// was committed. Make sure the transaction is over.
			if _, rerr := b.conn.ExecContext(context.Background(), "ROLLBACK"); rerr != nil {
				s.dropConn(b)
			}
			if pending {
				// A predicted append may be what failed: every call
				// runs again, and the appends take the plain path.
				fail(batchLost(err), true)
				return
			}
			fail(dbErr(err), b.save || retryable(err))
			return
		}
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
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	b := &batch{s: s, reqs: reqs, save: len(reqs) > 1}
	reqs[0].turn <- b
}

// idleRelease returns the free lane connections to the pool when the lane
// stayed idle since the epoch.
func (s *Store) idleRelease(epoch uint64) {
	l := &s.lane
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.busy && l.epoch == epoch {
		l.release()
	}
}

// closeLane returns the free lane connections at Close; the connections of
// batches in flight are closed when they end.
func (s *Store) closeLane() {
	l := &s.lane
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.idle != nil {
		l.idle.Stop()
	}
	l.release()
}

// release returns the free connections to the pool, without the
// statements the lane prepared on them; l.mu is held.
func (l *lane) release() {
	for _, lc := range l.free {
		lc.close()
		l.open--
	}
	l.free = nil
}

// close deallocates the statements the lane prepared on the connection and
// returns it to the pool (or discards it when that fails).
func (lc *laneConn) close() {
	if len(lc.prep) > 0 {
		var q strings.Builder
		for _, p := range lc.prep {
			q.WriteString("DEALLOCATE " + p.name + "; ")
		}
		if _, err := lc.c.ExecContext(context.Background(), q.String()); err != nil {
			_ = lc.c.Raw(func(any) error { return driver.ErrBadConn })
		}
	}
	lc.c.Close()
}

// wake tells a batch waiting for a connection that one was returned; l.mu
// is held.
func (l *lane) wake() {
	if l.freed != nil {
		close(l.freed)
		l.freed = nil
	}
}

// putConn returns the batch's connection to the lane after its COMMIT or
// ROLLBACK, and arms the idle timer when no batch runs.
func (s *Store) putConn(b *batch) {
	if b.lc == nil {
		return
	}
	l := &s.lane
	l.mu.Lock()
	defer l.mu.Unlock()
	l.free = append(l.free, b.lc)
	b.lc, b.conn = nil, nil
	l.wake()
	if s.closed.Load() {
		l.release()
		return
	}
	if !l.busy {
		epoch := l.epoch
		if l.idle != nil {
			l.idle.Stop()
		}
		l.idle = time.AfterFunc(l.after, func() { s.idleRelease(epoch) })
	}
}

// dropConn discards the batch's connection after it failed.
func (s *Store) dropConn(b *batch) {
	if b.lc != nil {
		_ = b.conn.Raw(func(any) error { return driver.ErrBadConn })
		b.conn.Close()
		l := &s.lane
		l.mu.Lock()
		l.open--
		l.wake()
		l.mu.Unlock()
	}
	b.lc, b.conn, b.inTx, b.begun, b.prefix, b.pending = nil, nil, false, false, nil, false
}

// laneConn gives the running batch a lane connection: a free one, a new
// one from the pool while fewer than l.max are open, or else the first one
// a committing batch returns.
func (s *Store) laneConn(ctx context.Context, b *batch) error {
	l := &s.lane
	l.mu.Lock()
	for {
		if n := len(l.free); n > 0 {
			b.lc = l.free[n-1]
			l.free = l.free[:n-1]
			l.mu.Unlock()
			b.conn = b.lc.c
			return nil
		}
		if l.open < l.max {
			l.open++
			l.mu.Unlock()
			c, err := s.poolConn(ctx)
			if err != nil {
				l.mu.Lock()
				l.open--
				l.wake()
				l.mu.Unlock()
				return err
			}
			b.lc = &laneConn{c: c, prep: make(map[string]*prepared)}
			b.conn = c
			return nil
		}
		if l.freed == nil {
			l.freed = make(chan struct{})
		}
		freed := l.freed
		l.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
		l.mu.Lock()
	}
}

// poolConn takes a connection for the lane from the pool and checks that
// its session is alive: lane connections are kept for many batches, so a
// session the server ended while it sat idle in the pool (a restart, a
// failover) is found here, and discarded, rather than by a batch.
func (s *Store) poolConn(ctx context.Context) (*sql.Conn, error) {
	tries := s.db.Stats().MaxOpenConnections + 1
	if tries <= 1 || tries > 64 {
		tries = 64
	}
	for i := 1; ; i++ {
		c, err := s.db.Conn(ctx)
		if err != nil {
			return nil, err
		}
		// lib/pq answers a failed ping with driver.ErrBadConn, which
		// makes database/sql discard the connection.
		if err = c.PingContext(ctx); err == nil {
			return c, nil
		}
		c.Close()
		if i >= tries || ctx.Err() != nil {
			return nil, err
		}
	}
}

// fail marks the batch broken after a connection failure.
func (b *batch) fail(err error) {
	if b.broken == nil {
		b.broken = dbErr(err)
	}
	b.s.dropConn(b)
	b.s.suspectLane()
}

// posted identifies a message a call appended: if the transaction
// committed, it is stored with that segment.
type posted struct {
	messageID, channelID string
	segment              int64
}

// committed finds out, after the connection failed during COMMIT, whether
// the transaction of the calls ok committed, by looking for a message one
// of them posted (message ids are unique, and the segment is the
// transaction's). err is errUnknown when no call posted a message or the
// store cannot be asked.
func (s *Store) committed(ok []*greq) (bool, error) {
	var w *posted
	for _, q := range ok {
		if q.t != nil && q.t.posted != nil {
			w = q.t.posted
			break
		}
	}
	if w == nil {
		return false, errUnknown
	}
	ctx, cancel := context.WithTimeout(s.bg, 10*time.Second)
	defer cancel()
	q := s.stmt(`SELECT EXISTS (SELECT 1 FROM {s}messages
		WHERE message_id = $1 AND channel_id = $2 AND channel_segment = $3)`).sql
	var found bool
	var err error
	for i := 0; i < 4; i++ {
		if err = s.db.QueryRowContext(ctx, q, w.messageID, w.channelID, w.segment).Scan(&found); err == nil || !connLost(err) {
			break
		}
	}
	return found, err
}

var errUnknown = errors.New("postgres: the outcome of the commit is unknown")

// batchLost is the error of the calls of a batch whose pending statements
// (or a statement sent with them) failed: they all run again.
func batchLost(err error) error {
	return &chat.Error{Code: chat.CodeUnavailable, Message: "store busy: a batched write failed, try again", Err: err}
}

// abort ends the transaction after a statement sent with pending
// statements failed: which call's statement failed is not known, so the
// whole batch runs again.
func (b *batch) abort(err error) {
	if b.broken == nil {
		b.broken = batchLost(err)
	}
	b.pending = false
	b.rollback()
}

// pend adds the statement of a template to the statements sent before the
// next one (or with COMMIT), without waiting for its outcome; ok is false
// when it cannot travel that way (arguments that cannot be literals).
func (b *batch) pend(t *tx, ctx context.Context, tmpl string, args []any) (ok bool, err error) {
	if b.broken != nil {
		return false, b.broken
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if b.conn == nil {
		if err := b.s.laneConn(ctx, b); err != nil {
			return false, err
		}
	}
	lits, p, err := b.literals(t, b.s.stmt(tmpl).sql, args)
	if err != nil {
		return false, b.sendErr(t, err)
	}
	if lits == nil {
		return false, nil
	}
	b.prefix = append(b.prefix, "EXECUTE "+p.name+"("+strings.Join(lits, ", ")+")")
	b.pending = true
	return true, nil
}

// suspectLane returns the free lane connections to the pool after one of
// them failed: a restart or failover ends every session at once, and the
// lane checks the connections it takes from the pool (see laneConn).
func (s *Store) suspectLane() {
	l := &s.lane
	l.mu.Lock()
	defer l.mu.Unlock()
	l.release()
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
		if err := b.s.laneConn(ctx, b); err != nil {
			return nil, 0, err
		}
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
			_, err := b.conn.ExecContext(bg, prefix)
			if err := b.sendErr(t, err); err != nil {
				return nil, 0, err
			}
		}
		if query {
			rows, err := b.conn.QueryContext(bg, st.sql, args...)
			return rows, 0, b.sendErr(t, err)
		}
		res, err := b.conn.ExecContext(bg, st.sql, args...)
		if err := b.sendErr(t, err); err != nil {
			return nil, 0, err
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
	if err := b.sendErr(t, err); err != nil {
		return nil, 0, err
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
	b.inflight, b.pending = b.pending, false
	q := strings.Join(b.prefix, "; ") + "; "
	b.prefix = b.prefix[:0]
	return q
}

// sendErr notes what a failed statement did to the transaction.
func (b *batch) sendErr(t *tx, err error) error {
	inflight := b.inflight
	b.inflight = false
	if err == nil {
		return nil
	}
	if connLost(err) {
		b.fail(err)
	} else if inflight {
		b.abort(err)
		return b.broken
	} else if sqlState(err) != "" {
		t.aborted = true
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
	l, lc := &b.s.lane, b.lc
	p := lc.prep[sqlText]
	if p == nil {
		name := "chat_" + strconv.FormatInt(l.nprep.Add(1), 10)
		// PREPARE is not transactional; the pending statements go first
		// so that a failure lands in the right savepoint.
		q := b.takePrefix(t) + "PREPARE " + name + " AS " + sqlText +
			"; SELECT parameter_types::oid[]::text FROM pg_prepared_statements WHERE name = '" + name + "'"
		var types sql.NullString
		if err := b.conn.QueryRowContext(context.Background(), q).Scan(&types); err != nil {
			return nil, nil, err
		}
		b.inflight = false
		p = &prepared{name: name}
		for _, o := range strings.Split(strings.Trim(types.String, "{}"), ",") {
			p.bytea = append(p.bytea, o == "17")
		}
		lc.prep[sqlText] = p
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

package postgres

import (
	"context"
	"database/sql"
	"errors"
	"hash/fnv"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	chat "github.com/chatengine/chat"
	"github.com/lib/pq"
)

// Commit groups. Posts to one channel take the channel's row lock (its
// message counter) with their first statement and hold it until their
// COMMIT, so they commit one after the other, each waiting for its own WAL
// flush; posts to many channels run as many transactions at once, each
// paying for its BEGIN, its COMMIT and its flush, and on a few cores the
// server's backends spend more time switching between them than working.
// Updates under chat.WithCommitGroup therefore share transactions: their
// keys are spread over Options.CommitGroups queues (every Update of one
// key uses the same queue), and a queue runs one transaction at a time.
// The first Update of a queue leads a transaction; the ones that arrive
// meanwhile wait, and the leader runs them with its own in the same
// transaction, up to maxGroup in all, and commits once, so one WAL flush
// serves them all (and the posts among them read and write together,
// groupwrite.go). Each is answered only after that COMMIT succeeded.
// Then the first Update still waiting leads the next transaction.
//
// Keys join a transaction in ascending order: a waiting Update is taken
// when its key is one the transaction has already run or is not below the
// greatest key it has run (the others wait for the next transaction), and
// the ones taken together run sorted by key, those of one key in their
// order of arrival. A key names what its Updates lock (the Service's
// CreateMessage uses the channel's id), so every group transaction, in
// every process, takes those locks in one order and two groups never wait
// for each other in a cycle.
//
// A member's function runs with a tx state of its own (its deliveries,
// its events, its prefetched rows; the channels the transaction holds are
// shared), and after the commit each member does its own after-commit
// work (committed). A member whose function returns an error having
// written nothing (a post refused by its rules: the post's reads only
// read and lock, its AppendMessage is held back until the end) is left
// out and answered with its error after the commit. Every other failure
// (a member's function that fails after a statement that may write, a
// statement that fails, a member that must run again (rerun, retry), a
// panic, a COMMIT the server refused) rolls the whole transaction back,
// and every member that ran runs again in a transaction of its own, as
// without a key. A COMMIT whose outcome is unknown (the connection was
// lost) is answered as a transaction of its own would be: with the error.

// maxGroup bounds the Updates that share one transaction (savepoints are
// not used, but a long transaction holds the channel lock for longer).
const maxGroup = 32

// groups holds, by queue, the commit groups with a transaction running.
type groups struct {
	mu sync.Mutex
	m  map[string]*group
}

// queue names the queue of key: a hash of the key modulo
// Options.CommitGroups, or the key itself when CommitGroups is negative.
func (s *Store) queue(key string) string {
	n := s.opt.CommitGroups
	if n == 0 {
		n = runtime.GOMAXPROCS(0)
	}
	if n < 0 {
		return "k" + key
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return strconv.FormatUint(uint64(h.Sum32()%uint32(n)), 10)
}

// group is one queue's Updates waiting for the running transaction, in
// their order of arrival.
type group struct {
	waiting []*member
}

// member is one Update of a commit group.
type member struct {
	ctx   context.Context
	key   string
	fn    func(chat.Tx) error
	taken bool         // under groups.mu: taken by a leader, which answers on done
	done  chan outcome // buffered: answering never blocks
}

// outcome is what a leader answers a member.
type outcome struct {
	lead      bool // lead the next transaction of the queue
	alone     bool // run again in a transaction of its own
	committed bool // t's writes committed: its after-commit work is due
	t         *tx
	err       error
	panicked  any // the function panicked with this value
}

// runGroup runs fn as a member of a commit group under key (see the
// comment above) and returns its tx state and outcome; ran is false when
// fn is to run in a transaction of its own instead.
func (s *Store) runGroup(ctx context.Context, key string, fn func(chat.Tx) error) (t *tx, ran bool, err error) {
	if s.closed.Load() {
		return nil, true, errClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, true, dbErr(err)
	}
	m := &member{ctx: ctx, key: key, fn: fn, done: make(chan outcome, 1)}
	name := s.queue(key)
	g := &s.groups
	g.mu.Lock()
	if g.m == nil {
		g.m = make(map[string]*group)
	}
	q := g.m[name]
	var o outcome
	if q == nil {
		q = &group{}
		g.m[name] = q
		g.mu.Unlock()
		o = s.lead(name, q, m)
	} else {
		q.waiting = append(q.waiting, m)
		g.mu.Unlock()
		if o = s.await(q, m); o.lead {
			o = s.lead(name, q, m)
		}
	}
	switch {
	case o.panicked != nil:
		panic(o.panicked)
	case o.alone:
		return nil, false, nil
	case o.committed:
		s.committed(ctx, o.t)
	}
	return o.t, true, o.err
}

// await waits for m's outcome. A member whose context ends while it waits
// in the queue leaves it, never runs, and is answered with the
// cancellation; one that a leader took already is answered by it (the
// leader runs no member whose context has ended).
func (s *Store) await(q *group, m *member) outcome {
	select {
	case o := <-m.done:
		return o
	case <-m.ctx.Done():
	}
	g := &s.groups
	g.mu.Lock()
	if !m.taken {
		q.waiting = slices.DeleteFunc(q.waiting, func(x *member) bool { return x == m })
		g.mu.Unlock()
		return outcome{err: dbErr(m.ctx.Err())}
	}
	g.mu.Unlock()
	return <-m.done
}

// take takes, in their order of arrival, up to n of the Updates waiting in
// q that may join a transaction that has run the keys ran, the greatest
// of them floor: those of a key in ran or not below floor (see the
// comment above).
func (s *Store) take(q *group, n int, ran map[string]bool, floor string) []*member {
	g := &s.groups
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*member
	q.waiting = slices.DeleteFunc(q.waiting, func(m *member) bool {
		if len(out) == n || m.key < floor && !ran[m.key] {
			return false
		}
		m.taken = true
		out = append(out, m)
		return true
	})
	return out
}

// handOff makes the first Update waiting in q the leader of the queue's
// next transaction, or ends the group when none waits.
func (s *Store) handOff(name string, q *group) {
	g := &s.groups
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(q.waiting) == 0 {
		delete(g.m, name)
		return
	}
	next := q.waiting[0]
	q.waiting = slices.Delete(q.waiting, 0, 1)
	next.taken = true
	next.done <- outcome{lead: true}
}

// groupRun is a member's run in a group transaction.
type groupRun struct {
	m         *member
	t         *tx
	err       error
	panicked  any
	cancelled bool       // its context ended before its turn: it did not run
	ahead     *readAhead // its post's rows, read with others' (readAhead)
}

// lead runs a transaction of q: self's function and those of the
// Updates that waited behind it, then those that arrive meanwhile (see
// take), and commits it once. It answers the members it took and returns
// self's outcome. A transaction with self alone is answered exactly as run
// answers it.
func (s *Store) lead(name string, q *group, self *member) outcome {
	handed := false
	handOff := func() {
		if !handed {
			handed = true
			s.handOff(name, q)
		}
	}
	defer handOff()
	if err := self.ctx.Err(); err != nil {
		return outcome{err: dbErr(err)}
	}
	// database/sql rolls a transaction back when the context it began
	// with ends: the transaction is the group's, not self's alone.
	stx, err := s.begin(context.WithoutCancel(self.ctx), &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return outcome{err: dbErr(err)}
	}
	// Ends the transaction unless it committed.
	defer func() { _ = stx.Rollback() }()

	held := make(map[string]bool) // the channels whose rows the transaction holds
	grp := &groupPosts{t: &tx{s: s, tx: stx, write: true, heldChannels: held}, keys: make(map[string]bool)}
	ran := make(map[string]bool) // the keys of the members that ran
	floor := ""                  // the greatest of them
	ctx := context.WithoutCancel(self.ctx)
	runs := sortedRuns(append([]*member{self}, s.take(q, maxGroup-1, ran, floor)...))
	grp.readAhead(ctx, runs)
	fallback, anyOK := false, false
	for i := 0; i < len(runs) && !fallback; i++ {
		r := runs[i]
		if grp.err != nil {
			fallback = true
			break
		}
		if r.m.ctx.Err() != nil {
			r.cancelled, r.err = true, dbErr(r.m.ctx.Err())
		} else {
			ran[r.m.key], floor = true, max(floor, r.m.key)
			r.t = &tx{s: s, tx: stx, write: true, heldChannels: held, grp: grp, ahead: r.ahead}
			r.panicked, r.err = callMember(r.t, r.m)
			t := r.t
			switch {
			case r.panicked != nil, t.rerun, t.retry, t.broke, grp.err != nil, r.err != nil && t.wrote:
				fallback = true
			case r.err == nil:
				anyOK = true
			}
		}
		if i == len(runs)-1 && !fallback && len(runs) < maxGroup {
			batch := sortedRuns(s.take(q, maxGroup-len(runs), ran, floor))
			grp.readAhead(ctx, batch)
			runs = append(runs, batch...)
		}
	}
	// The posts whose writes wait (groupwrite.go); a post alone is
	// answered with their failure as run answers it.
	if !fallback {
		if err := grp.flush(ctx); err != nil {
			if len(runs) == 1 {
				runs[0].err = runs[0].t.verdict(self.ctx, err)
			}
			fallback = true
		}
	}
	if len(runs) == 1 {
		// self alone: as run answers it.
		r := runs[0]
		switch {
		case r.panicked != nil:
			return outcome{panicked: r.panicked}
		case r.err != nil:
			return outcome{t: r.t, err: r.err}
		}
		err := stx.Commit()
		handOff()
		if err != nil {
			r.t.retry = retryable(err)
			return outcome{t: r.t, err: dbErr(err)}
		}
		s.commits.Add(1)
		return outcome{t: r.t, committed: true}
	}
	if !fallback && anyOK {
		err = stx.Commit()
		handOff()
		switch {
		case err == nil:
			s.commits.Add(1)
		case sqlState(err) != "", errors.Is(err, pq.ErrInFailedTransaction):
			// The server refused the COMMIT, or the transaction had
			// failed: nothing is committed.
			fallback = true
		default:
			// The outcome is unknown: answered as a transaction of
			// its own would be.
			err = dbErr(err)
			for _, r := range runs {
				if !r.cancelled {
					r.err = err
				}
			}
		}
	} else {
		_ = stx.Rollback()
		handOff()
	}
	var own outcome
	for _, r := range runs {
		var o outcome
		switch {
		case r.panicked != nil:
			o = outcome{panicked: r.panicked}
		case r.cancelled:
			o = outcome{err: r.err}
		case fallback:
			o = outcome{alone: true}
		case r.err != nil:
			o = outcome{t: r.t, err: r.err}
		default:
			o = outcome{t: r.t, committed: true}
		}
		if r.m == self {
			own = o
		} else {
			r.m.done <- o
		}
	}
	return own
}

// sortedRuns returns the runs of ms sorted by key, those of one key in
// their order in ms.
func sortedRuns(ms []*member) []*groupRun {
	slices.SortStableFunc(ms, func(a, b *member) int { return strings.Compare(a.key, b.key) })
	out := make([]*groupRun, len(ms))
	for i, m := range ms {
		out[i] = &groupRun{m: m}
	}
	return out
}

// callMember runs a member's function in the group transaction, with its
// deferred AppendMessage, and recovers a panic of it, which the member
// raises again in its own goroutine.
func callMember(t *tx, m *member) (panicked any, err error) {
	defer func() {
		if v := recover(); v != nil {
			panicked = v
		}
	}()
	return nil, t.verdict(m.ctx, m.fn(t))
}

// writeRE matches the words of a statement that writes rows or may: the
// data-modifying commands and the functions that write.
var writeRE = regexp.MustCompile(`(?i)\b(INSERT|UPDATE|DELETE|MERGE|TRUNCATE|COPY|CALL|DO|SET|nextval|setval|pg_notify|pg_advisory\w*)\b`)

// lockingRE matches the locking clauses of a SELECT, which lock rows but
// write none.
var lockingRE = regexp.MustCompile(`(?i)\bFOR\s+(NO\s+KEY\s+UPDATE|UPDATE|KEY\s+SHARE|SHARE)\b`)

// writes reports whether a statement template may write rows: any
// statement but a SELECT (or WITH ... SELECT) that names none of
// writeRE's words once its locking clauses are left out. It errs on the
// side of writing: a commit group member that fails after a statement
// that may write makes its group run again alone (see group.go).
func writes(tmpl string) bool {
	q := strings.TrimSpace(tmpl)
	if len(q) < 6 || !strings.EqualFold(q[:6], "SELECT") && !strings.EqualFold(q[:4], "WITH") {
		return true
	}
	return writeRE.MatchString(lockingRE.ReplaceAllString(q, ""))
}

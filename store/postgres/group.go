package postgres

import (
	"context"
	"database/sql"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"

	chat "github.com/chatengine/chat"
	"github.com/lib/pq"
)

// Commit groups. Posts to one channel take the channel's row lock (its
// message counter) with their first statement and hold it until their
// COMMIT, so they commit one after the other, each waiting for its own WAL
// flush. Updates that carry the same chat.WithCommitGroup key therefore
// share a transaction while one is running: the first of a key leads a
// transaction; the ones that arrive meanwhile wait, and the leader runs
// them, in their order of arrival, in the same transaction after its own,
// up to maxGroup in all, and commits once, so one WAL flush serves them
// all. Each is answered only after that COMMIT succeeded. Then the first
// Update still waiting leads the next transaction.
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

// groups holds, by key, the commit groups with a transaction running.
type groups struct {
	mu sync.Mutex
	m  map[string]*group
}

// group is one key's queue of Updates waiting for the running
// transaction.
type group struct {
	waiting []*member
}

// member is one Update of a commit group.
type member struct {
	ctx   context.Context
	fn    func(chat.Tx) error
	taken bool         // under groups.mu: taken by a leader, which answers on done
	done  chan outcome // buffered: answering never blocks
}

// outcome is what a leader answers a member.
type outcome struct {
	lead      bool // lead the next transaction of the key
	alone     bool // run again in a transaction of its own
	committed bool // t's writes committed: its after-commit work is due
	t         *tx
	err       error
	panicked  any // the function panicked with this value
}

// runGroup runs fn as a member of the commit group of key (see the
// comment above) and returns its tx state and outcome; ran is false when
// fn is to run in a transaction of its own instead.
func (s *Store) runGroup(ctx context.Context, key string, fn func(chat.Tx) error) (t *tx, ran bool, err error) {
	if s.closed.Load() {
		return nil, true, errClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, true, dbErr(err)
	}
	m := &member{ctx: ctx, fn: fn, done: make(chan outcome, 1)}
	g := &s.groups
	g.mu.Lock()
	if g.m == nil {
		g.m = make(map[string]*group)
	}
	q := g.m[key]
	var o outcome
	if q == nil {
		q = &group{}
		g.m[key] = q
		g.mu.Unlock()
		o = s.lead(key, q, m)
	} else {
		q.waiting = append(q.waiting, m)
		g.mu.Unlock()
		if o = s.await(q, m); o.lead {
			o = s.lead(key, q, m)
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

// take takes up to n of the Updates waiting in q, in their order.
func (s *Store) take(q *group, n int) []*member {
	g := &s.groups
	g.mu.Lock()
	defer g.mu.Unlock()
	n = min(n, len(q.waiting))
	out := slices.Clone(q.waiting[:n])
	for _, m := range out {
		m.taken = true
	}
	q.waiting = slices.Delete(q.waiting, 0, n)
	return out
}

// handOff makes the first Update waiting in q the leader of the key's
// next transaction, or ends the group when none waits.
func (s *Store) handOff(key string, q *group) {
	g := &s.groups
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(q.waiting) == 0 {
		delete(g.m, key)
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
	cancelled bool // its context ended before its turn: it did not run
}

// lead runs a transaction of key's group: self's function first, then
// those of the Updates that waited meanwhile, and commits it once. It
// answers the members it took and returns self's outcome. A transaction
// with self alone is answered exactly as run answers it.
func (s *Store) lead(key string, q *group, self *member) outcome {
	handed := false
	handOff := func() {
		if !handed {
			handed = true
			s.handOff(key, q)
		}
	}
	// A panic of self's function ends the transaction and passes the
	// key on (it runs before any other member is taken).
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
	runs := []*groupRun{{m: self}}
	fallback, anyOK := false, false
	for i := 0; i < len(runs) && !fallback; i++ {
		r := runs[i]
		if r.m.ctx.Err() != nil {
			r.cancelled, r.err = true, dbErr(r.m.ctx.Err())
		} else {
			r.t = &tx{s: s, tx: stx, write: true, heldChannels: held}
			if i == 0 {
				r.err = r.t.verdict(r.m.ctx, r.m.fn(r.t))
			} else {
				r.panicked, r.err = callMember(r.t, r.m)
			}
			t := r.t
			switch {
			case r.panicked != nil, t.rerun, t.retry, t.broke, r.err != nil && t.wrote:
				fallback = true
			case r.err == nil:
				anyOK = true
			}
		}
		if i == len(runs)-1 && !fallback && len(runs) < maxGroup {
			for _, m := range s.take(q, maxGroup-len(runs)) {
				runs = append(runs, &groupRun{m: m})
			}
		}
	}
	if len(runs) == 1 {
		// self alone: as run answers it.
		r := runs[0]
		if r.err != nil {
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
	for i, r := range runs {
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
		if i == 0 {
			own = o
		} else {
			r.m.done <- o
		}
	}
	return own
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

package postgres

import (
	"context"
	"database/sql"
	"sync"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/lib/pq"
)

// The event relay.
//
// Writers insert their events into events_pending (AppendEvents) and share
// nothing else. A relay pass moves every committed pending row into events,
// in key order, numbering them from the counter row event_log_head, and
// sends one NOTIFY for the whole batch. Passes run one at a time across
// all processes: a pass is one statement that takes the counter row's lock
// and moves rows only if the counter still holds the value its snapshot
// read (else it runs again), so a pass saw every row that the previous
// pass moved, and ids follow the order in which the passes commit. A writer's rows become readable only with every row of
// the passes before, which is what chat.EventStore asks: ids follow commit
// order.
//
// In a process, a writer whose transaction appended events runs a pass
// right after its commit, or, when a pass is running already, waits for it
// and for the next one (the running pass may have read before the commit):
// one pass moves the rows of every writer that waited for it, so under
// load the passes carry many writers each. Update returns once a pass
// started after its commit has ended, and sets the events' ids; when the
// context carries chat.WithoutEventIDs it returns at the commit instead and
// kicks the relay goroutine (kickRelay), which runs the pass. A pass by
// another process may move the rows first; their ids are then read back
// from events by pending_seq. Rows committed by a process that died before
// its pass are moved by the next pass of any process, and at the latest by
// the poll that runs beside every process's LISTEN connection.

// relayBatch bounds the rows one pass moves; a full pass is followed by
// another at once.
const relayBatch = 1000

// relayWait bounds how long Update waits for the relay after its commit.
// The commit stands either way: when the wait fails the events' ids stay
// 0, and the relay moves them later.
const relayWait = 10 * time.Second

// relayPoll is how often each process looks for pending rows that no
// writer relayed (their process ended between commit and relay).
const relayPoll = time.Second

// eventsChannel returns the LISTEN/NOTIFY channel on which relay passes
// announce new events, named like notifyChannel's.
func eventsChannel(schema string) string { return channelName("chat_events.", schema) }

// appended is an event of a transaction with its events_pending key.
type appended struct {
	e   *chat.Event
	seq int64
}

// relayer is the in-process state of the relay: passes run one at a time,
// each numbered, and writers wait for a pass numbered above the count at
// their commit.
type relayer struct {
	mu      sync.Mutex
	running bool
	started uint64 // passes started
	covered uint64 // the last pass that ended having moved every visible row
	done    chan struct{}
	want    map[int64]int // pending keys waited for, with their waiters
	got     map[int64]int64
	kicked  bool // a commit appended events since the relay goroutine last looked
	looping bool // the relay goroutine runs
}

// kickRelay makes the relay goroutine run a pass after this commit,
// starting it unless it runs: Update calls it after a commit that appended
// events whose ids the caller does not wait for. The goroutine ends when
// no commit kicked it during its last pass, and with Close.
func (s *Store) kickRelay() {
	r := &s.rl
	r.mu.Lock()
	r.kicked = true
	if r.looping {
		r.mu.Unlock()
		return
	}
	r.looping = true
	r.mu.Unlock()
	s.bgMu.Lock()
	if s.bg.Err() != nil {
		s.bgMu.Unlock()
		return
	}
	s.bgWG.Add(1)
	s.bgMu.Unlock()
	go func() {
		defer s.bgWG.Done()
		for {
			r.mu.Lock()
			if !r.kicked || s.bg.Err() != nil {
				r.looping = false
				r.mu.Unlock()
				return
			}
			r.kicked = false
			need := r.started + 1
			r.mu.Unlock()
			ctx, cancel := context.WithTimeout(s.bg, relayWait)
			err := s.relayAfter(ctx, need)
			cancel()
			if err != nil {
				// The rows stay pending: the next commit's kick or the
				// poll moves them.
				r.mu.Lock()
				r.looping = false
				r.mu.Unlock()
				return
			}
		}
	}()
}

func (r *relayer) init() {
	r.want = map[int64]int{}
	r.got = map[int64]int64{}
}

// afterCommit waits for the relay to move the events that t appended and
// sets their ids. It is called once t committed, so a failure here does
// not undo anything: the ids then stay 0.
func (s *Store) afterCommit(ctx context.Context, t *tx) {
	if len(t.appended) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), relayWait)
	defer cancel()
	seqs := make([]int64, len(t.appended))
	for i, a := range t.appended {
		seqs[i] = a.seq
	}
	ids, err := s.relayFor(ctx, seqs, t.floor)
	if err != nil {
		return
	}
	for i, a := range t.appended {
		a.e.ID = ids[i]
	}
}

// relayFor makes sure that a pass which started after the caller's commit
// has ended and returns the ids of the given pending keys (0 for a key
// whose row is gone without a trace: retention deleted it already).
func (s *Store) relayFor(ctx context.Context, seqs []int64, floor int64) ([]int64, error) {
	r := &s.rl
	r.mu.Lock()
	for _, q := range seqs {
		r.want[q]++
	}
	need := r.started + 1
	r.mu.Unlock()
	ids := make([]int64, len(seqs))
	defer func() {
		r.mu.Lock()
		for _, q := range seqs {
			if r.want[q]--; r.want[q] <= 0 {
				delete(r.want, q)
				delete(r.got, q)
			}
		}
		r.mu.Unlock()
	}()
	if err := s.relayAfter(ctx, need); err != nil {
		return nil, err
	}
	var missing []int64
	r.mu.Lock()
	for i, q := range seqs {
		if id, ok := r.got[q]; ok {
			ids[i] = id
		} else {
			missing = append(missing, q)
		}
	}
	r.mu.Unlock()
	if len(missing) == 0 {
		return ids, nil
	}
	// Moved by another process's pass: read the ids back.
	found := map[int64]int64{}
	rows, err := s.db.QueryContext(ctx, s.stmt(`SELECT pending_seq, id FROM {s}events
		WHERE id > $1 AND pending_seq = ANY($2::bigint[])`).sql, floor, pq.Int64Array(missing))
	if err != nil {
		return nil, dbErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var q, id int64
		if err := rows.Scan(&q, &id); err != nil {
			return nil, dbErr(err)
		}
		found[q] = id
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(err)
	}
	for i, q := range seqs {
		if ids[i] == 0 {
			ids[i] = found[q]
		}
	}
	return ids, nil
}

// relayAfter returns once a pass numbered need or above has ended having
// moved every row it could see: it runs that pass itself unless one is
// running, in which case it waits for it.
func (s *Store) relayAfter(ctx context.Context, need uint64) error {
	r := &s.rl
	for {
		r.mu.Lock()
		if r.covered >= need {
			r.mu.Unlock()
			return nil
		}
		if r.running {
			ch := r.done
			r.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return dbErr(ctx.Err())
			}
		}
		r.running = true
		r.started++
		n := r.started
		r.done = make(chan struct{})
		r.mu.Unlock()

		moved, err := s.relayAll(ctx)

		r.mu.Lock()
		r.running = false
		if err == nil {
			r.covered = n
		}
		close(r.done)
		r.mu.Unlock()
		if moved > 0 && !s.w.listening() {
			// With a LISTEN connection the pass's own NOTIFY wakes this
			// process's watchers too; without one, signal them here.
			s.w.signal(sigEvents)
		}
		if err != nil {
			return err
		}
	}
}

// relayAll runs passes until one moves less than a full batch, and returns
// how many rows they moved.
func (s *Store) relayAll(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := s.relayPass(ctx)
		total += n
		if err != nil || n < relayBatch {
			return total, err
		}
	}
}

// relayMoveSQL is one relay pass in one statement (its own transaction):
// it moves up to $1 pending rows, in key order, into events with the ids
// that follow the counter row, and notifies the events channel ($2) once.
// Passes are serialized by the counter row: the UPDATE takes its lock and
// succeeds only if last_id is still the value this statement's snapshot
// read. If another pass committed after that snapshot (which may have
// moved some of the rows read), the UPDATE finds a newer last_id, changes
// nothing, and nothing is deleted or inserted: the pass is run again with
// a fresh snapshot. Rows are returned as (key, id), followed by one row
// (0, rows read but not moved because of such a conflict).
//
// events_pending churns: every row is deleted soon after its insert, so
// between two vacuums most of its pages hold only dead rows, and the
// planner, without statistics that say so, would delete "seq IN (SELECT
// seq FROM p)" with a hash join over a sequential scan that reads every
// one of those pages on every pass (thousands of pages at a few thousand
// events a second). The pass therefore deletes with "seq = ANY
// (ARRAY(...))", which the planner serves through the primary key, with
// the generic plan made on the empty table too (TestExplainChurnedTables
// checks those plans).
const relayMoveSQL = `WITH p AS MATERIALIZED (
		SELECT seq, name, channel_id, user_ids, data, created_at
		FROM {s}events_pending ORDER BY seq LIMIT $1
	), v AS MATERIALIZED (
		SELECT last_id FROM {s}event_log_head
	), h AS (
		UPDATE {s}event_log_head SET last_id = last_id + (SELECT count(*) FROM p)
		WHERE EXISTS (SELECT 1 FROM p) AND last_id = (SELECT last_id FROM v)
		RETURNING last_id - (SELECT count(*) FROM p) AS base
	), d AS (
		DELETE FROM {s}events_pending WHERE seq = ANY (ARRAY(SELECT seq FROM p)) AND EXISTS (SELECT 1 FROM h)
	), ins AS (
		INSERT INTO {s}events (id, name, channel_id, user_ids, data, created_at, pending_seq)
		SELECT (SELECT base FROM h) + row_number() OVER (ORDER BY seq), name, channel_id, user_ids,
			data, created_at, seq
		FROM p WHERE EXISTS (SELECT 1 FROM h)
		RETURNING pending_seq, id
	), notify AS (
		SELECT pg_notify($2, '') WHERE EXISTS (SELECT 1 FROM h)
	)
	SELECT pending_seq, id FROM ins
	UNION ALL
	SELECT 0, CASE WHEN EXISTS (SELECT 1 FROM h) THEN 0 ELSE (SELECT count(*) FROM p) END
		+ 0 * (SELECT count(*) FROM notify)`

// relayPass runs relayMoveSQL until it does not conflict with another
// process's pass, and returns how many rows it moved. It records the ids
// of the keys that writers of this process wait for.
func (s *Store) relayPass(ctx context.Context) (int, error) {
	st := s.stmt(relayMoveSQL)
	for {
		var (
			rows *sql.Rows
			err  error
		)
		if p := s.prepared(st); p != nil && !s.opt.NoPrepare {
			rows, err = p.QueryContext(ctx, relayBatch, s.events)
		} else {
			rows, err = s.db.QueryContext(ctx, st.sql, relayBatch, s.events)
		}
		if err != nil {
			return 0, dbErr(err)
		}
		var moved [][2]int64
		var conflict int64
		for rows.Next() {
			var q, id int64
			if err := rows.Scan(&q, &id); err != nil {
				rows.Close()
				return 0, dbErr(err)
			}
			if q == 0 {
				conflict = id
				continue
			}
			moved = append(moved, [2]int64{q, id})
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return 0, dbErr(err)
		}
		if err := rows.Close(); err != nil {
			return 0, dbErr(err)
		}
		if conflict > 0 {
			if err := ctx.Err(); err != nil {
				return 0, dbErr(err)
			}
			continue // another process's pass committed meanwhile
		}
		if len(moved) > 0 {
			s.churned("events_pending", len(moved))
			r := &s.rl
			r.mu.Lock()
			for _, m := range moved {
				if r.want[m[0]] > 0 {
					r.got[m[0]] = m[1]
				}
			}
			r.mu.Unlock()
		}
		return len(moved), nil
	}
}

// relayPendingSQL tells whether a pending row is visible, through the
// primary key (min is read from the index's first live entry): EXISTS
// over the table would scan its dead pages (relayMoveSQL).
const relayPendingSQL = `SELECT min(seq) IS NOT NULL FROM {s}events_pending`

// pollRelay moves, every relayPoll, the pending rows that no writer
// relayed. It runs from the first Watch call until Close. A look that
// finds nothing pending costs one indexed read.
func (s *Store) pollRelay() {
	defer s.w.loop.Done()
	t := time.NewTicker(relayPoll)
	defer t.Stop()
	for {
		select {
		case <-s.w.done:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(s.bg, relayWait)
		var pending bool
		err := s.db.QueryRowContext(ctx, s.stmt(relayPendingSQL).sql).Scan(&pending)
		if err == nil && pending {
			s.rl.mu.Lock()
			need := s.rl.started + 1
			s.rl.mu.Unlock()
			_ = s.relayAfter(ctx, need)
		}
		cancel()
	}
}

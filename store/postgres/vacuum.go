package postgres

import (
	"context"
	"sync"
	"time"
)

// Tables that churn. events_pending (the relay) and push_batches (the push
// worker) hold a row per event or pushed message for a moment only: under
// load, tens of thousands of rows a minute are inserted and deleted, and
// every read of their oldest rows, in key order, walks the dead rows that
// the last vacuum left, in the index and in the heap, so the reads get
// slower the longer no vacuum runs. Autovacuum looks at a table at most
// once per autovacuum_naptime (a minute by default) and only when one of
// its few workers is free, which a cluster busy vacuuming large tables
// does not promise. So each process vacuums these tables itself after it
// has deleted churnVacuumEvery rows of one of them: in the background, one
// VACUUM at a time per table and process, skipped when another VACUUM of
// the table (another process's, or autovacuum) holds its lock, and
// without truncating the table (which would lock out its writers for a
// moment; the freed pages are reused). A role that does not own the table
// gets a warning from the server and nothing is done.

// churnVacuumEvery is how many rows of a churning table a process deletes
// between two of its VACUUMs of that table.
const churnVacuumEvery = 20000

// churnTables are the tables vacuumed that way, with their VACUUM
// statements.
var churnTables = map[string]string{
	"events_pending": `VACUUM (SKIP_LOCKED, TRUNCATE false) {s}events_pending`,
	"push_batches":   `VACUUM (SKIP_LOCKED, TRUNCATE false) {s}push_batches`,
}

// churn counts, per table, the rows deleted since the last VACUUM started.
type churn struct {
	mu      sync.Mutex
	deleted map[string]int
	running map[string]bool
	done    map[string]int // VACUUMs run, for tests
}

// churned records that n rows of table were deleted and starts a VACUUM
// of it when churnVacuumEvery have been since the last one started.
func (s *Store) churned(table string, n int) {
	if n <= 0 {
		return
	}
	c := &s.churn
	c.mu.Lock()
	if c.deleted == nil {
		c.deleted, c.running, c.done = map[string]int{}, map[string]bool{}, map[string]int{}
	}
	c.deleted[table] += n
	if c.deleted[table] < churnVacuumEvery || c.running[table] {
		c.mu.Unlock()
		return
	}
	c.deleted[table] = 0
	c.running[table] = true
	c.mu.Unlock()
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	if s.bg.Err() != nil {
		c.mu.Lock()
		c.running[table] = false
		c.mu.Unlock()
		return
	}
	s.bgWG.Add(1)
	go func() {
		defer s.bgWG.Done()
		ctx, cancel := context.WithTimeout(s.bg, time.Minute)
		_, err := s.db.ExecContext(ctx, s.stmt(churnTables[table]).sql)
		cancel()
		c.mu.Lock()
		c.running[table] = false
		if err == nil {
			c.done[table]++
		}
		c.mu.Unlock()
	}()
}

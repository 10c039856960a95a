package sqlite

import (
	"context"
	"database/sql"
	"net/url"
	"time"
)

// Checkpoints.
//
// In WAL mode a commit appends the pages it changed to the write-ahead
// log, and a checkpoint copies them into the database file. By default
// SQLite checkpoints inside the commit that takes the log past 1,000 pages:
// the writer, and every Update waiting for it, then also waits for the copy
// and for the fsyncs of the log and the database file. The store runs its
// checkpoints on a connection of its own instead (the checkpointer), a
// passive one (it never waits for readers or the writer) CheckpointDelay
// after a commit, while the writer goes on committing. The write connection
// keeps an automatic checkpoint every 10,000 pages, should the log ever
// grow that far (a checkpointer held back by long reads). Durability does
// not change: a commit is durable in the log (Options.Synchronous), and a
// checkpoint syncs the log before and the database file after copying, as
// the automatic one does.

// openCheckpointer sets the write connection's automatic checkpoint to
// 10,000 pages and opens the checkpointer's connection.
func openCheckpointer(ctx context.Context, path string, wconn *conn, synchronous string) (*sql.DB, error) {
	if _, err := wconn.ExecContext(ctx, "PRAGMA wal_autocheckpoint = 10000"); err != nil {
		return nil, err
	}
	p := url.Values{}
	p.Set("_synchronous", synchronous)
	p.Set("_mutex", "no")
	db, err := sql.Open("sqlite3", dsn(path, p))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// closeAll closes db when there is one.
func closeAll(db *sql.DB) {
	if db != nil {
		db.Close()
	}
}

// wakeCheckpointer tells the checkpointer that a commit added to the log.
func (s *Store) wakeCheckpointer() {
	select {
	case s.ckptWake <- struct{}{}:
	default:
	}
}

// checkpointer runs a passive checkpoint CheckpointDelay after a commit
// (the commits of that time share it) until the store closes. An idle
// store wakes it never.
func (s *Store) checkpointer(db *sql.DB) {
	defer close(s.ckptDone)
	defer db.Close()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-s.ckptWake:
		case <-s.closing:
			return
		}
		timer.Reset(s.opt.CheckpointDelay)
		select {
		case <-timer.C:
		case <-s.closing:
			timer.Stop()
			return
		}
		// busy is 1 when another checkpoint ran at the time (the
		// writer's, or another process's): the next commit wakes this one
		// again. A failure (the file gone, I/O) leaves the checkpoint to
		// the writer's automatic one.
		var busy, logPages, done int64
		if err := db.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logPages, &done); err == nil && busy == 0 {
			s.ckptMu.Lock()
			s.ckpt = Checkpoint{LogPages: logPages, DonePages: done}
			s.ckptMu.Unlock()
			s.checkpoints.Add(1)
		}
	}
}

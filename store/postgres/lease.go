package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync"
	"time"

	"github.com/chatengine/chat/broker"
)

var _ broker.Leaser = (*Store)(nil)

// leasePing is how often a lease's connection is checked.
const leasePing = time.Second

// AcquireLease implements broker.Leaser with a session advisory lock,
// keyed by the schema and name, held on a connection of its own taken
// from the pool. The lease ends when Release unlocks it, or when that
// connection dies (the server then drops the lock, and another process
// may take it): Lost is closed when a check of the connection (every
// second) or Advance fails. The position is the broker_positions row of
// name; a first lease creates it at the log's last id, so that a new
// broker starts from the present.
//
// Advance writes the row on the lease's connection: a process that lost
// the lock cannot move it, since its connection is gone.
func (s *Store) AcquireLease(ctx context.Context, name string) (broker.Lease, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, dbErr(err)
	}
	var ok bool
	key := "chat_broker." + s.schema + "." + name
	if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock(hashtextextended($1, 0))`, key).Scan(&ok); err != nil {
		_ = conn.Close()
		return nil, dbErr(err)
	}
	if !ok {
		_ = conn.Close()
		return nil, nil
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO `+s.prefix+`broker_positions (name, published)
		SELECT $1, last_id FROM `+s.prefix+`event_log_head ON CONFLICT (name) DO NOTHING`, name); err != nil {
		_ = conn.Close() // closing the session drops the lock
		return nil, dbErr(err)
	}
	l := &lease{s: s, conn: conn, key: key, name: name, lost: make(chan struct{}), stop: make(chan struct{})}
	go l.watch()
	return l, nil
}

type lease struct {
	s    *Store
	conn *sql.Conn
	key  string
	name string
	mu   sync.Mutex // one statement at a time on conn
	once sync.Once
	lost chan struct{}
	stop chan struct{}
	done sync.Once
}

func (l *lease) lose() { l.once.Do(func() { close(l.lost) }) }

func (l *lease) watch() {
	t := time.NewTicker(leasePing)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-l.lost:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		l.mu.Lock()
		err := l.conn.PingContext(ctx)
		l.mu.Unlock()
		cancel()
		if err != nil {
			l.lose()
			return
		}
	}
}

func (l *lease) Published(ctx context.Context) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var id int64
	err := l.conn.QueryRowContext(ctx, `SELECT published FROM `+l.s.prefix+`broker_positions WHERE name = $1`, l.name).Scan(&id)
	if err != nil {
		l.lose()
	}
	return id, dbErr(err)
}

func (l *lease) Advance(ctx context.Context, id int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.conn.ExecContext(ctx, `UPDATE `+l.s.prefix+`broker_positions SET published = $2
		WHERE name = $1 AND published < $2`, l.name, id)
	if err != nil {
		l.lose()
	}
	return dbErr(err)
}

func (l *lease) Lost() <-chan struct{} { return l.lost }

// Release unlocks and returns the connection to the pool; a connection
// whose unlock failed is closed, which drops the lock.
func (l *lease) Release() error {
	var err error
	l.done.Do(func() {
		close(l.stop)
		l.mu.Lock()
		defer l.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = l.conn.ExecContext(ctx, `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, l.key)
		if err != nil {
			_ = l.conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		l.lose()
		if cerr := l.conn.Close(); err == nil {
			err = cerr
		}
	})
	return dbErr(err)
}

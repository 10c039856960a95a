package postgres_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/postgres"
)

// wireLog records, per connection, the requests that lib/pq answers with
// one round trip each: BEGIN, COMMIT, ROLLBACK, a prepare, the execution
// of a prepared statement, and a statement run unprepared (two round trips
// with arguments: lib/pq parses it first).
type wireLog struct {
	mu    sync.Mutex
	next  int
	ops   []wireOp
	preps map[string]int // prepares by connection and SQL
}

type wireOp struct {
	conn int
	kind string // begin, commit, rollback, prepare, exec, unprepared
	sql  string
}

func (l *wireLog) add(conn int, kind, q string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops = append(l.ops, wireOp{conn, kind, q})
	if kind == "prepare" {
		l.preps[fmt.Sprintf("conn %d: %s", conn, q)]++
	}
}

// txs returns the transactions recorded since op index from, each as the
// list of its operations from BEGIN to COMMIT or ROLLBACK.
func (l *wireLog) txs(from int) [][]wireOp {
	l.mu.Lock()
	defer l.mu.Unlock()
	open := map[int][]wireOp{}
	var out [][]wireOp
	for _, op := range l.ops[from:] {
		switch {
		case op.kind == "begin":
			open[op.conn] = []wireOp{op}
		case open[op.conn] == nil:
			// outside a transaction
		case op.kind == "commit" || op.kind == "rollback":
			out = append(out, append(open[op.conn], op))
			delete(open, op.conn)
		default:
			open[op.conn] = append(open[op.conn], op)
		}
	}
	return out
}

func (l *wireLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ops)
}

type wireConnector struct {
	inner *pq.Connector
	log   *wireLog
}

func (c *wireConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	c.log.mu.Lock()
	c.log.next++
	id := c.log.next
	c.log.mu.Unlock()
	return &wireConn{conn: conn, id: id, log: c.log}, nil
}

func (c *wireConnector) Driver() driver.Driver { return c.inner.Driver() }

// wireConn passes everything to lib/pq's connection and records it.
type wireConn struct {
	conn driver.Conn
	id   int
	log  *wireLog
}

func (c *wireConn) Prepare(q string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), q)
}

func (c *wireConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	c.log.add(c.id, "prepare", q)
	st, err := c.conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	return &wireStmt{st: st, c: c, sql: q}, nil
}

func (c *wireConn) Close() error { return c.conn.Close() }

func (c *wireConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *wireConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.log.add(c.id, "begin", "")
	tx, err := c.conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &wireTx{tx: tx, c: c}, nil
}

func (c *wireConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	c.log.add(c.id, "unprepared", q)
	return c.conn.(driver.QueryerContext).QueryContext(ctx, q, args)
}

func (c *wireConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	c.log.add(c.id, "unprepared", q)
	return c.conn.(driver.ExecerContext).ExecContext(ctx, q, args)
}

func (c *wireConn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.conn.(driver.NamedValueChecker).CheckNamedValue(nv)
}

func (c *wireConn) ResetSession(ctx context.Context) error {
	return c.conn.(driver.SessionResetter).ResetSession(ctx)
}

func (c *wireConn) IsValid() bool { return c.conn.(driver.Validator).IsValid() }

type wireTx struct {
	tx driver.Tx
	c  *wireConn
}

func (t *wireTx) Commit() error {
	t.c.log.add(t.c.id, "commit", "")
	return t.tx.Commit()
}

func (t *wireTx) Rollback() error {
	t.c.log.add(t.c.id, "rollback", "")
	return t.tx.Rollback()
}

type wireStmt struct {
	st  driver.Stmt
	c   *wireConn
	sql string
}

func (s *wireStmt) Close() error  { return s.st.Close() }
func (s *wireStmt) NumInput() int { return s.st.NumInput() }

func (s *wireStmt) Exec(args []driver.Value) (driver.Result, error) {
	panic("database/sql calls ExecContext")
}

func (s *wireStmt) Query(args []driver.Value) (driver.Rows, error) {
	panic("database/sql calls QueryContext")
}

func (s *wireStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.c.log.add(s.c.id, "exec", s.sql)
	return s.st.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s *wireStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.c.log.add(s.c.id, "exec", s.sql)
	return s.st.(driver.StmtQueryContext).QueryContext(ctx, args)
}

// TestCreateMessageRoundTrips counts, on the wire, the round trips of the
// transaction of Service.CreateMessage once the store's statements are
// prepared: BEGIN, the post's reads (PrefetchPost), AppendMessage with
// AppendEvents in one statement, and COMMIT; each statement prepared once
// per connection and executed without being parsed again.
func TestCreateMessageRoundTrips(t *testing.T) {
	ctx := ctxT(t)
	conn, err := pq.NewConnector(testDSN(t))
	require.NoError(t, err)
	log := &wireLog{preps: map[string]int{}}
	db := sql.OpenDB(&wireConnector{inner: conn, log: log})
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(2)
	db.SetMaxIdleConns(2)
	s, err := postgres.New(ctx, db, &postgres.Options{Schema: newSchema(t)})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	svc, err := chat.New(ctx, s, chat.Config{})
	require.NoError(t, err)
	admin, _, err := svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	_, err = svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard,
		UserIDs: []string{"u"}})
	require.NoError(t, err)
	post := func() {
		_, err := svc.CreateMessage(ctx, "u", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText,
			Data: chat.TextData("hello")})
		require.NoError(t, err)
	}
	// The first post starts preparing its statements in the background;
	// the next ones prepare them on each connection they use.
	post()
	s.WaitPrepared()
	for i := 0; i < 4; i++ {
		post()
	}

	from := log.len()
	n0 := s.StatementCount()
	const posts = 10
	for i := 0; i < posts; i++ {
		post()
	}
	require.Equal(t, int64(2*posts), s.StatementCount()-n0, "2 statements per create")
	creates := 0
	for _, tx := range log.txs(from) {
		isCreate := false
		for _, op := range tx {
			if strings.Contains(op.sql, "INSERT INTO") && strings.Contains(op.sql, ".messages") {
				isCreate = true
			}
		}
		if !isCreate {
			continue // a relay pass
		}
		creates++
		var kinds []string
		for _, op := range tx {
			if op.kind != "prepare" {
				kinds = append(kinds, op.kind)
			}
		}
		require.Equal(t, []string{"begin", "exec", "exec", "commit"}, kinds,
			"a create is BEGIN, two prepared statements and COMMIT: 4 round trips")
	}
	require.Equal(t, posts, creates)
	log.mu.Lock()
	for k, n := range log.preps {
		require.Equal(t, 1, n, "prepared once per connection: %q", k)
	}
	log.mu.Unlock()

	// With devices, the push decision's targets come with the post's
	// reads (a channel without devices costs nothing more); the presence
	// and blocks of the members whose level admits the message are read,
	// and the push batch written, by a statement each.
	_, err = svc.AddUsers(ctx, admin.UserID, "c", []string{"v", "w"})
	require.NoError(t, err)
	for _, u := range []string{"u", "v", "w"} {
		_, err = svc.RegisterDevice(ctx, u, chat.RegisterDeviceInput{UserID: u, Provider: chat.ProviderFirebase, Token: "tok-" + u})
		require.NoError(t, err)
	}
	_, err = svc.SetChannelNotifications(ctx, "w", "c", chat.NotifyNone)
	require.NoError(t, err)
	n0 = s.StatementCount()
	out, err := svc.CreateMessage(ctx, "u", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText,
		Data: chat.TextData("to the phones")})
	require.NoError(t, err)
	// The presence read runs the held-back message insert first, so the
	// events go alone: 6 statements.
	require.Equal(t, int64(6), s.StatementCount()-n0, "the post's reads, the message, presence, blocks, the push batch, the events")
	var pushed []string
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error {
		if _, err := tx.ExpandPushBatches(ctx, 0); err != nil {
			return err
		}
		ps, err := tx.ListPushes(ctx, out.Messages[0].MessageID)
		for _, p := range ps {
			pushed = append(pushed, p.UserID)
		}
		return err
	}))
	require.Equal(t, []string{"v"}, pushed, "not the author, not w (level none)")
}

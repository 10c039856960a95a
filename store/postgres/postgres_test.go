package postgres_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	"github.com/chatengine/chat/store/postgres"
)

// envDSN names the variable that points the tests at a Postgres server.
const envDSN = "CHAT_TEST_POSTGRES_URL"

const skipMsg = "Postgres tests need a server: set " + envDSN + ", for example\n" +
	"\t" + envDSN + "='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' go test -race ./store/postgres/"

// testDSN returns the test server's DSN or skips the test.
func testDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(envDSN)
	if dsn == "" {
		tb.Skip(skipMsg)
	}
	return dsn
}

// newSchema returns a fresh random schema name, dropped (with everything in
// it) when the test ends.
func newSchema(tb testing.TB) string {
	tb.Helper()
	dsn := testDSN(tb)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "chat_test_" + hex.EncodeToString(b[:])
	tb.Cleanup(func() { dropSchema(tb, dsn, schema) })
	return schema
}

var (
	adminOnce sync.Once
	adminDB   *sql.DB
	adminErr  error
)

// admin returns a small pool for test housekeeping (fixtures, DROP SCHEMA).
func admin(tb testing.TB) *sql.DB {
	tb.Helper()
	dsn := testDSN(tb)
	adminOnce.Do(func() {
		adminDB, adminErr = sql.Open("postgres", dsn)
		if adminErr == nil {
			adminDB.SetMaxOpenConns(4)
			adminErr = adminDB.Ping()
		}
	})
	require.NoError(tb, adminErr)
	return adminDB
}

func dropSchema(tb testing.TB, dsn, schema string) {
	_, err := admin(tb).Exec("DROP SCHEMA IF EXISTS " + pq.QuoteIdentifier(schema) + " CASCADE")
	if err != nil {
		tb.Errorf("drop schema %s: %v", schema, err)
	}
}

// openStore opens a store over schema and closes it when the test ends.
func openStore(tb testing.TB, schema string) *postgres.Store {
	tb.Helper()
	s, err := postgres.Open(context.Background(), testDSN(tb), &postgres.Options{Schema: schema, MaxOpenConns: 4})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// newStore returns a store over a fresh schema.
func newStore(tb testing.TB) *postgres.Store {
	tb.Helper()
	return openStore(tb, newSchema(tb))
}

// TestSkipMessage documents (and checks) how the tests are enabled.
func TestSkipMessage(t *testing.T) {
	require.Contains(t, skipMsg, envDSN+"='postgres://")
	require.Contains(t, skipMsg, "sslmode=disable")
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

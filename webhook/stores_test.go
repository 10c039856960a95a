package webhook

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/postgres"
	"github.com/chatengine/chat/store/sqlite"
	"github.com/stretchr/testify/require"
)

// postgresURLEnv names the variable holding the Postgres URL of the tests.
const postgresURLEnv = "CHAT_TEST_POSTGRES_URL"

func init() {
	extraBackends = append(extraBackends, sqliteBackend)
	if os.Getenv(postgresURLEnv) != "" {
		extraBackends = append(extraBackends, postgresBackend)
	}
}

func openSQLite(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path, nil)
	if errors.Is(err, sqlite.ErrNeedsCgo) {
		t.Skip(err.Error()) // a build without cgo has no SQLite driver
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

var sqliteBackend = backend{
	name: "sqlite",
	open: func(t testing.TB) chat.Store {
		return openSQLite(t, filepath.Join(t.TempDir(), "chat.db"))
	},
	pair: func(t testing.TB) (chat.Store, chat.Store) {
		path := filepath.Join(t.TempDir(), "chat.db")
		return openSQLite(t, path), openSQLite(t, path)
	},
}

// openPostgres opens a store on schema, dropping the schema at cleanup
// when drop is set.
func openPostgres(t testing.TB, schema string, drop bool) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), os.Getenv(postgresURLEnv), &postgres.Options{Schema: schema})
	require.NoError(t, err)
	t.Cleanup(func() {
		if drop {
			_, err := s.DB().ExecContext(context.Background(), `DROP SCHEMA "`+schema+`" CASCADE`)
			require.NoError(t, err)
		}
		_ = s.Close()
	})
	return s
}

func randomSchema() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "webhook_test_" + hex.EncodeToString(b[:])
}

var postgresBackend = backend{
	name: "postgres",
	open: func(t testing.TB) chat.Store {
		return openPostgres(t, randomSchema(), true)
	},
	pair: func(t testing.TB) (chat.Store, chat.Store) {
		schema := randomSchema()
		// Cleanups run last-in first-out: the second store closes first,
		// then the first drops the schema.
		a := openPostgres(t, schema, true)
		b := openPostgres(t, schema, false)
		return a, b
	},
}

// TestPostgresConfigured says why the Postgres runs are skipped.
func TestPostgresConfigured(t *testing.T) {
	if os.Getenv(postgresURLEnv) == "" {
		if os.Getenv("CHAT_REQUIRE_POSTGRES") != "" {
			t.Fatal("CHAT_REQUIRE_POSTGRES is set but " + postgresURLEnv + " is not: the webhook tests would not run on Postgres")
		}
		t.Skip("set " + postgresURLEnv + " (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the webhook tests and benchmarks on Postgres too")
	}
}

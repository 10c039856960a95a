package httpapi_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/internal/pgtest"
	"github.com/chatengine/chat/store/postgres"
)

// postgresStore opens a store in a fresh schema of the test database
// (skipped without one, see pgtest) and drops the schema afterwards.
func postgresStore(t *testing.T) chat.Store {
	dsn := pgtest.URL(t)
	schema := pgtest.SchemaName()
	st, err := postgres.Open(context.Background(), dsn, &postgres.Options{Schema: schema, MaxOpenConns: 4})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = st.Close()
		db, err := sql.Open("postgres", dsn)
		if err == nil {
			_, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE")
			_ = db.Close()
		}
	})
	return st
}

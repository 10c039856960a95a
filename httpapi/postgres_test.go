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

// TestAuthorizationMatrixPostgres runs the matrix's refusals on Postgres,
// where a fresh fixture per call is too slow: refused calls leave the
// store unchanged (each call checks it), so every refused call of every
// route runs on one fixture. The successes are store-independent and
// covered on the memory and SQLite stores (and the admin's by the
// Postgres API suite).
func TestAuthorizationMatrixPostgres(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the Postgres run is skipped in -short mode")
	}
	checkMatrixCoverage(t)
	m := newMatrixEnv(t, postgresStore)
	before := m.snapshot()
	refused := 0
	for _, row := range matrixRows {
		for _, caller := range matrixCallers {
			want := row.who.want(caller)
			if want == 0 {
				continue
			}
			t.Run(matrixRowName(row)+"/"+caller, func(t *testing.T) {
				m.t = t
				r := m.request(row, caller)
				requireError(t, r, want, "")
				require.Equal(t, before, m.snapshot(), "a refused call changed the store")
				refused++
			})
		}
	}
	require.Greater(t, refused, 300)
}

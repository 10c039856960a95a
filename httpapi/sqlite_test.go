package httpapi_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/sqlite"
)

func sqliteStore(t *testing.T) chat.Store {
	return sqliteStoreAt(t, filepath.Join(t.TempDir(), "chat.db"))
}

// sqliteStoreAt opens the SQLite store in the file path.
func sqliteStoreAt(t *testing.T, path string) chat.Store {
	s, err := sqlite.Open(context.Background(), path, nil)
	if errors.Is(err, sqlite.ErrNeedsCgo) {
		t.Skip(err.Error()) // a build without cgo has no SQLite driver
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestAPISQLite runs the black-box suite against the SQLite store.
func TestAPISQLite(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the SQLite run is skipped in -short mode")
	}
	runSuite(t, sqliteStore)
}

// TestAuthorizationMatrixSQLite runs the authorization matrix against the
// SQLite store. The fixture is built once; every call gets a copy of its
// database file.
func TestAuthorizationMatrixSQLite(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the SQLite run is skipped in -short mode")
	}
	dir := t.TempDir()
	tmplPath := filepath.Join(dir, "template.db")
	st, err := sqlite.Open(context.Background(), tmplPath, nil)
	require.NoError(t, err)
	tmpl := newMatrixEnv(t, func(*testing.T) chat.Store { return st })
	require.NoError(t, st.Close())
	// A read the fixture's hub still had open when the store closed keeps
	// the last commits in the write-ahead log, not in the file: SQLite
	// writes a consistent copy of everything committed.
	snap := filepath.Join(dir, "snapshot.db")
	db, err := sql.Open("sqlite3", tmplPath)
	require.NoError(t, err)
	_, err = db.Exec("VACUUM INTO ?", snap)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	raw, err := os.ReadFile(snap)
	require.NoError(t, err)
	runMatrix(t, func(t *testing.T) *matrixEnv {
		path := filepath.Join(t.TempDir(), "chat.db")
		require.NoError(t, os.WriteFile(path, raw, 0o600))
		return tmpl.reopen(t, sqliteStoreAt(t, path))
	})
}

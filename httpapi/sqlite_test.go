package httpapi_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/sqlite"
)

func sqliteStore(t *testing.T) chat.Store {
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "chat.db"), nil)
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

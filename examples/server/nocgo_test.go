//go:build !cgo

package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatengine/chat/store/sqlite"
)

// cgoEnabled reports whether this test binary was built with cgo, which the
// SQLite store needs.
const cgoEnabled = false

// TestSQLiteNeedsCgo checks that a server built without cgo refuses
// -store sqlite:PATH (and the default store, which is SQLite) with an error
// that says what to do, creating nothing, and still serves the memory store.
func TestSQLiteNeedsCgo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "chat.db")
	for _, args := range [][]string{
		{"-store", "sqlite:" + path, "migrate"},
		{"-store", "sqlite:" + path, "admin", "list"},
		{"-store", "sqlite:" + path, "-addr", "127.0.0.1:0"},
	} {
		err := run(ctx, args, envOf(nil), io.Discard, io.Discard)
		require.ErrorIs(t, err, sqlite.ErrNeedsCgo, "%v", args)
		for _, want := range []string{"-store sqlite:" + path, "without cgo", "CGO_ENABLED=1", "C compiler", "-store memory"} {
			require.ErrorContains(t, err, want, "%v", args)
		}
	}
	// The default store, sqlite:chat.db in the working directory, is
	// refused the same way, and no chat.db appears.
	require.Equal(t, "sqlite:chat.db", defaults.store)
	err := run(ctx, []string{"-addr", "127.0.0.1:0"}, envOf(nil), io.Discard, io.Discard)
	require.ErrorIs(t, err, sqlite.ErrNeedsCgo)
	_, err = os.Stat("chat.db")
	require.ErrorIs(t, err, os.ErrNotExist)
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, ents, "files left in the directory")

	s := start(t, "-store", "memory")
	code, body := s.call(t, "", "GET", "/readyz", nil)
	require.Equal(t, 200, code)
	require.Equal(t, "ok", body["status"])
	require.NoError(t, s.stop(t))
}

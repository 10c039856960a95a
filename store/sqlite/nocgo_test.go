//go:build !cgo

package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestOpenWithoutCgo checks that, in a program built without cgo, Open and
// Migrate fail with ErrNeedsCgo, whose message says what to do, and that
// Open leaves nothing behind.
func TestOpenWithoutCgo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "chat.db")
	s, err := Open(ctx, path, nil)
	require.Nil(t, s)
	require.ErrorIs(t, err, ErrNeedsCgo)
	require.Equal(t, chat.CodeUnavailable, chat.ErrorCode(err))
	require.ErrorContains(t, err, "without cgo")
	require.ErrorContains(t, err, "CGO_ENABLED=1")
	require.ErrorContains(t, err, "C compiler")
	_, statErr := os.Stat(path)
	require.ErrorIs(t, statErr, os.ErrNotExist, "Open created the database file")

	// Options are not looked at: the missing driver is the one answer.
	_, err = Open(ctx, path, &Options{Synchronous: "OFF"})
	require.ErrorIs(t, err, ErrNeedsCgo)

	// Migrate refuses before it touches the database (no driver is
	// registered without cgo, so no *sql.DB could reach one).
	require.ErrorIs(t, Migrate(ctx, nil), ErrNeedsCgo)

	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, ents, "files left in the directory")
}

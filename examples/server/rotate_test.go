package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/sqlite"
)

// TestAdminRotate: admin rotate prints a new token alone on stdout and the
// old one stops working; it revives a revoked admin; admin create with a
// taken name fails naming admin rotate and changes nothing.
func TestAdminRotate(t *testing.T) {
	t.Parallel()
	requireSQLite(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "chat.db")
	env := envOf(map[string]string{"CHAT_STORE": "sqlite:" + path})
	cmd := func(args ...string) (string, string, error) {
		var stdout, stderr bytes.Buffer
		err := run(ctx, args, env, &stdout, &stderr)
		return stdout.String(), stderr.String(), err
	}
	authenticate := func(token string) error {
		st, err := sqlite.Open(ctx, path, nil)
		require.NoError(t, err)
		defer st.Close()
		svc, err := chat.New(ctx, st, chat.Config{})
		require.NoError(t, err)
		_, err = svc.Authenticate(ctx, token)
		return err
	}

	out, _, err := cmd("admin", "create", "ops")
	require.NoError(t, err)
	old := strings.TrimSuffix(out, "\n")
	require.NoError(t, authenticate(old))

	out, _, err = cmd("admin", "create", "ops")
	require.Error(t, err)
	require.Equal(t, chat.CodeConflict, chat.ErrorCode(err))
	require.Contains(t, err.Error(), "admin rotate ops")
	require.Empty(t, out)
	require.NoError(t, authenticate(old), "a refused create changed the admin")

	out, errOut, err := cmd("admin", "rotate", "ops")
	require.NoError(t, err)
	fresh := strings.TrimSuffix(out, "\n")
	require.Regexp(t, `^chat_[A-Za-z0-9_-]{40,}$`, fresh)
	require.NotEqual(t, old, fresh)
	require.NotContains(t, errOut, fresh)
	require.NoError(t, authenticate(fresh))
	require.Equal(t, chat.CodeUnauthorized, chat.ErrorCode(authenticate(old)), "the old token still works")

	// A revoked name is reused by rotating it.
	_, _, err = cmd("admin", "revoke", "ops")
	require.NoError(t, err)
	require.Equal(t, chat.CodeUnauthorized, chat.ErrorCode(authenticate(fresh)))
	out, _, err = cmd("admin", "rotate", "ops")
	require.NoError(t, err)
	revived := strings.TrimSuffix(out, "\n")
	require.NoError(t, authenticate(revived))
	out, _, err = cmd("admin", "list")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^ops\s+ops\s+\S+\s+active$`, out)

	_, _, err = cmd("admin", "rotate", "nobody")
	require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err))
	_, _, err = cmd("admin", "rotate")
	var u usageError
	require.ErrorAs(t, err, &u)
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFirstAdminTokenFile: with -first-admin-token-file the first-start
// token goes to a new file of mode 0600 and nowhere on stderr; an existing
// file is never overwritten.
func TestFirstAdminTokenFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "admin-token")
	s := start(t, "-store", "memory", "-log-format", "json", "-first-admin-token-file", path)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	tok := strings.TrimSpace(string(raw))
	require.Regexp(t, tokenRE, tok)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.Empty(t, tokenRE.FindString(s.stderr.String()), "token printed on stderr")
	require.Contains(t, s.stderr.String(), path)
	code, _ := s.call(t, tok, "GET", "/api/v2/users", nil)
	require.Equal(t, 200, code, "the token in the file works")
	require.NoError(t, s.stop(t))

	err = run(t.Context(), []string{"-store", "memory", "-addr", "127.0.0.1:0", "-first-admin-token-file", path},
		envOf(nil), &syncBuffer{}, &syncBuffer{})
	require.ErrorContains(t, err, "first-admin-token-file")
	again, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, raw, again, "an existing file was overwritten")
}

// TestFirstStartTokenOutsideJSONLog: with -log-format json the first-start
// token is printed as plain text, never inside a JSON log record.
func TestFirstStartTokenOutsideJSONLog(t *testing.T) {
	t.Parallel()
	s := start(t, "-store", "memory", "-log-format", "json")
	tok := s.token(t)
	require.NoError(t, s.stop(t))
	records := 0
	for _, line := range strings.Split(s.stderr.String(), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		records++
		require.NotContains(t, line, tok, "token inside a log record")
	}
	require.Positive(t, records, "no JSON log records seen")
}

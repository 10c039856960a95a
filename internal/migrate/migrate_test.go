package migrate

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

// TestStoresInStep: both SQL stores hold the same numbered names, 1 to N,
// and every file's first line names it.
func TestStoresInStep(t *testing.T) {
	t.Parallel()
	var names [2][]string
	for i, dir := range []string{"../../store/sqlite", "../../store/postgres"} {
		ms, err := Load(os.DirFS(dir))
		require.NoError(t, err, dir)
		require.NotEmpty(t, ms, dir)
		for _, m := range ms {
			name := fmt.Sprintf("%04d_%s", m.Version, m.Name)
			first, _, _ := strings.Cut(m.SQL, "\n")
			require.True(t, strings.HasPrefix(first, "-- "+name+": "), "%s/migrations/%s.sql: first line %q", dir, name, first)
			names[i] = append(names[i], name)
		}
	}
	require.Equal(t, names[0], names[1], "store/sqlite/migrations and store/postgres/migrations")
}

func TestLoad(t *testing.T) {
	t.Parallel()
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	ms, err := Load(fstest.MapFS{
		"migrations/0002_b.sql": file("B"), "migrations/0001_a.sql": file("A"), "migrations/README": file("x"),
	})
	require.NoError(t, err)
	require.Equal(t, []Migration{{1, "a", "A"}, {2, "b", "B"}}, ms)

	for name, fsys := range map[string]fstest.MapFS{
		"a gap":       {"migrations/0001_a.sql": file(""), "migrations/0003_c.sql": file("")},
		"no 1":        {"migrations/0002_b.sql": file("")},
		"a repeat":    {"migrations/0001_a.sql": file(""), "migrations/1_b.sql": file(""), "migrations/0002_c.sql": file("")},
		"no name":     {"migrations/0001_.sql": file("")},
		"no number":   {"migrations/init.sql": file("")},
		"zero":        {"migrations/0000_a.sql": file("")},
		"not numeric": {"migrations/x001_a.sql": file("")},
	} {
		_, err := Load(fsys)
		require.Error(t, err, name)
	}
}

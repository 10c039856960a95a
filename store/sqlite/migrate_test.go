package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatengine/chat/internal/migrate"
)

// legacyNames are the SQLite migrations of the releases before the
// numbering shared with Postgres: version i+1 was migrations/NNNN_name.sql
// with legacyNames[i], and schema_migrations had no name column.
var legacyNames = []string{"init", "messages_author_idx", "channel_users_member_idx", "user_tokens_revoked",
	"read_markers", "event_log", "admin_panel", "audit", "mute_expiry", "search", "stream_tickets",
	"channel_search", "stream_ticket_access", "reports", "search_postings", "blocks", "devices"}

// legacyDB writes a database as those releases left it after their first
// `applied` migrations: the same statements (today's file of the same
// change), the version table of then, each row's applied_at "legacy".
func legacyDB(t *testing.T, applied int) string {
	ctx := context.Background()
	ms, err := migrations()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "chat.db")
	db, err := sql.Open("sqlite3", dsn(path, nil))
	require.NoError(t, err)
	defer db.Close()
	_, err = db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    applied_at TEXT NOT NULL
)`)
	require.NoError(t, err)
	for i, name := range legacyNames[:applied] {
		m := ms[newVersion(t, name)-1]
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		_, err = tx.ExecContext(ctx, m.SQL)
		require.NoError(t, err, name)
		_, err = tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, applied_at) VALUES (?, 'legacy')", i+1)
		require.NoError(t, err)
		require.NoError(t, tx.Commit())
	}
	return path
}

// newVersion is the version that today's migrations give the change of
// the legacy migration name.
func newVersion(t *testing.T, name string) int {
	ms, err := migrations()
	require.NoError(t, err)
	if name == "search_postings" {
		name = "message_search_index"
	}
	i := slices.IndexFunc(ms, func(m migrate.Migration) bool { return m.Name == name })
	require.GreaterOrEqual(t, i, 0, name)
	return ms[i].Version
}

// versionRows returns the rows of schema_migrations: "version name
// applied_at", with applied_at reduced to "legacy" or "new".
func versionRows(t *testing.T, db *sql.DB) []string {
	rows, err := db.Query(`SELECT version, name, CASE applied_at WHEN 'legacy' THEN 'legacy' ELSE 'new' END
		FROM schema_migrations ORDER BY version`)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v int
		var name, at string
		require.NoError(t, rows.Scan(&v, &name, &at))
		out = append(out, fmt.Sprintf("%d %s %s", v, name, at))
	}
	require.NoError(t, rows.Err())
	return out
}

// schemaOf describes the schema of db: every object's SQL, and the columns
// of schema_migrations (whose SQL differs after ALTER TABLE).
func schemaOf(t *testing.T, db *sql.DB) []string {
	var out []string
	for _, q := range []string{
		"SELECT type || ' ' || name || ': ' || coalesce(sql, '') FROM sqlite_master WHERE name <> 'schema_migrations' ORDER BY type, name",
		"SELECT name || ' ' || type || ' ' || \"notnull\" || ' ' || coalesce(dflt_value, '') || ' ' || pk FROM pragma_table_info('schema_migrations') ORDER BY name",
	} {
		rows, err := db.Query(q)
		require.NoError(t, err)
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			out = append(out, s)
		}
		require.NoError(t, rows.Err())
		rows.Close()
	}
	return out
}

// TestMigrateLegacyNumbering upgrades databases migrated under the earlier
// numbering, part of the way and all the way, from 4 connections at once:
// the records move to today's numbers, nothing recorded runs again, the
// missing migrations run once, and the schema is the one a new database
// gets.
func TestMigrateLegacyNumbering(t *testing.T) {
	t.Parallel()
	requireCgo(t)
	ctx := context.Background()
	ms, err := migrations()
	require.NoError(t, err)
	fresh, err := Open(ctx, filepath.Join(t.TempDir(), "fresh.db"), nil)
	require.NoError(t, err)
	defer fresh.Close()
	want := schemaOf(t, fresh.rdb)

	for _, applied := range []int{14, len(legacyNames)} {
		t.Run(fmt.Sprint(applied), func(t *testing.T) {
			path := legacyDB(t, applied)
			var wantRows []string
			legacy := map[int]bool{}
			for _, name := range legacyNames[:applied] {
				legacy[newVersion(t, name)] = true
			}
			for _, m := range ms {
				at := "new"
				if legacy[m.Version] {
					at = "legacy"
				}
				wantRows = append(wantRows, fmt.Sprintf("%d %s %s", m.Version, m.Name, at))
			}

			errs := make([]error, 4)
			var wg sync.WaitGroup
			for i := range errs {
				db, err := sql.Open("sqlite3", dsn(path, url.Values{"_busy_timeout": {"10000"}}))
				require.NoError(t, err)
				defer db.Close()
				wg.Go(func() { errs[i] = Migrate(ctx, db) })
			}
			wg.Wait()
			for _, err := range errs {
				require.NoError(t, err)
			}

			s, err := Open(ctx, path, nil)
			require.NoError(t, err)
			defer s.Close()
			require.Equal(t, wantRows, versionRows(t, s.rdb))
			require.Equal(t, want, schemaOf(t, s.rdb))
		})
	}
}

// TestMigrateOtherName refuses a database that records one of the
// program's versions under another name, and changes nothing.
func TestMigrateOtherName(t *testing.T) {
	t.Parallel()
	requireCgo(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "chat.db")
	s, err := Open(ctx, path, nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	db, err := sql.Open("sqlite3", dsn(path, nil))
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec("UPDATE schema_migrations SET name = 'mentions' WHERE version = 19")
	require.NoError(t, err)
	before := versionRows(t, db)
	require.ErrorContains(t, Migrate(ctx, db), `records migration 19 as "mentions", this program's is "devices"`)
	require.Equal(t, before, versionRows(t, db))
}

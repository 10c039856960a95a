package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	"github.com/chatengine/chat/internal/migrate"
	"github.com/chatengine/chat/internal/pgtest"
)

// legacyNames are the Postgres migrations of the releases before the
// numbering shared with SQLite: version i+1 was recorded with the name
// legacyNames[i].
var legacyNames = []string{"init", "row_versions", "messages_author_idx", "channel_users_member_idx",
	"user_tokens_revoked", "read_markers", "event_log", "admin_panel", "audit", "mute_expiry", "search",
	"stream_tickets", "channel_search", "stream_ticket_access", "reports", "search_tsvector", "event_relay",
	"blocks", "devices"}

// newVersion is the version that today's migrations give the change of
// the legacy migration name.
func newVersion(t *testing.T, ms []migrate.Migration, name string) int {
	if name == "search_tsvector" {
		name = "message_search_index"
	}
	i := slices.IndexFunc(ms, func(m migrate.Migration) bool { return m.Name == name })
	require.GreaterOrEqual(t, i, 0, name)
	return ms[i].Version
}

// testSchema returns a fresh schema name, dropped when the test ends.
func testSchema(t *testing.T, db *sql.DB) string {
	schema := pgtest.SchemaName()
	t.Cleanup(func() {
		if _, err := db.Exec("DROP SCHEMA IF EXISTS " + pq.QuoteIdentifier(schema) + " CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	return schema
}

// versionRows returns the rows of the schema's chat_migrations: "version
// name applied_at", with applied_at reduced to "legacy" (before 2001) or
// "new".
func versionRows(t *testing.T, db *sql.DB, schema string) []string {
	rows, err := db.Query(`SELECT version, name, CASE WHEN applied_at < '2001-01-01' THEN 'legacy' ELSE 'new' END
		FROM ` + pq.QuoteIdentifier(schema) + `.chat_migrations ORDER BY version`)
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

// schemaOf describes the tables of a schema: columns, indexes,
// constraints and triggers, with the schema's name written as "S".
func schemaOf(t *testing.T, db *sql.DB, schema string) []string {
	var out []string
	for _, q := range []string{
		`SELECT table_name || '.' || column_name || ' ' || ordinal_position || ' ' || data_type || ' ' ||
			is_nullable || ' ' || coalesce(column_default, '') FROM information_schema.columns
			WHERE table_schema = $1 ORDER BY table_name, column_name`,
		`SELECT indexname || ': ' || indexdef FROM pg_indexes WHERE schemaname = $1 ORDER BY indexname`,
		`SELECT conrelid::regclass::text || ' ' || conname || ': ' || pg_get_constraintdef(c.oid) FROM pg_constraint c
			JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = $1 ORDER BY 1`,
		`SELECT event_object_table || ' ' || trigger_name || ' ' || event_manipulation || ' ' || action_statement
			FROM information_schema.triggers WHERE trigger_schema = $1 ORDER BY 1`,
	} {
		rows, err := db.Query(q, schema)
		require.NoError(t, err)
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			out = append(out, strings.ReplaceAll(s, schema, "S"))
		}
		require.NoError(t, rows.Err())
		rows.Close()
	}
	return out
}

// TestMigrateLegacyNumbering upgrades schemas migrated under the earlier
// numbering, part of the way and all the way, from 4 connections at once:
// the records get today's names, nothing recorded runs again, the missing
// migrations run once, and the schema is the one a new schema gets.
func TestMigrateLegacyNumbering(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sql.Open("postgres", pgtest.URL(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() }) // after the cleanups below, which use db
	ms, err := migrations()
	require.NoError(t, err)
	fresh := testSchema(t, db)
	require.NoError(t, Migrate(ctx, db, fresh))
	want := schemaOf(t, db, fresh)
	require.NotEmpty(t, want)

	for _, applied := range []int{15, len(legacyNames)} {
		t.Run(fmt.Sprint(applied), func(t *testing.T) {
			schema := testSchema(t, db)
			qs := pq.QuoteIdentifier(schema)
			// The schema as those releases left it: the same statements
			// (today's file of the same change) and records.
			_, err := db.Exec("CREATE SCHEMA " + qs + "; CREATE TABLE " + qs + ".chat_migrations (version integer PRIMARY KEY," +
				" name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())")
			require.NoError(t, err)
			legacy := map[int]bool{}
			for i, name := range legacyNames[:applied] {
				v := newVersion(t, ms, name)
				legacy[v] = true
				tx, err := db.BeginTx(ctx, nil)
				require.NoError(t, err)
				for _, q := range []string{"SET LOCAL search_path TO " + qs, ms[v-1].SQL} {
					_, err = tx.Exec(q)
					require.NoError(t, err, name)
				}
				_, err = tx.Exec("INSERT INTO "+qs+".chat_migrations (version, name, applied_at) VALUES ($1, $2, '2000-01-01Z')", i+1, name)
				require.NoError(t, err)
				require.NoError(t, tx.Commit())
			}
			var wantRows []string
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
				wg.Go(func() { errs[i] = Migrate(ctx, db, schema) })
			}
			wg.Wait()
			for _, err := range errs {
				require.NoError(t, err)
			}
			require.Equal(t, wantRows, versionRows(t, db, schema))
			require.Equal(t, want, schemaOf(t, db, schema))
		})
	}
}

// TestMigrateRecords: a schema that records one of the program's versions
// under another name is refused and left as it was; one that records a
// version above the program's (migrated by a newer release) is accepted.
func TestMigrateRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sql.Open("postgres", pgtest.URL(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() }) // after the cleanups below, which use db
	schema := testSchema(t, db)
	table := pq.QuoteIdentifier(schema) + ".chat_migrations"
	require.NoError(t, Migrate(ctx, db, schema))

	_, err = db.Exec("UPDATE " + table + " SET name = 'mentions' WHERE version = 19")
	require.NoError(t, err)
	before := versionRows(t, db, schema)
	require.ErrorContains(t, Migrate(ctx, db, schema), `records migration 19 as "mentions", this program's is "devices"`)
	require.Equal(t, before, versionRows(t, db, schema))

	_, err = db.Exec("UPDATE " + table + " SET name = 'devices' WHERE version = 19")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO "+table+" (version, name) VALUES ($1, 'future')", LatestVersion()+1)
	require.NoError(t, err)
	require.NoError(t, Migrate(ctx, db, schema))
	require.Len(t, versionRows(t, db, schema), LatestVersion()+1)
}

// TestMigrateWithoutCreate: a role that may read the version table but
// create nothing migrates an up-to-date schema (nothing to do).
func TestMigrateWithoutCreate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sql.Open("postgres", pgtest.URL(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() }) // after the cleanups below, which use db
	schema := testSchema(t, db)
	require.NoError(t, Migrate(ctx, db, schema))
	role, qs := pq.QuoteIdentifier(pgtest.SchemaName()), pq.QuoteIdentifier(schema)
	_, err = db.Exec("CREATE ROLE " + role + " NOLOGIN")
	require.NoError(t, err)
	t.Cleanup(func() {
		if _, err := db.Exec("DROP OWNED BY " + role + "; DROP ROLE " + role); err != nil {
			t.Errorf("dropping role %s: %v", role, err)
		}
	})
	_, err = db.Exec("GRANT USAGE ON SCHEMA " + qs + " TO " + role + "; GRANT SELECT ON " + qs + ".chat_migrations TO " + role)
	require.NoError(t, err)

	ro, err := sql.Open("postgres", pgtest.URL(t))
	require.NoError(t, err)
	defer ro.Close()
	ro.SetMaxOpenConns(1) // the one session that SET ROLE changes
	_, err = ro.Exec("SET ROLE " + role)
	require.NoError(t, err)
	require.NoError(t, Migrate(ctx, ro, schema))
	_, err = ro.Exec("CREATE TABLE " + qs + ".t (x int)")
	require.ErrorContains(t, err, "permission denied", "the role creates nothing")
}

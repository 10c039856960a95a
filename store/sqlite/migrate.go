package sqlite

import (
	"context"
	"database/sql"
	"embed"

	"github.com/chatengine/chat/internal/migrate"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// dialect is how the migrator works on SQLite: the version table
// schema_migrations, and BEGIN IMMEDIATE, which takes the write lock
// before a migration's transaction reads the table, so that processes
// migrating one file at once take turns.
var dialect = migrate.Dialect{
	Store:   "sqlite",
	Table:   "schema_migrations",
	Prepare: prepareVersions,
	Begin:   "BEGIN IMMEDIATE",
	Param:   func(int) string { return "?" },
	Err:     translate,
	// Releases before the numbering shared with Postgres recorded
	// versions without names, numbered apart.
	Renumbered: map[migrate.Record]int{
		{Version: 1}: 1, {Version: 2}: 3, {Version: 3}: 4, {Version: 4}: 5, {Version: 5}: 6,
		{Version: 6}: 7, {Version: 7}: 8, {Version: 8}: 9, {Version: 9}: 10, {Version: 10}: 11,
		{Version: 11}: 12, {Version: 12}: 13, {Version: 13}: 14, {Version: 14}: 15,
		{Version: 15}: 16, {Version: 16}: 18, {Version: 17}: 19,
	},
}

// prepareVersions creates schema_migrations, or gives the table of an
// earlier release its name column (empty in its rows).
func prepareVersions(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    applied_at TEXT NOT NULL,
    name       TEXT NOT NULL DEFAULT ''
)`); err != nil {
		return err
	}
	var named bool
	if err := conn.QueryRowContext(ctx,
		"SELECT count(*) > 0 FROM pragma_table_info('schema_migrations') WHERE name = 'name'").Scan(&named); err != nil || named {
		return err
	}
	_, err := conn.ExecContext(ctx, "ALTER TABLE schema_migrations ADD COLUMN name TEXT NOT NULL DEFAULT ''")
	return err
}

// migrations returns the embedded migrations in version order.
func migrations() ([]migrate.Migration, error) { return migrate.Load(migrationFS) }

// Migrate brings the schema of db (a go-sqlite3 database) up to date by
// applying, in version order, every embedded migration that is not yet
// recorded in the schema_migrations table (version, name, applied_at).
// Migrations are forward-only; each runs in its own IMMEDIATE transaction
// together with the row that records it, so a crash leaves the schema at a
// whole version and several processes may call Migrate at once. A database
// whose schema is newer than this binary's migrations is refused with an
// error. Open calls Migrate. In a program built without cgo, Migrate
// returns ErrNeedsCgo.
func Migrate(ctx context.Context, db *sql.DB) error {
	if err := needsCgo(); err != nil {
		return err
	}
	ms, err := migrations()
	if err != nil {
		return err
	}
	return migrate.Run(ctx, db, dialect, ms)
}

package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"hash/fnv"
	"strconv"

	"github.com/lib/pq"

	"github.com/chatengine/chat/internal/migrate"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations returns the embedded migrations in version order.
func migrations() ([]migrate.Migration, error) { return migrate.Load(migrationFS) }

// LatestVersion is the highest migration version embedded in this package.
func LatestVersion() int {
	ms, _ := migrations()
	return len(ms)
}

// migrateLockKey is the pg_advisory_lock key that serializes migrations of
// one schema.
func migrateLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("github.com/chatengine/chat/store/postgres.migrate:"))
	h.Write([]byte(schema))
	return int64(h.Sum64())
}

// dialect is how the migrator works on the Postgres schema: its
// chat_migrations table, a session-level advisory lock for the whole run,
// and migrations that run with search_path set to the schema.
func dialect(schema string) migrate.Dialect {
	qs := pq.QuoteIdentifier(schema)
	table := qs + ".chat_migrations"
	key := migrateLockKey(schema)
	return migrate.Dialect{
		Store:     "postgres",
		Table:     table,
		Begin:     "BEGIN",
		Prelude:   "SET LOCAL search_path TO " + qs,
		Param:     func(n int) string { return "$" + strconv.Itoa(n) },
		KeepNewer: true,
		Err:       dbErr,
		// 0016 was named after its Postgres design, search_tsvector.
		Renumbered: map[migrate.Record]int{{Version: 16, Name: "search_tsvector"}: 16},
		Lock: func(ctx context.Context, conn *sql.Conn) (func() error, error) {
			if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
				return nil, err
			}
			return func() error {
				_, err := conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", key)
				if err != nil {
					// The session lock would outlive us on a pooled
					// connection: discard the connection, which
					// releases the lock.
					_ = conn.Raw(func(any) error { return driver.ErrBadConn })
				}
				return err
			}, nil
		},
		// The schema and the table are created only when missing, so a
		// role without CREATE privilege can migrate an up-to-date schema.
		Prepare: func(ctx context.Context, conn *sql.Conn) error {
			var exists bool
			if err := conn.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				if _, err := conn.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+qs); err != nil {
					return err
				}
			}
			if err := conn.QueryRowContext(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists); err != nil || exists {
				return err
			}
			_, err := conn.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+table+
				" (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())")
			return err
		},
	}
}

// Migrate brings the schema (default "public" when empty) up to the latest
// embedded migration. Migrations are forward-only: each embedded file
// migrations/NNNN_name.sql runs once, in its own transaction, and is recorded
// in the schema's chat_migrations table. Migrate holds a session-level
// pg_advisory_lock derived from the schema name while it works, so several
// processes can start at once: the first applies the migrations, the others
// wait and then find nothing to do. The schema and the version table are
// created only when missing, so a role without CREATE privilege can run
// Migrate against an up-to-date schema.
func Migrate(ctx context.Context, db *sql.DB, schema string) (err error) {
	schema, err = schemaName(schema)
	if err != nil {
		return err
	}
	ms, err := migrations()
	if err != nil {
		return err
	}
	return migrate.Run(ctx, db, dialect(schema), ms)
}

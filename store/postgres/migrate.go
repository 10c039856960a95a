package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"fmt"
	"hash/fnv"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/lib/pq"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one embedded file, migrations/NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order.
func migrations() ([]migration, error) {
	files, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, f := range files {
		base := strings.TrimSuffix(strings.TrimPrefix(f, "migrations/"), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("postgres: bad migration file name %q", f)
		}
		b, err := migrationFS.ReadFile(f)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("postgres: two migrations numbered %d", ms[i].version)
		}
	}
	return ms, nil
}

// LatestVersion is the highest migration version embedded in this package.
func LatestVersion() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// migrateLockKey is the pg_advisory_lock key that serializes migrations of
// one schema.
func migrateLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("github.com/chatengine/chat/store/postgres.migrate:"))
	h.Write([]byte(schema))
	return int64(h.Sum64())
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
	conn, err := db.Conn(ctx)
	if err != nil {
		return dbErr(err)
	}
	defer conn.Close()

	key := migrateLockKey(schema)
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
		return migrateErr("lock", err)
	}
	defer func() {
		if _, uerr := conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", key); uerr != nil {
			// The session lock would outlive us on a pooled connection:
			// discard the connection, which releases the lock.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			if err == nil {
				err = migrateErr("unlock", uerr)
			}
		}
	}()

	qs := pq.QuoteIdentifier(schema)
	table := qs + ".chat_migrations"
	var exists bool
	if err := conn.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists); err != nil {
		return migrateErr("check schema", err)
	}
	if !exists {
		if _, err := conn.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+qs); err != nil {
			return migrateErr("create schema", err)
		}
	}
	if err := conn.QueryRowContext(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists); err != nil {
		return migrateErr("check version table", err)
	}
	if !exists {
		if _, err := conn.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+table+
			" (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"); err != nil {
			return migrateErr("create version table", err)
		}
	}
	applied := map[int]bool{}
	rows, err := conn.QueryContext(ctx, "SELECT version FROM "+table)
	if err != nil {
		return migrateErr("read versions", err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return migrateErr("read versions", err)
		}
		applied[v] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return migrateErr("read versions", err)
	}

	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		if err := applyMigration(ctx, conn, qs, table, m); err != nil {
			return err
		}
	}
	return nil
}

func applyMigration(ctx context.Context, conn *sql.Conn, qs, table string, m migration) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return migrateErr("begin", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SET LOCAL search_path TO "+qs); err != nil {
		return migrateErr("set search_path", err)
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return migrateErr(fmt.Sprintf("migration %04d_%s", m.version, m.name), err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO "+table+" (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
		return migrateErr("record version", err)
	}
	if err := tx.Commit(); err != nil {
		return migrateErr("commit", err)
	}
	return nil
}

func migrateErr(step string, err error) error {
	e := dbErr(err)
	return fmt.Errorf("postgres: migrate: %s: %w", step, e)
}

package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one embedded migration file, NNNN_name.sql.
type migration struct {
	version int64
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order.
func migrations() ([]migration, error) {
	ents, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	seen := map[int64]string{}
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("sqlite: migration %s: name must start with a positive version number and _", name)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("sqlite: migrations %s and %s have the same version", prev, name)
		}
		seen[v] = name
		b, err := migrationFS.ReadFile(path.Join("migrations", name))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// Migrate brings the schema of db (a go-sqlite3 database) up to date by
// applying, in version order, every embedded migration that is not yet
// recorded in the schema_migrations table. Migrations are forward-only;
// each runs in its own IMMEDIATE transaction together with the row that
// records it, so a crash leaves the schema at a whole version and several
// processes may call Migrate at once. A database whose schema is newer than
// this binary's migrations is refused with an error. Open calls Migrate.
// In a program built without cgo, Migrate returns ErrNeedsCgo.
func Migrate(ctx context.Context, db *sql.DB) error {
	if err := needsCgo(); err != nil {
		return err
	}
	ms, err := migrations()
	if err != nil {
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return translate(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    applied_at TEXT NOT NULL
)`); err != nil {
		return translate(err)
	}
	for _, m := range ms {
		if err := applyMigration(ctx, conn, m, ms[len(ms)-1].version); err != nil {
			return err
		}
	}
	return nil
}

// applyMigration applies m unless it is already recorded.
func applyMigration(ctx context.Context, conn *sql.Conn, m migration, latest int64) (err error) {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return translate(err)
	}
	defer func() {
		if err != nil {
			_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	var maxV sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT max(version) FROM schema_migrations").Scan(&maxV); err != nil {
		return translate(err)
	}
	if maxV.Valid && maxV.Int64 > latest {
		return &chat.Error{Code: chat.CodeInternal, Message: fmt.Sprintf(
			"sqlite: the database schema is at version %d, newer than this program's %d; upgrade the program", maxV.Int64, latest)}
	}
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations WHERE version = ?", m.version).Scan(&n); err != nil {
		return translate(err)
	}
	if n > 0 {
		_, err := conn.ExecContext(ctx, "COMMIT")
		return translate(err)
	}
	if _, err := conn.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("sqlite: migration %s: %w", m.name, translate(err))
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
		m.version, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return translate(err)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return translate(err)
	}
	return nil
}

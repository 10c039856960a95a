// Package migrate applies the schema migrations of the SQL stores
// (store/sqlite and store/postgres): one migrator, given each database's
// differences as a Dialect.
//
// A store embeds its migrations as migrations/NNNN_name.sql, numbered
// 1, 2, 3... without a gap. Both stores hold the same numbered names, and a
// number means the same change in both. Migrations are forward-only; each
// runs once, in its own transaction together with the row that records it
// (version and name) in the store's version table, so a crash leaves the
// schema at a whole version. Run refuses a database that records another
// name under one of its versions.
//
// Adding a migration: give it the next number in both directories,
// store/sqlite/migrations and store/postgres/migrations, under the same
// name, with the first line "-- NNNN_name: what it does". A store that
// needs nothing for the change gets a file of comments only, saying why.
// The tests check that both directories hold the same names.
//
// Renumbering: databases record the numbers they were migrated with, so a
// migration keeps its number once released. When numbers did change, a
// store's Dialect.Renumbered maps the records of the earlier numbering to
// today's; Run rewrites those records once, before anything else.
package migrate

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Migration is one embedded file, migrations/NNNN_name.sql.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Record is a row of a version table: a version and the name it records.
type Record struct {
	Version int
	Name    string
}

// Dialect is what differs between the databases.
type Dialect struct {
	// Store prefixes error messages ("sqlite", "postgres").
	Store string
	// Table is the version table (version, name, applied_at) as
	// statements name it.
	Table string
	// Prepare creates the version table when it is missing (and brings
	// an older one up to these columns), in Run's first transaction.
	Prepare func(ctx context.Context, conn *sql.Conn) error
	// Lock, when set, is held for the whole of Run; it returns the
	// function that releases it.
	Lock func(ctx context.Context, conn *sql.Conn) (unlock func() error, err error)
	// Begin starts a transaction; Prelude, when set, runs first in a
	// migration's transaction.
	Begin, Prelude string
	// Param is the placeholder of the n-th argument (from 1).
	Param func(n int) string
	// KeepNewer accepts a database that records versions above the
	// program's (processes of the previous release keep working after an
	// upgrade); otherwise such a database is refused.
	KeepNewer bool
	// Renumbered maps the records of an earlier numbering to today's
	// versions. Renumbering may only move a record up.
	Renumbered map[Record]int
	// Err translates a database error.
	Err func(error) error
}

// Load returns the migrations of fsys (migrations/*.sql) in version order,
// checking that they are numbered 1 to N without a gap or a repeat.
func Load(fsys fs.FS) ([]Migration, error) {
	files, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, f := range files {
		base := strings.TrimSuffix(strings.TrimPrefix(f, "migrations/"), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 || name == "" {
			return nil, fmt.Errorf("migration %s: the name must be NNNN_name.sql", f)
		}
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %04d_%s: expected number %d (numbers run from 1 without a gap or a repeat)", m.Version, m.Name, i+1)
		}
	}
	return ms, nil
}

// Run brings the database up to the last of ms. It reads the version table
// in one transaction and, for each migration it does not record, begins
// another, reads the table again (another process may have applied it
// meanwhile), then applies and records the migration.
func Run(ctx context.Context, db *sql.DB, d Dialect, ms []Migration) (err error) {
	fail := func(step string, err error) error {
		return fmt.Errorf("%s: migrate: %s: %w", d.Store, step, d.Err(err))
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return fail("connect", err)
	}
	defer conn.Close()
	if d.Lock != nil {
		unlock, err := d.Lock(ctx, conn)
		if err != nil {
			return fail("lock", err)
		}
		defer func() {
			if uerr := unlock(); uerr != nil && err == nil {
				err = fail("unlock", uerr)
			}
		}()
	}
	var done map[int]bool
	if err := inTx(ctx, conn, d, func() (err error) {
		if err := d.Prepare(ctx, conn); err != nil {
			return err
		}
		done, err = records(ctx, conn, d, ms)
		return err
	}); err != nil {
		return fail("version table", err)
	}
	for _, m := range ms {
		if done[m.Version] {
			continue
		}
		step := fmt.Sprintf("migration %04d_%s", m.Version, m.Name)
		if err := inTx(ctx, conn, d, func() error {
			done, err := records(ctx, conn, d, ms)
			if err != nil || done[m.Version] {
				return err
			}
			if d.Prelude != "" {
				if _, err := conn.ExecContext(ctx, d.Prelude); err != nil {
					return err
				}
			}
			if _, err := conn.ExecContext(ctx, m.SQL); err != nil {
				return err
			}
			_, err = conn.ExecContext(ctx, "INSERT INTO "+d.Table+" (version, name, applied_at) VALUES ("+
				d.Param(1)+", "+d.Param(2)+", "+d.Param(3)+")", m.Version, m.Name, time.Now().UTC().Format(time.RFC3339Nano))
			return err
		}); err != nil {
			return fail(step, err)
		}
	}
	return nil
}

// inTx runs f in a transaction of conn.
func inTx(ctx context.Context, conn *sql.Conn, d Dialect, f func() error) error {
	if _, err := conn.ExecContext(ctx, d.Begin); err != nil {
		return err
	}
	err := f()
	if err == nil {
		_, err = conn.ExecContext(ctx, "COMMIT")
	}
	if err != nil {
		if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil {
			// Never hand a connection with an open transaction back
			// to the pool: discard it.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}
	return err
}

// records reads the version table and returns the versions it records,
// after rewriting the records of an earlier numbering. It fails when a
// record names another migration than ms does, or, unless d.KeepNewer,
// when the database is newer than ms.
func records(ctx context.Context, conn *sql.Conn, d Dialect, ms []Migration) (map[int]bool, error) {
	rows, err := conn.QueryContext(ctx, "SELECT version, name FROM "+d.Table+" ORDER BY version DESC")
	if err != nil {
		return nil, err
	}
	var recs []Record
	for rows.Next() {
		var r Record
		if err := rows.Scan(&r.Version, &r.Name); err != nil {
			rows.Close()
			return nil, err
		}
		recs = append(recs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	done := map[int]bool{}
	for _, r := range recs {
		if v, ok := d.Renumbered[r]; ok && v <= len(ms) {
			// Highest first: a record moves up into a place its
			// successor has left.
			if _, err := conn.ExecContext(ctx, "UPDATE "+d.Table+" SET version = "+d.Param(1)+", name = "+d.Param(2)+
				" WHERE version = "+d.Param(3), v, ms[v-1].Name, r.Version); err != nil {
				return nil, err
			}
			r = Record{Version: v, Name: ms[v-1].Name}
		}
		switch {
		case r.Version > len(ms) && d.KeepNewer:
		case r.Version > len(ms):
			return nil, fmt.Errorf("the database schema is at version %d, newer than this program's %d; upgrade the program", r.Version, len(ms))
		case r.Version < 1:
			return nil, fmt.Errorf("the database records a migration %d", r.Version)
		case r.Name != ms[r.Version-1].Name:
			return nil, fmt.Errorf("the database records migration %d as %q, this program's is %q", r.Version, r.Name, ms[r.Version-1].Name)
		}
		done[r.Version] = true
	}
	return done, nil
}

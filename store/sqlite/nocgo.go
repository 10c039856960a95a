//go:build !cgo

package sqlite

import "database/sql"

// The SQLite driver, github.com/mattn/go-sqlite3, is a cgo package. In a
// program built without cgo the rest of this package still compiles, so
// that programs offering several stores build with CGO_ENABLED=0, and Open
// and Migrate fail at once with ErrNeedsCgo.

// needsCgo returns ErrNeedsCgo: this program is built without cgo.
func needsCgo() error { return ErrNeedsCgo }

// translateDriver reports that err is not a driver error: without cgo no
// database is ever opened, so no driver error exists.
func translateDriver(error) (_ error, ok bool) { return nil, false }

// connInTx is never called without cgo (Open fails first); it reports an
// open transaction, the cautious answer.
func connInTx(*sql.Conn) bool { return true }

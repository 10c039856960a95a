//go:build cgo

package sqlite

import (
	"database/sql"
	"errors"

	chat "github.com/chatengine/chat"
	sqlite3 "github.com/mattn/go-sqlite3"
)

// needsCgo reports nil: this program is built with cgo, which the driver
// needs (see nocgo.go for the other case).
func needsCgo() error { return nil }

// translateDriver translates a go-sqlite3 error for translate: unique and
// primary key violations are CodeConflict, busy, locked, I/O, full and
// cannot-open errors CodeUnavailable, any other driver error CodeInternal.
// ok is false when err is not a driver error.
func translateDriver(err error) (_ error, ok bool) {
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return nil, false
	}
	switch se.Code {
	case sqlite3.ErrConstraint:
		if se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey {
			return &chat.Error{Code: chat.CodeConflict, Message: "already exists", Err: err}, true
		}
	case sqlite3.ErrBusy, sqlite3.ErrLocked, sqlite3.ErrIoErr, sqlite3.ErrFull,
		sqlite3.ErrCantOpen, sqlite3.ErrProtocol, sqlite3.ErrNoLFS, sqlite3.ErrInterrupt:
		return &chat.Error{Code: chat.CodeUnavailable, Message: "the database is unavailable; try again", Err: err}, true
	}
	return &chat.Error{Code: chat.CodeInternal, Err: err}, true
}

// connInTx reports whether the connection has an open transaction.
func connInTx(c *sql.Conn) bool {
	open := true
	_ = c.Raw(func(dc any) error {
		if sc, ok := dc.(*sqlite3.SQLiteConn); ok {
			open = !sc.AutoCommit()
		}
		return nil
	})
	return open
}

package sqlite

import (
	"context"
	"database/sql"
	"errors"

	chat "github.com/chatengine/chat"
	sqlite3 "github.com/mattn/go-sqlite3"
)

// translate is the one place where driver errors become chat errors:
// unique and primary key violations are CodeConflict, sql.ErrNoRows is
// CodeNotFound, busy, locked, I/O, full and cannot-open errors are
// CodeUnavailable, and any other driver error is CodeInternal. nil, *chat.Error
// values and context errors are returned unchanged.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var ce *chat.Error
	if errors.As(err, &ce) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) {
		return &chat.Error{Code: chat.CodeNotFound, Message: "not found", Err: err}
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code {
		case sqlite3.ErrConstraint:
			if se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey {
				return &chat.Error{Code: chat.CodeConflict, Message: "already exists", Err: err}
			}
		case sqlite3.ErrBusy, sqlite3.ErrLocked, sqlite3.ErrIoErr, sqlite3.ErrFull,
			sqlite3.ErrCantOpen, sqlite3.ErrProtocol, sqlite3.ErrNoLFS, sqlite3.ErrInterrupt:
			return &chat.Error{Code: chat.CodeUnavailable, Message: "the database is unavailable; try again", Err: err}
		}
		return &chat.Error{Code: chat.CodeInternal, Err: err}
	}
	if errors.Is(err, sql.ErrConnDone) || errors.Is(err, sql.ErrTxDone) {
		return &chat.Error{Code: chat.CodeUnavailable, Message: "the database connection is closed", Err: err}
	}
	return &chat.Error{Code: chat.CodeInternal, Err: err}
}

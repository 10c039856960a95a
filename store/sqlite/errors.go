package sqlite

import (
	"context"
	"database/sql"
	"errors"

	chat "github.com/chatengine/chat"
)

// ErrNeedsCgo is returned by Open and Migrate in a program built without
// cgo: the SQLite driver (github.com/mattn/go-sqlite3) is a cgo package, so
// the SQLite store works only in a program built with CGO_ENABLED=1 and a C
// compiler installed. errors.Is(err, ErrNeedsCgo) tells it apart from other
// chat.CodeUnavailable errors. A program built with cgo never returns it.
var ErrNeedsCgo = &chat.Error{Code: chat.CodeUnavailable, Message: "sqlite: this program was built without cgo " +
	"(CGO_ENABLED=0), and the SQLite store needs cgo: build it with CGO_ENABLED=1 and a C compiler (gcc or clang) " +
	"installed, or use another store"}

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
	if derr, ok := translateDriver(err); ok {
		return derr
	}
	if errors.Is(err, sql.ErrConnDone) || errors.Is(err, sql.ErrTxDone) {
		return &chat.Error{Code: chat.CodeUnavailable, Message: "the database connection is closed", Err: err}
	}
	return &chat.Error{Code: chat.CodeInternal, Err: err}
}

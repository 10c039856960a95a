package postgres_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/lib/pq/pqerror"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/postgres"
)

// TestErrorTranslation runs without a database: it checks the one function
// that turns driver errors into chat errors.
func TestErrorTranslation(t *testing.T) {
	t.Parallel()
	pqe := func(code string) error { return &pq.Error{Code: pqerror.Code(code), Message: "x"} }
	opErr := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	cases := []struct {
		err  error
		code chat.Code
	}{
		{sql.ErrNoRows, chat.CodeNotFound},
		{pqe("23505"), chat.CodeConflict},
		{fmt.Errorf("wrapped: %w", pqe("23505")), chat.CodeConflict},
		{pqe("40001"), chat.CodeUnavailable},
		{pqe("40P01"), chat.CodeUnavailable},
		{pqe("57P01"), chat.CodeUnavailable},
		{pqe("53300"), chat.CodeUnavailable},
		{pqe("08006"), chat.CodeUnavailable},
		{driver.ErrBadConn, chat.CodeUnavailable},
		{io.ErrUnexpectedEOF, chat.CodeUnavailable},
		{opErr, chat.CodeUnavailable},
		{context.Canceled, chat.CodeUnavailable},
		{pqe("22021"), chat.CodeBadRequest}, // character_not_in_repertoire: NUL, invalid UTF-8
		{pqe("22P05"), chat.CodeBadRequest}, // untranslatable_character
		{pqe("22P02"), chat.CodeBadRequest}, // invalid_text_representation
		{pqe("22003"), chat.CodeBadRequest}, // numeric_value_out_of_range
		{pqe("42P01"), chat.CodeInternal},
		{errors.New("something else"), chat.CodeInternal},
	}
	for _, c := range cases {
		got := postgres.DBErr(c.err)
		require.Equal(t, c.code, chat.ErrorCode(got), "%v", c.err)
		require.ErrorIs(t, got, c.err, "the driver error stays in the chain")
	}
	require.Nil(t, postgres.DBErr(nil))
	own := chat.Errorf(chat.CodeForbidden, "mine")
	require.Same(t, own, postgres.DBErr(own))
	require.ErrorIs(t, postgres.DBErr(context.Canceled), context.Canceled)
}

// TestOpenUnreachable needs no server: nothing listens on port 1.
func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := postgres.Open(ctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=5", nil)
	require.Error(t, err)
	require.Equal(t, chat.CodeUnavailable, chat.ErrorCode(err), "%v", err)
}

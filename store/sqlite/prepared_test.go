package sqlite

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// The store's statements run prepared once per connection: a second run
// of the same text prepares nothing; a text of several statements, or one
// past the bound, runs through the driver's connection as before; a call
// with too few arguments is an error, not a NULL bound in their place.
func TestStatementsPreparedOncePerConnection(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx := context.Background()
	const upd = "UPDATE meta SET value = ? WHERE key = ?"
	const sel = "SELECT value FROM meta WHERE key = ?"
	run := func() {
		t.Helper()
		require.NoError(t, s.Update(ctx, func(ctx2 chat.Tx) error {
			tx := ctx2.(*tx)
			if _, err := tx.exec(ctx, upd, "7", searchCursor); err != nil {
				return err
			}
			var v string
			if err := tx.row(ctx, sel, []any{searchCursor}, &v); err != nil {
				return err
			}
			require.Equal(t, "7", v)
			return nil
		}))
	}
	run()
	require.Contains(t, s.wconn.stmts, upd)
	require.Contains(t, s.wconn.stmts, sel)
	kept := len(s.wconn.stmts)
	updStmt := s.wconn.stmts[upd]
	run()
	require.Len(t, s.wconn.stmts, kept, "nothing prepared again")
	require.Same(t, updStmt, s.wconn.stmts[upd])

	// A read connection keeps its own.
	require.NoError(t, s.View(ctx, func(ctx2 chat.Tx) error {
		tx := ctx2.(*tx)
		var v string
		if err := tx.row(ctx, sel, []any{searchCursor}, &v); err != nil {
			return err
		}
		require.Equal(t, "7", v)
		require.Contains(t, tx.db.(*conn).stmts, sel)
		return nil
	}))

	require.NoError(t, s.Update(ctx, func(ctx2 chat.Tx) error {
		tx := ctx2.(*tx)
		// Several statements in one text: not kept, all run.
		const two = "UPDATE meta SET value = '8' WHERE key = 'search.indexed'; UPDATE meta SET value = '9' WHERE key = 'search.indexed'"
		if _, err := tx.exec(ctx, two); err != nil {
			return err
		}
		require.NotContains(t, s.wconn.stmts, two)
		var v string
		require.NoError(t, tx.row(ctx, sel, []any{searchCursor}, &v))
		require.Equal(t, "9", v)

		// Too few arguments.
		_, err := tx.exec(ctx, upd, "10")
		require.Error(t, err)
		require.NoError(t, tx.row(ctx, sel, []any{searchCursor}, &v))
		require.Equal(t, "9", v, "the failed call changed nothing")

		// Past the bound: still answered, not kept.
		for i := len(s.wconn.stmts); i < maxPrepared+3; i++ {
			var n int64
			q := fmt.Sprintf("SELECT %d", i)
			require.NoError(t, tx.row(ctx, q, nil, &n))
			require.Equal(t, int64(i), n)
		}
		require.Len(t, s.wconn.stmts, maxPrepared)
		return nil
	}))
	require.NoError(t, s.Close())
}

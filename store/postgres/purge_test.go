package postgres_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/postgres"
)

// TestPurgeBatchLocksRows: a purge batch and a read-modify-write of one
// of its messages (a flag, an edit) serialize on the message's row, in
// either order, so neither undoes the other: a purge waits for a
// transaction that locked the message (LockMessage), and a transaction
// that locks a message the purge holds waits, then sees it deleted.
func TestPurgeBatchLocksRows(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	s := openStore(t, schema)
	other, app := openNamed(t, schema, postgres.Options{MaxOpenConns: 4})
	lockFixture(t, s)
	ctx := ctxT(t)

	// A reader locks m: the purge waits, then deletes it, with the
	// reader's write kept.
	release := holdWhile(t, s, func(ctx context.Context, tx chat.Tx) error {
		m, err := tx.LockMessage(ctx, "m")
		if err != nil {
			return err
		}
		m.FlagCount = 1
		return tx.UpdateMessage(ctx, m)
	})
	purged := make(chan []*chat.Message, 1)
	go func() {
		var out []*chat.Message
		err := other.Update(ctx, func(tx chat.Tx) error {
			var err error
			out, err = tx.SoftDeleteBatch(ctx, chat.PurgeFilter{UserID: "u", Limit: 10}, t0)
			return err
		})
		if err != nil {
			t.Error(err)
		}
		purged <- out
	}()
	waitingForLock(t, app)
	select {
	case <-purged:
		t.Fatal("the purge went through a locked row")
	default:
	}
	require.NoError(t, release())
	ms := <-purged
	require.Len(t, ms, 1)
	require.True(t, ms[0].IsDeleted)
	require.Equal(t, 1, ms[0].FlagCount, "the reader's write is kept")

	// The purge holds m2: a reader waits, then sees it deleted.
	update(t, s, func(tx chat.Tx) error { return tx.CreateMessage(ctx, message("m2", "c2", "u", 1)) })
	release = holdWhile(t, s, func(ctx context.Context, tx chat.Tx) error {
		ms, err := tx.SoftDeleteBatch(ctx, chat.PurgeFilter{UserID: "u", Limit: 10}, t0)
		if err == nil && len(ms) != 1 {
			t.Errorf("the batch deleted %d messages, want 1", len(ms))
		}
		return err
	})
	seen := make(chan *chat.Message, 1)
	go func() {
		var m *chat.Message
		err := other.Update(ctx, func(tx chat.Tx) error {
			var err error
			m, err = tx.LockMessage(ctx, "m2")
			return err
		})
		if err != nil {
			t.Error(err)
		}
		seen <- m
	}()
	waitingForLock(t, app)
	select {
	case <-seen:
		t.Fatal("a read went through a row the purge holds")
	default:
	}
	require.NoError(t, release())
	m := <-seen
	require.True(t, m.IsDeleted)
	require.Empty(t, m.Data)
}

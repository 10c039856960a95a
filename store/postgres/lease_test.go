package postgres_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestLease: one process at a time holds a broker's lease; a first lease
// starts at the log's last id; Advance moves the position forward only;
// once released (or its connection gone) another process takes it and
// finds the position; another name is another lease.
func TestLease(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	schema := newSchema(t)
	a, b := openStore(t, schema), openStore(t, schema)
	require.NoError(t, a.Update(ctx, func(tx chat.Tx) error {
		return tx.AppendEvents(ctx, []*chat.Event{{Name: chat.EventUserDidUpdate, Data: []byte(`{}`)}, {Name: chat.EventUserDidUpdate, Data: []byte(`{}`)}})
	}))
	var last int64
	require.NoError(t, a.View(ctx, func(tx chat.Tx) (err error) { last, err = tx.LastEventID(ctx); return }))
	require.Positive(t, last)

	la, err := a.AcquireLease(ctx, "events")
	require.NoError(t, err)
	require.NotNil(t, la)
	lb, err := b.AcquireLease(ctx, "events")
	require.NoError(t, err)
	require.Nil(t, lb, "held by a")
	again, err := a.AcquireLease(ctx, "events")
	require.NoError(t, err)
	require.Nil(t, again, "held by a's other connection: a session lock is per connection")
	other, err := b.AcquireLease(ctx, "other")
	require.NoError(t, err)
	require.NotNil(t, other)
	require.NoError(t, other.Release())

	p, err := la.Published(ctx)
	require.NoError(t, err)
	require.Equal(t, last, p, "a first lease starts at the log's last id")
	require.NoError(t, la.Advance(ctx, last+5))
	require.NoError(t, la.Advance(ctx, last+1), "never backwards")
	p, err = la.Published(ctx)
	require.NoError(t, err)
	require.Equal(t, last+5, p)
	select {
	case <-la.Lost():
		t.Fatal("lost while held")
	default:
	}
	require.NoError(t, la.Release())
	<-la.Lost()
	require.Error(t, la.Advance(ctx, last+9), "a released lease moves nothing")

	lb, err = b.AcquireLease(ctx, "events")
	require.NoError(t, err)
	require.NotNil(t, lb, "released: b takes it")
	defer lb.Release()
	p, err = lb.Published(ctx)
	require.NoError(t, err)
	require.Equal(t, last+5, p)
}

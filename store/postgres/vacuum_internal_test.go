package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestChurnVacuum: a process that has moved churnVacuumEvery events out of
// events_pending, or expanded as many push batches, vacuums that table
// itself (autovacuum is off for both here, so the server's count of
// manual VACUUMs can only come from the store), and a VACUUM that runs
// has left none of the deleted rows behind.
func TestChurnVacuum(t *testing.T) {
	s := relayStores(t, 1)[0]
	ctx := context.Background()
	for _, table := range []string{"events_pending", "push_batches"} {
		_, err := s.db.ExecContext(ctx, `ALTER TABLE `+s.prefix+table+` SET (autovacuum_enabled = false)`)
		require.NoError(t, err)
	}
	vacuums := func(table string) (manual, dead int64) {
		// A fresh snapshot of the server's statistics each time.
		require.NoError(t, s.db.QueryRowContext(ctx, `SELECT pg_stat_get_vacuum_count(c.oid), pg_stat_get_dead_tuples(c.oid)
			FROM pg_class c WHERE c.oid = $1::regclass`, s.prefix+table).Scan(&manual, &dead))
		return manual, dead
	}

	// Events: moved by the relay after each commit, churnVacuumEvery and a
	// batch more in all.
	const batch = 1000
	for i := 0; i < churnVacuumEvery/batch+1; i++ {
		es := make([]*chat.Event, batch)
		for j := range es {
			es[j] = relayEvent("message.new")
		}
		require.NoError(t, s.Update(ctx, func(tx chat.Tx) error { return tx.AppendEvents(ctx, es) }))
	}
	var pending int
	require.NoError(t, s.db.QueryRowContext(ctx, `SELECT count(*) FROM `+s.prefix+`events_pending`).Scan(&pending))
	require.Zero(t, pending)
	require.Eventually(t, func() bool {
		m, dead := vacuums("events_pending")
		return m >= 1 && dead < batch
	}, 30*time.Second, 20*time.Millisecond, "no VACUUM of events_pending")

	// Push batches: expanded in one statement.
	m0, _ := vacuums("push_batches")
	require.Zero(t, m0)
	_, err := s.db.ExecContext(ctx, `INSERT INTO `+s.prefix+`push_batches (message_id, channel_id, title, body, user_ids, device_ids, created_at)
		SELECT 'm' || g, 'c', 't', 'b', '{u}', '{d}', now() FROM generate_series(1, $1::int) g`, churnVacuumEvery)
	require.NoError(t, err)
	var expanded int
	require.NoError(t, s.Update(ctx, func(ctx2 chat.Tx) error {
		var err error
		expanded, err = ctx2.(*tx).ExpandPushBatches(ctx, 0)
		return err
	}))
	require.Equal(t, churnVacuumEvery, expanded)
	require.Eventually(t, func() bool {
		m, dead := vacuums("push_batches")
		return m >= 1 && dead == 0
	}, 30*time.Second, 20*time.Millisecond, "no VACUUM of push_batches")
}

package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestChurnVacuum: a process vacuums events_pending itself once it has
// moved churnVacuumEvery events out of it, and push_batches once it has
// expanded as many batches; not before. Autovacuum is off for both tables
// here, so the server's count of manual VACUUMs of a table can only come
// from the store. (Which dead rows a VACUUM removes depends on the oldest
// snapshot of any session of the cluster, so that is not asserted.)
func TestChurnVacuum(t *testing.T) {
	s := relayStores(t, 1)[0]
	ctx := context.Background()
	for _, table := range []string{"events_pending", "push_batches"} {
		_, err := s.db.ExecContext(ctx, `ALTER TABLE `+s.prefix+table+` SET (autovacuum_enabled = false)`)
		require.NoError(t, err)
	}
	vacuums := func(table string) int64 {
		var n int64
		require.NoError(t, s.db.QueryRowContext(ctx, `SELECT pg_stat_get_vacuum_count($1::regclass)`,
			s.prefix+table).Scan(&n))
		return n
	}

	// counted returns the rows of table counted since the last VACUUM
	// started, and checks that none was started.
	counted := func(table string) int {
		s.churn.mu.Lock()
		defer s.churn.mu.Unlock()
		require.False(t, s.churn.running[table])
		require.Zero(t, s.churn.done[table])
		return s.churn.deleted[table]
	}

	// Events, moved by the relay after each commit: one batch short of
	// churnVacuumEvery, then two more.
	const batch = 1000
	appendBatch := func() {
		es := make([]*chat.Event, batch)
		for j := range es {
			es[j] = relayEvent("message.new")
		}
		require.NoError(t, s.Update(ctx, func(tx chat.Tx) error { return tx.AppendEvents(ctx, es) }))
	}
	for i := 0; i < churnVacuumEvery/batch-1; i++ {
		appendBatch()
	}
	require.Equal(t, churnVacuumEvery-batch, counted("events_pending"))
	require.Zero(t, vacuums("events_pending"), "vacuumed before %d rows were moved", churnVacuumEvery)
	appendBatch()
	appendBatch()
	var pending int
	require.NoError(t, s.db.QueryRowContext(ctx, `SELECT count(*) FROM `+s.prefix+`events_pending`).Scan(&pending))
	require.Zero(t, pending)
	require.Eventually(t, func() bool { return vacuums("events_pending") >= 1 },
		30*time.Second, 20*time.Millisecond, "no VACUUM of events_pending")

	// Push batches, expanded in one statement each time.
	insert := func(from, n int) {
		_, err := s.db.ExecContext(ctx, `INSERT INTO `+s.prefix+`push_batches (message_id, channel_id, title, body, user_ids, device_ids, created_at)
			SELECT 'm' || g, 'c', 't', 'b', '{u}', '{d}', now() FROM generate_series($1::int, $2::int) g`, from, from+n-1)
		require.NoError(t, err)
	}
	expand := func(want int) {
		var n int
		require.NoError(t, s.Update(ctx, func(t2 chat.Tx) error {
			var err error
			n, err = t2.(*tx).ExpandPushBatches(ctx, 0)
			return err
		}))
		require.Equal(t, want, n)
	}
	insert(1, churnVacuumEvery-1)
	expand(churnVacuumEvery - 1)
	require.Equal(t, churnVacuumEvery-1, counted("push_batches"))
	require.Zero(t, vacuums("push_batches"), "vacuumed before %d batches were expanded", churnVacuumEvery)
	insert(churnVacuumEvery, 1)
	expand(1)
	require.Eventually(t, func() bool { return vacuums("push_batches") >= 1 },
		30*time.Second, 20*time.Millisecond, "no VACUUM of push_batches")
}

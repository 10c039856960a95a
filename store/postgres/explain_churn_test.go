package postgres_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	"github.com/chatengine/chat/store/postgres"
)

// TestExplainChurnedTables checks the plans of the statements that delete
// in batches: those that empty events_pending (the relay's pass and poll)
// and push_batches (the push worker's expansion) once those tables have
// churned (100,000 rows inserted and all but a few deleted, with no vacuum
// since, the state they are in between two vacuums under load), and the
// retention deletes of events (300,000), stream tickets and finished
// pushes (50,000 each). Each deletes through its primary key, and the poll
// reads the first key from it, never scanning the table, with the custom
// and the generic plan, before the table was ever analyzed and after, and
// with the generic plan made on the empty tables; the retention deletes,
// which no plan made on empty tables serves well, run unprepared and are
// checked with the plan of each run. (How the rows to delete
// are chosen is the planner's choice: in the churned tables both ways walk
// the dead rows, which the store's own VACUUMs bound, TestChurnVacuum.)
func TestExplainChurnedTables(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a 600,000-row fixture")
	}
	s := newStore(t)
	ctx := ctxT(t)
	q := pq.QuoteIdentifier(s.Schema())
	db := admin(t)
	for _, stmt := range []string{
		`ALTER TABLE ` + q + `.events_pending SET (autovacuum_enabled = false)`,
		`ALTER TABLE ` + q + `.push_batches SET (autovacuum_enabled = false)`,
	} {
		_, err := db.ExecContext(ctx, stmt)
		require.NoError(t, err)
	}
	sqls := s.BatchDeleteQueries()
	cases := []struct {
		name, table, index string
		deletes            bool // the plan deletes from table: check that part
		args               []any
	}{ // the retention deletes, planned at each run, last
		{"relay pass", "events_pending", "events_pending_pkey", true, []any{1000, "chat_events"}},
		{"relay poll", "events_pending", "events_pending_pkey", false, nil},
		{"expand push batches", "push_batches", "push_batches_pkey", true, []any{100}},
		{"delete old events", "events", "events_pkey", true, []any{"2025-06-01T00:00:00Z", 1000}},
		{"delete expired tickets", "stream_tickets", "stream_tickets_pkey", true, []any{"2025-06-01T00:00:00Z", 1000}},
		{"delete finished pushes", "pushes", "pushes_pkey", true, []any{"2025-06-01T00:00:00Z", 1000}},
	}
	// A process prepares its statements when it starts, on empty tables,
	// and a generic plan, once made, serves every later execution on that
	// connection until something invalidates it (a vacuum or an ANALYZE
	// of the table): these generic plans are made now, on empty tables,
	// and looked at after the churn.
	early, err := db.Conn(ctx)
	require.NoError(t, err)
	defer func() {
		// The connection goes back to the shared pool as it came.
		for i := range cases {
			_, _ = early.ExecContext(context.Background(), "DEALLOCATE early"+strconv.Itoa(i))
		}
		_, _ = early.ExecContext(context.Background(), "RESET plan_cache_mode")
		early.Close()
	}()
	_, err = early.ExecContext(ctx, "SET plan_cache_mode = force_generic_plan")
	require.NoError(t, err)
	explainEarly := func(i int) planNode {
		var raw []byte
		exec := executeText(t, "early"+strconv.Itoa(i), cases[i].args)
		require.NoError(t, early.QueryRowContext(ctx, "EXPLAIN (FORMAT JSON) "+exec).Scan(&raw))
		return parsePlan(t, raw)
	}
	for i, c := range cases {
		_, err := early.ExecContext(ctx, "PREPARE early"+strconv.Itoa(i)+" AS "+sqls[c.name])
		require.NoError(t, err)
		explainEarly(i)
	}
	for _, stmt := range []string{
		`INSERT INTO ` + q + `.events_pending (name, channel_id, user_ids, data, created_at)
		SELECT 'message.new', 'c' || (g % 50), '', '\x7b7d', now() FROM generate_series(1, 100000) g`,
		`DELETE FROM ` + q + `.events_pending WHERE seq <= 99980`,
		`INSERT INTO ` + q + `.push_batches (message_id, channel_id, title, body, user_ids, device_ids, created_at)
		SELECT 'm' || g, 'c' || (g % 50), 't', 'b', '{u}', '{d}', now() + g * interval '1 millisecond'
		FROM generate_series(1, 100000) g`,
		`DELETE FROM ` + q + `.push_batches WHERE created_at < (SELECT max(created_at) FROM ` + q + `.push_batches) - interval '9 milliseconds'`,
		// Retention: live rows, those of the first half old enough.
		`INSERT INTO ` + q + `.events (id, name, channel_id, user_ids, data, created_at)
		SELECT g, 'message.new', 'c' || (g % 50), '', '\x7b7d', timestamptz '2025-01-01' + g * interval '1 minute'
		FROM generate_series(1, 300000) g`,
		`INSERT INTO ` + q + `.stream_tickets (hash, user_id, admin, expires_at)
		SELECT 'h' || g, 'u', false, timestamptz '2025-01-01' + g * interval '5 minutes' FROM generate_series(1, 50000) g`,
		`INSERT INTO ` + q + `.devices (device_id, user_id, provider, token, created_at, updated_at)
		VALUES ('d', 'u', 'fcm', 't', now(), now())`,
		`INSERT INTO ` + q + `.pushes (push_id, message_id, channel_id, user_id, device_id, title, body, state,
			next_attempt_at, created_at, updated_at)
		SELECT 'p' || g, 'm' || g, 'c', 'u', 'd', 't', 'b', 'delivered', now(), now(),
			timestamptz '2025-01-01' + g * interval '5 minutes'
		FROM generate_series(1, 50000) g`,
	} {
		_, err := db.ExecContext(ctx, stmt)
		require.NoError(t, err)
	}
	var live int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM `+q+`.push_batches`).Scan(&live))
	require.Equal(t, 10, live)

	check := func(state string) {
		for i, c := range cases {
			plans := []struct {
				kind string
				plan planNode
			}{{"generic, made before the churn", planNode{}}, {"custom", planNode{}}, {"generic", planNode{}}}
			plans[0].plan = explainEarly(i)
			plans[1].plan, plans[2].plan = explainBoth(t, ctx, db, sqls[c.name], c.args)
			switch {
			case postgres.PlannedEachRun(c.name):
				// Never prepared: planned with its arguments each time.
				plans = plans[1:2]
			case state == "analyzed":
				plans = plans[1:] // ANALYZE made the early plans anew
			}
			for _, p := range plans {
				t.Logf("%s, %s (%s plan): %s", c.name, state, p.kind, p.plan)
				plan := p.plan
				if c.deletes {
					var del *planNode
					p.plan.walk(func(n planNode) {
						if n.NodeType == "ModifyTable" && n.Relation == c.table {
							del = &n
						}
					})
					require.NotNil(t, del, "%s: no delete from %s: %s", c.name, c.table, p.plan)
					// The rows to delete, without the subquery that
					// chooses them (an InitPlan).
					plan = *del
					plan.Plans = slices.DeleteFunc(slices.Clone(plan.Plans), func(n planNode) bool {
						return n.Parent == "InitPlan" || n.Parent == "SubPlan"
					})
				}
				requireUses(t, plan, c.table, c.index)
			}
		}
	}
	check("never analyzed")
	_, err = db.ExecContext(ctx, `ANALYZE `+q+`.events_pending, `+q+`.push_batches, `+q+`.events, `+q+`.stream_tickets, `+q+`.pushes`)
	require.NoError(t, err)
	check("analyzed")
}

// requireUses checks that the plan reads table through index, wherever it
// reads the table at all, and never scans it.
func requireUses(t *testing.T, p planNode, table, index string) {
	t.Helper()
	used := false
	p.walk(func(n planNode) {
		require.False(t, n.NodeType == "Seq Scan" && n.Relation == table, "plan scans %s: %s", table, p)
		if strings.Contains(n.NodeType, "Index") && n.IndexName == index {
			used = true
		}
	})
	require.True(t, used, "plan does not use %s: %s", index, p)
}

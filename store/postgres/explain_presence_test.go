package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"
)

// TestExplainPresence builds an ANALYZE'd fixture of 100,000 users, 1 %
// of them in a grace period (50 of those lapsed), and 20,000 stream rows
// over 10 processes, and checks that the presence reads use their indexes
// and never scan users or presence_streams, with the custom plan and with
// the generic plan a reused prepared statement may switch to.
func TestExplainPresence(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a 120,000-row fixture")
	}
	s := newStore(t)
	ctx := ctxT(t)
	q := pq.QuoteIdentifier(s.Schema())
	db := admin(t)
	for _, stmt := range []string{
		`INSERT INTO ` + q + `.users (user_id, display_name, search_name, search_id, created_at, updated_at, online, offline_since)
		SELECT 'u' || g, 'u' || g, 'u' || g, 'u' || g, now(), now(), g % 100 = 0,
			CASE WHEN g % 2000 = 0 THEN timestamptz '2020-01-01' WHEN g % 100 = 0 THEN timestamptz '2030-01-01' END
		FROM generate_series(1, 100000) g`,
		`INSERT INTO ` + q + `.presence_processes (process_id, renewed_at, expires_at)
		SELECT 'p' || g, now(), timestamptz '2030-01-01' FROM generate_series(1, 10) g`,
		`INSERT INTO ` + q + `.presence_streams (user_id, process_id)
		SELECT 'u' || g, 'p' || (g % 10 + 1) FROM generate_series(1, 20000) g`,
		`ANALYZE ` + q + `.users, ` + q + `.presence_processes, ` + q + `.presence_streams`,
	} {
		_, err := db.ExecContext(ctx, stmt)
		require.NoError(t, err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	args := map[string][]any{
		"live presence":   {pq.StringArray{"u1", "u2", "u3"}, now},
		"lapsed presence": {now, 100},
	}
	index := map[string][]string{
		"live presence":   {"presence_streams_pkey"},
		"lapsed presence": {"users_offline_since_idx"},
	}
	check := func(name, kind string, raw []byte) {
		plan := parsePlan(t, raw)
		t.Logf("%s (%s plan): %s", name, kind, plan)
		used := map[string]bool{}
		plan.walk(func(n planNode) {
			if n.NodeType == "Seq Scan" {
				require.NotContains(t, []string{"users", "presence_streams"}, n.Relation, "%s (%s): %s", name, kind, plan)
			}
			if strings.HasPrefix(n.NodeType, "Index") || strings.HasPrefix(n.NodeType, "Bitmap Index") {
				used[n.IndexName] = true
			}
		})
		any := false
		for _, ix := range index[name] {
			any = any || used[ix]
		}
		require.True(t, any, "%s (%s) reads none of %v: %s", name, kind, index[name], plan)
	}
	for name, sqlText := range s.PresenceQueries() {
		var raw []byte
		require.NoError(t, db.QueryRowContext(ctx, "EXPLAIN (FORMAT JSON) "+sqlText, args[name]...).Scan(&raw), name)
		check(name, "custom", raw)
		conn, err := db.Conn(ctx)
		require.NoError(t, err)
		lits := make([]string, len(args[name]))
		for i := range lits {
			lits[i] = "NULL"
		}
		_, err = conn.ExecContext(ctx, "PREPARE presence AS "+sqlText)
		require.NoError(t, err, name)
		_, err = conn.ExecContext(ctx, "SET plan_cache_mode = force_generic_plan")
		require.NoError(t, err)
		err = conn.QueryRowContext(ctx, "EXPLAIN (FORMAT JSON) EXECUTE presence("+strings.Join(lits, ", ")+")").Scan(&raw)
		_, _ = conn.ExecContext(context.Background(), "DEALLOCATE presence; RESET plan_cache_mode")
		conn.Close()
		require.NoError(t, err, name)
		check(name, "generic", raw)
	}
}

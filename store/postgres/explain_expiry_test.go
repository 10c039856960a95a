package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"
)

// TestExplainMuteExpiry builds an ANALYZE'd fixture of 100,000 channels
// and 300,000 relations, 1 % of them muted until later and 50 of each with
// a lapsed mute, and checks that the expirer's statements read the mute
// partial indexes and never scan channels or channel_users, with the
// custom plan and with the generic plan a reused prepared statement may
// switch to.
func TestExplainMuteExpiry(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a 400,000-row fixture")
	}
	s := newStore(t)
	ctx := ctxT(t)
	q := pq.QuoteIdentifier(s.Schema())
	db := admin(t)
	for _, stmt := range []string{
		`INSERT INTO ` + q + `.channels (channel_id, type, display_name, last_activity, created_at, updated_at, mute_timeout)
		SELECT 'c' || g, 'standard', 'c' || g, now(), now(), now(),
			CASE WHEN g % 100 = 0 THEN timestamptz '2030-01-01' WHEN g % 2000 = 1 THEN timestamptz '2020-01-01' END
		FROM generate_series(1, 100000) g`,
		`INSERT INTO ` + q + `.channel_users (channel_id, user_id, membership, created_at, updated_at, mute_timeout)
		SELECT 'c' || (g % 100000 + 1), 'u' || g, 'member', now(), now(),
			CASE WHEN g % 100 = 0 THEN timestamptz '2030-01-01' WHEN g % 6000 = 1 THEN timestamptz '2020-01-01' END
		FROM generate_series(1, 300000) g`,
		`ANALYZE ` + q + `.channels, ` + q + `.channel_users`,
	} {
		_, err := db.ExecContext(ctx, stmt)
		require.NoError(t, err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	args := map[string][]any{
		"lapsed channels":        {now, 100},
		"lapsed member channels": {now, 100},
		"lapsed members":         {"c2", now, 100},
		"next mute end":          nil,
	}
	index := map[string][]string{
		"lapsed channels":        {"channels_mute_idx"},
		"lapsed member channels": {"channel_users_mute_idx"},
		"lapsed members":         {"channel_users_mute_idx", "channel_users_pkey"},
		"next mute end":          {"channels_mute_idx", "channel_users_mute_idx"},
	}
	check := func(name, kind string, raw []byte) {
		plan := parsePlan(t, raw)
		t.Logf("%s (%s plan): %s", name, kind, plan)
		used := map[string]bool{}
		plan.walk(func(n planNode) {
			if n.NodeType == "Seq Scan" {
				require.NotContains(t, []string{"channels", "channel_users"}, n.Relation, "%s (%s): %s", name, kind, plan)
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
	for name, sqlText := range s.MuteExpiryQueries() {
		var raw []byte
		require.NoError(t, db.QueryRowContext(ctx, "EXPLAIN (FORMAT JSON) "+sqlText, args[name]...).Scan(&raw), name)
		check(name, "custom", raw)
		if len(args[name]) == 0 {
			continue
		}
		conn, err := db.Conn(ctx)
		require.NoError(t, err)
		lits := make([]string, len(args[name]))
		for i := range lits {
			lits[i] = "NULL"
		}
		_, err = conn.ExecContext(ctx, "PREPARE expiry AS "+sqlText)
		require.NoError(t, err, name)
		_, err = conn.ExecContext(ctx, "SET plan_cache_mode = force_generic_plan")
		require.NoError(t, err)
		err = conn.QueryRowContext(ctx, "EXPLAIN (FORMAT JSON) EXECUTE expiry("+strings.Join(lits, ", ")+")").Scan(&raw)
		_, _ = conn.ExecContext(context.Background(), "DEALLOCATE expiry; RESET plan_cache_mode")
		conn.Close()
		require.NoError(t, err, name)
		check(name, "generic", raw)
	}
}

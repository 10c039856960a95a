package postgres_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// explainBoth returns the custom plan (unnamed statement with the actual
// values) and the generic plan (a prepared statement forced to its generic
// plan) of one statement.
func explainBoth(t *testing.T, ctx context.Context, db *sql.DB, sqlText string, args []any) (custom, generic planNode) {
	t.Helper()
	var raw []byte
	require.NoError(t, db.QueryRowContext(ctx, "EXPLAIN (FORMAT JSON) "+sqlText, args...).Scan(&raw), sqlText)
	custom = parsePlan(t, raw)
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, "PREPARE page AS "+sqlText)
	require.NoError(t, err, sqlText)
	defer func() { _, _ = conn.ExecContext(context.Background(), "DEALLOCATE page; RESET plan_cache_mode") }()
	_, err = conn.ExecContext(ctx, "SET plan_cache_mode = force_generic_plan")
	require.NoError(t, err)
	require.NoError(t, conn.QueryRowContext(ctx, "EXPLAIN (FORMAT JSON) "+executeText(t, "page", args)).Scan(&raw))
	return custom, parsePlan(t, raw)
}

// executeText returns the EXECUTE of the prepared statement name with
// args as quoted literals (EXPLAIN EXECUTE takes no bound parameters).
func executeText(t *testing.T, name string, args []any) string {
	t.Helper()
	if len(args) == 0 {
		return "EXECUTE " + name
	}
	lits := make([]string, len(args))
	for i, a := range args {
		if v, ok := a.(driver.Valuer); ok {
			dv, err := v.Value()
			require.NoError(t, err)
			a = dv
		}
		switch v := a.(type) {
		case time.Time:
			lits[i] = pq.QuoteLiteral(v.Format(time.RFC3339Nano))
		case []byte:
			lits[i] = pq.QuoteLiteral(string(v))
		default:
			lits[i] = pq.QuoteLiteral(fmt.Sprint(v))
		}
	}
	return "EXECUTE " + name + "(" + strings.Join(lits, ", ") + ")"
}

// TestExplainMemberChannels builds an ANALYZE'd fixture (20,000 channels;
// one user in 10,000 of them, one in 10, 200 others in 100 each) and checks
// that a page of a user's channels, exactly as QueryChannels builds it,
// walks channel_users_member_idx in order, with neither a sequential scan
// nor a sort, in the custom and in the generic plan. The relations are
// inserted before ANALYZE by plain SQL, so the sort key copied into them is
// the trigger's work; the test checks it against the channels too.
func TestExplainMemberChannels(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a 40,000-row fixture")
	}
	s := newStore(t)
	ctx := ctxT(t)
	q := pq.QuoteIdentifier(s.Schema())
	db := admin(t)
	for _, stmt := range []string{
		`INSERT INTO ` + q + `.channels (channel_id, type, display_name, tags, last_activity, created_at, updated_at, is_closed)
			SELECT 'ch-' || g, 'standard', 'C' || g, CASE WHEN g % 3 = 0 THEN '{third}'::text[] ELSE '{}' END,
				t, t, t, g % 50 = 0
			FROM generate_series(1, 20000) g, LATERAL (SELECT timestamptz '2024-01-01' + (g / 2) * interval '1 second' AS t) x`,
		`INSERT INTO ` + q + `.channel_users (channel_id, user_id, membership, created_at, updated_at)
			SELECT 'ch-' || g, 'big', CASE WHEN g % 7 = 0 THEN 'banned' ELSE 'member' END, now(), now()
			FROM generate_series(2, 20000, 2) g`,
		`INSERT INTO ` + q + `.channel_users (channel_id, user_id, membership, created_at, updated_at)
			SELECT 'ch-' || g, 'small', 'member', now(), now() FROM generate_series(1000, 10000, 1000) g`,
		`INSERT INTO ` + q + `.channel_users (channel_id, user_id, membership, created_at, updated_at)
			SELECT 'ch-' || (1 + (u * 97 + i * 191) % 20000), 'u' || u, 'member', now(), now()
			FROM generate_series(1, 200) u, generate_series(1, 100) i
			ON CONFLICT DO NOTHING`,
		`ANALYZE ` + q + `.channels`,
		`ANALYZE ` + q + `.channel_users`,
	} {
		_, err := db.ExecContext(ctx, stmt)
		require.NoError(t, err, stmt)
	}
	var wrong int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM `+q+`.channel_users cu JOIN `+q+`.channels c
		ON c.channel_id = cu.channel_id WHERE cu.channel_created_at IS DISTINCT FROM c.created_at`).Scan(&wrong))
	require.Zero(t, wrong, "relations whose channel_created_at is not their channel's created_at")

	cur := &chat.ChannelCursor{CreatedAt: time.Date(2024, 1, 1, 1, 0, 0, 0, time.UTC), ChannelID: "ch-7200"}
	cases := []struct {
		name string
		f    chat.ChannelFilter
	}{
		{"first page, 10,000 channels", chat.ChannelFilter{MemberOf: "big", Limit: 11}},
		{"next page, 10,000 channels", chat.ChannelFilter{MemberOf: "big", After: cur, Limit: 11}},
		{"previous page, 10,000 channels", chat.ChannelFilter{MemberOf: "big", Before: cur, Limit: 11}},
		{"closed included", chat.ChannelFilter{MemberOf: "big", IncludeClosed: true, After: cur, Limit: 11}},
		{"first page, 10 channels", chat.ChannelFilter{MemberOf: "small", Limit: 11}},
		{"first page, 100 channels", chat.ChannelFilter{MemberOf: "u7", Limit: 11}},
	}
	for _, c := range cases {
		sqlText, args := s.ChannelQuery(c.f)
		custom, generic := explainBoth(t, ctx, db, sqlText, args)
		t.Logf("%s (custom plan): %s", c.name, custom)
		t.Logf("%s (generic plan): %s", c.name, generic)
		requireIndexPlan(t, custom, "channel_users_member_idx")
		requireIndexPlan(t, generic, "channel_users_member_idx")
	}
	// With tag filters the walk may skip relations; the plans are logged.
	sqlText, args := s.ChannelQuery(chat.ChannelFilter{MemberOf: "big", Tags: []string{"third"}, ExcludeTags: []string{"x"}, After: cur, Limit: 11})
	custom, generic := explainBoth(t, ctx, db, sqlText, args)
	t.Logf("tags (custom plan): %s", custom)
	t.Logf("tags (generic plan): %s", generic)
}

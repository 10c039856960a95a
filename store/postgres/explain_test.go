package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// planNode is the part of EXPLAIN (FORMAT JSON) output the test reads.
type planNode struct {
	NodeType  string     `json:"Node Type"`
	IndexName string     `json:"Index Name"`
	Relation  string     `json:"Relation Name"`
	Parent    string     `json:"Parent Relationship"` // InitPlan, SubPlan, Outer, ...
	Plans     []planNode `json:"Plans"`
}

func (p planNode) walk(fn func(planNode)) {
	fn(p)
	for _, c := range p.Plans {
		c.walk(fn)
	}
}

func (p planNode) String() string {
	var b strings.Builder
	p.walk(func(n planNode) { fmt.Fprintf(&b, "[%s %s %s] ", n.NodeType, n.Relation, n.IndexName) })
	return b.String()
}

func parsePlan(t *testing.T, raw []byte) planNode {
	var out []struct {
		Plan planNode `json:"Plan"`
	}
	require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
	require.Len(t, out, 1)
	return out[0].Plan
}

// requireIndexPlan checks that the plan reads messages through the unique
// (channel_id, channel_segment) index and neither scans nor sorts the table.
func requireIndexPlan(t *testing.T, p planNode, index string) {
	t.Helper()
	used := false
	p.walk(func(n planNode) {
		require.NotEqual(t, "Seq Scan", n.NodeType, "plan: %s", p)
		require.NotEqual(t, "Sort", n.NodeType, "plan: %s", p)
		if strings.HasPrefix(n.NodeType, "Index") && n.IndexName == index {
			used = true
		}
	})
	require.True(t, used, "plan does not use %s: %s", index, p)
}

// TestExplainMessagePage builds a realistic, ANALYZE'd fixture (200,000
// messages in one channel and 100,000 spread over 20 others, with comments)
// and checks the plans of the message page queries, exactly as
// QueryMessages builds them, with the planner's default settings: both the
// custom plan (unnamed statement with the actual values) and the generic
// plan that a reused prepared statement may switch to.
func TestExplainMessagePage(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a 300,000-row fixture")
	}
	s := newStore(t)
	ctx := ctxT(t)
	q := pq.QuoteIdentifier(s.Schema())
	db := admin(t)
	_, err := db.ExecContext(ctx, `INSERT INTO `+q+`.messages
		(message_id, channel_id, user_id, type, data, tags, parent_id, created_at, updated_at, channel_segment)
		SELECT 'big-' || g, 'big', 'u' || (g % 100), 'text', '{"text":"hello"}', '{}',
			CASE WHEN g % 10 = 0 THEN 'big-' || (g - 5) END,
			timestamptz '2024-01-01' + g * interval '1 second', timestamptz '2024-01-01' + g * interval '1 second', g
		FROM generate_series(1, 200000) g`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO `+q+`.messages
		(message_id, channel_id, user_id, type, data, tags, created_at, updated_at, channel_segment)
		SELECT 'small-' || g, 'c' || (g % 20), 'u' || (g % 100), 'text', '{"text":"hi"}', '{}',
			timestamptz '2024-01-01' + g * interval '1 second', timestamptz '2024-01-01' + g * interval '1 second', g / 20 + 1
		FROM generate_series(1, 100000) g`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `ANALYZE `+q+`.messages`)
	require.NoError(t, err)

	cases := []struct {
		name  string
		f     chat.MessageFilter
		index string
	}{
		{"newest page", chat.MessageFilter{ChannelID: "big", Descending: true, Limit: 50}, "messages_segment_key"},
		{"page before", chat.MessageFilter{ChannelID: "big", BeforeSegment: 150000, Descending: true, Limit: 50}, "messages_segment_key"},
		{"page after", chat.MessageFilter{ChannelID: "big", AfterSegment: 1000, Limit: 50}, "messages_segment_key"},
		{"oldest page small channel", chat.MessageFilter{ChannelID: "c7", Limit: 50}, "messages_segment_key"},
		{"comments", chat.MessageFilter{ChannelID: "big", ParentID: "big-195", Limit: 50}, "messages_parent_idx"},
		{"newest of an author (slow mode)", chat.MessageFilter{ChannelID: "big", UserID: "u7", IncludeDeleted: true, Descending: true, Limit: 1}, "messages_author_idx"},
		{"author page", chat.MessageFilter{ChannelID: "big", UserID: "u7", BeforeSegment: 150000, Descending: true, Limit: 50}, "messages_author_idx"},
	}
	for _, c := range cases {
		sqlText, args := s.MessageQuery(c.f)

		var raw []byte
		require.NoError(t, db.QueryRowContext(ctx, "EXPLAIN (FORMAT JSON) "+sqlText, args...).Scan(&raw), c.name)
		plan := parsePlan(t, raw)
		t.Logf("%s (custom plan): %s", c.name, plan)
		requireIndexPlan(t, plan, c.index)

		// The generic plan, as used by a prepared statement after a few
		// executions. It is planned without the values, so EXECUTE
		// passes NULLs (EXPLAIN EXECUTE takes no bound parameters).
		conn, err := db.Conn(ctx)
		require.NoError(t, err)
		lits := make([]string, len(args))
		for i := range args {
			lits[i] = "NULL"
		}
		_, err = conn.ExecContext(ctx, "PREPARE page AS "+sqlText)
		require.NoError(t, err, c.name)
		_, err = conn.ExecContext(ctx, "SET plan_cache_mode = force_generic_plan")
		require.NoError(t, err)
		err = conn.QueryRowContext(ctx, "EXPLAIN (FORMAT JSON) EXECUTE page("+strings.Join(lits, ", ")+")").Scan(&raw)
		_, _ = conn.ExecContext(context.Background(), "DEALLOCATE page; RESET plan_cache_mode")
		conn.Close()
		require.NoError(t, err, c.name)
		plan = parsePlan(t, raw)
		t.Logf("%s (generic plan): %s", c.name, plan)
		requireIndexPlan(t, plan, c.index)
	}
}

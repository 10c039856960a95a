package postgres_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// requireReads checks that the plan reads table only through one of the
// indexes (never a Seq Scan of it) and, unless sorted is allowed, sorts
// nothing.
func requireReads(t *testing.T, p planNode, table string, sorted bool, indexes ...string) {
	t.Helper()
	used := false
	p.walk(func(n planNode) {
		if n.Relation == table {
			require.NotEqual(t, "Seq Scan", n.NodeType, "plan: %s", p)
		}
		if !sorted {
			require.NotEqual(t, "Sort", n.NodeType, "plan: %s", p)
		}
		for _, ix := range indexes {
			if strings.Contains(n.NodeType, "Index") && n.IndexName == ix {
				used = true
			}
		}
	})
	require.True(t, used, "plan does not use %v: %s", indexes, p)
}

// TestExplainAuditAndPurge builds an ANALYZE'd fixture (100,000 audit
// entries; 150,000 messages, 100,000 of them by one author) and checks
// that every filter of the audit query reads an index in the order of the
// page, and that a purge batch reads messages_user_created_idx (in one
// channel, or messages_channel_created_idx), in the custom and the
// generic plan.
func TestExplainAuditAndPurge(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a 250,000-row fixture")
	}
	s := newStore(t)
	ctx := ctxT(t)
	q := pq.QuoteIdentifier(s.Schema())
	db := admin(t)
	_, err := db.ExecContext(ctx, `INSERT INTO `+q+`.audit
		(audit_id, actor_id, action, target_type, target_id, channel_id, details, created_at)
		SELECT lpad(g::text, 10, '0'), CASE WHEN g % 50 = 0 THEN NULL ELSE 'admin' || (g % 20) END,
			(ARRAY['channel.mute','channel.banUsers','message.delete','role.put','user.globalBan'])[g % 5 + 1],
			'user', 'u' || (g % 5000), CASE WHEN g % 3 = 0 THEN NULL ELSE 'c' || (g % 200) END, '{}',
			timestamptz '2024-01-01' + g * interval '1 second'
		FROM generate_series(1, 100000) g`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO `+q+`.messages
		(message_id, channel_id, user_id, type, data, tags, created_at, updated_at, channel_segment)
		SELECT 'm' || g, 'c' || (g % 10), CASE WHEN g % 3 = 0 THEN 'u' || (g % 100) ELSE 'spammer' END, 'text',
			'{"text":"hi"}', '{}', timestamptz '2024-01-01' + g * interval '1 ms',
			timestamptz '2024-01-01' + g * interval '1 ms', g
		FROM generate_series(1, 150000) g`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `ANALYZE `+q+`.audit; ANALYZE `+q+`.messages`)
	require.NoError(t, err)

	at := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	cur := &chat.AuditCursor{CreatedAt: at, AuditID: "0000043200"}
	for _, c := range []struct {
		name    string
		f       chat.AuditFilter
		sorted  bool // a few rows (20 per target) may be sorted
		indexes []string
	}{
		{"newest", chat.AuditFilter{Limit: 11}, false, []string{"audit_created_idx"}},
		{"older page", chat.AuditFilter{After: cur, Limit: 11}, false, []string{"audit_created_idx"}},
		{"newer page", chat.AuditFilter{Before: cur, Limit: 11}, false, []string{"audit_created_idx"}},
		{"actor", chat.AuditFilter{ActorID: "admin7", After: cur, Limit: 11}, false, []string{"audit_actor_idx", "audit_created_idx"}},
		{"target", chat.AuditFilter{TargetID: "u42", Limit: 11}, true, []string{"audit_target_idx"}},
		{"target, older page", chat.AuditFilter{TargetID: "u42", After: cur, Limit: 11}, true, []string{"audit_target_idx"}},
		{"channel", chat.AuditFilter{ChannelID: "c7", Limit: 11}, false, []string{"audit_channel_idx"}},
		{"action", chat.AuditFilter{Action: "role.put", Limit: 11}, false, []string{"audit_action_idx", "audit_created_idx"}},
		{"target and action", chat.AuditFilter{TargetID: "u42", Action: "role.put", Limit: 11}, true, []string{"audit_target_idx"}},
	} {
		sqlText, args := s.AuditQuery(c.f)
		custom, generic := explainBoth(t, ctx, db, sqlText, args)
		t.Logf("audit %s: custom %s; generic %s", c.name, custom, generic)
		requireReads(t, custom, "audit", c.sorted, c.indexes...)
		requireReads(t, generic, "audit", c.sorted, c.indexes...)
	}
	for _, f := range []chat.PurgeFilter{
		{UserID: "spammer", Until: at, Limit: 500},
		{UserID: "spammer", ChannelID: "c3", Since: at.Add(-time.Hour), Until: at, Limit: 500,
			After: &chat.PurgeCursor{CreatedAt: at.Add(-time.Minute), MessageID: "m9"}},
	} {
		sqlText, args := s.PurgeQuery(f, at)
		custom, generic := explainBoth(t, ctx, db, sqlText, args)
		t.Logf("purge batch: custom %s; generic %s", custom, generic)
		// The final sort orders the (at most Limit) returned rows. In one
		// channel the search's channel/createdAt index serves as well.
		requireReads(t, custom, "messages", true, "messages_user_created_idx", "messages_channel_created_idx")
		requireReads(t, generic, "messages", true, "messages_user_created_idx", "messages_channel_created_idx")
	}
}

package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// recorder is a dbtx that records the statements a Tx method runs.
type recorder struct {
	dbtx
	stmts []recorded
}

type recorded struct {
	query string
	args  []any
}

func (r *recorder) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	r.stmts = append(r.stmts, recorded{q, args})
	return r.dbtx.ExecContext(ctx, q, args...)
}

func (r *recorder) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	r.stmts = append(r.stmts, recorded{q, args})
	return r.dbtx.QueryContext(ctx, q, args...)
}

func (r *recorder) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	r.stmts = append(r.stmts, recorded{q, args})
	return r.dbtx.QueryRowContext(ctx, q, args...)
}

// bigTables are the tables that grow with use; a plan may read them only
// through an index.
var bigTables = []string{"messages", "search_docs", "search_vocab", "user_keys", "channel_keys", "message_tags", "channels", "channel_tags", "channel_users", "users",
	"reactions", "reaction_counts", "deliveries", "delivery_attempts", "blobs", "flags", "audit"}

// TestQueryPlans runs the hot queries through the real Tx methods, records
// their SQL and checks with EXPLAIN QUERY PLAN that each one reads the big
// tables through the expected index and never scans one.
func TestQueryPlans(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx := context.Background()
	// A plain connection for EXPLAIN and for recording write statements
	// (rolled back): the store's own write connection belongs to its writer.
	db, err := sql.Open("sqlite3", dsn(s.Path(), nil))
	require.NoError(t, err)
	defer db.Close()
	db.SetMaxOpenConns(1)

	now := time.Unix(1700000000, 0)
	cur := &chat.ChannelCursor{CreatedAt: now, ChannelID: "c"}
	rcur := &chat.ReactionCursor{CreatedAt: now, ReactionID: "r"}
	cases := []struct {
		name  string
		run   func(tx chat.Tx) error
		index []string // every one must appear in the plan
	}{
		{"message page by channel and segment", func(tx chat.Tx) error {
			_, err := tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: "c", BeforeSegment: 1000, Descending: true, Limit: 50})
			return err
		}, []string{"messages_segment_idx (channel_id=? AND channel_segment<?)"}},
		{"newest message page, top level only", func(tx chat.Tx) error {
			_, err := tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: "c", TopLevel: true, Descending: true, Limit: 50})
			return err
		}, []string{"messages_segment_idx (channel_id=?)"}},
		{"message page with tags", func(tx chat.Tx) error {
			_, err := tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: "c", Tags: []string{"a"}, ExcludeTags: []string{"b"}, AfterSegment: 10, Limit: 50})
			return err
		}, []string{"messages_segment_idx (channel_id=? AND channel_segment>?)", "mt EXISTS USING PRIMARY KEY (message_id=? AND tag=?)"}},
		{"comments by parent", func(tx chat.Tx) error {
			_, err := tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: "c", ParentID: "p", Limit: 20})
			return err
		}, []string{"messages_parent_idx (parent_id=?)"}},
		{"channels newest first", func(tx chat.Tx) error {
			_, err := tx.QueryChannels(ctx, chat.ChannelFilter{After: cur, Limit: 11})
			return err
		}, []string{"channels_created_idx"}},
		{"channels of a member, first page (index order)", func(tx chat.Tx) error {
			_, err := tx.QueryChannels(ctx, chat.ChannelFilter{MemberOf: "u", Limit: 11})
			return err
		}, []string{"channel_users_member_idx (user_id=?)", "USING INDEX sqlite_autoindex_channels_1 (channel_id=?)"}},
		{"channels of a member, next page (index order)", func(tx chat.Tx) error {
			_, err := tx.QueryChannels(ctx, chat.ChannelFilter{MemberOf: "u", After: cur, Limit: 11})
			return err
		}, []string{"channel_users_member_idx (user_id=? AND (channel_created_at,channel_id)<(?,?))"}},
		{"channels of a member, previous page (index order)", func(tx chat.Tx) error {
			_, err := tx.QueryChannels(ctx, chat.ChannelFilter{MemberOf: "u", Before: cur, IncludeClosed: true, Limit: 11})
			return err
		}, []string{"channel_users_member_idx (user_id=? AND (channel_created_at,channel_id)>(?,?))"}},
		{"channels of a member with tags (index order)", func(tx chat.Tx) error {
			_, err := tx.QueryChannels(ctx, chat.ChannelFilter{MemberOf: "u", Tags: []string{"t"}, ExcludeTags: []string{"x"}, After: cur, Limit: 11})
			return err
		}, []string{"channel_users_member_idx (user_id=? AND (channel_created_at,channel_id)<(?,?))"}},
		{"channels by tag, not a member", func(tx chat.Tx) error {
			_, err := tx.QueryChannels(ctx, chat.ChannelFilter{NotMemberOf: "u", ExcludeTags: []string{"x"}, Limit: 11})
			return err
		}, []string{"channels_created_idx"}},
		{"members of a channel", func(tx chat.Tx) error {
			_, err := tx.GetChannelUsers(ctx, "c", nil)
			return err
		}, []string{"(channel_id=?)"}},
		{"memberships of a user", func(tx chat.Tx) error {
			_, err := tx.ListMemberships(ctx, "u", nil)
			return err
		}, []string{"channel_users_user_idx (user_id=?)"}},
		{"users by search prefix", func(tx chat.Tx) error {
			_, err := tx.QueryUsers(ctx, chat.UserFilter{Search: chat.SearchKey("Ab"), Limit: 11})
			return err
		}, []string{"SEARCH k USING PRIMARY KEY (key>? AND key<?)", "SEARCH u USING PRIMARY KEY (user_id=?)"}},
		{"channels by search prefix", func(tx chat.Tx) error {
			_, err := tx.QueryChannels(ctx, chat.ChannelFilter{Search: chat.SearchKey("Ab"), Limit: 11})
			return err
		}, []string{"SEARCH k USING PRIMARY KEY (key>? AND key<?)"}},
		{"channels by search prefix, next page, with tags", func(tx chat.Tx) error {
			_, err := tx.QueryChannels(ctx, chat.ChannelFilter{Search: chat.SearchKey("Ab"), Tags: []string{"t"}, After: cur, Limit: 11})
			return err
		}, []string{"SEARCH k USING PRIMARY KEY (key>? AND key<?)"}},
		{"users whose presence grace period ended", func(tx chat.Tx) error {
			_, err := tx.LapsedPresence(ctx, now, 100)
			return err
		}, []string{"users_offline_since_idx (offline_since>? AND offline_since<?)"}},
		{"live stream rows of users", func(tx chat.Tx) error {
			_, err := tx.LivePresence(ctx, []string{"a", "b"}, now)
			return err
		}, []string{"USING PRIMARY KEY (user_id=?)"}},
		{"users page", func(tx chat.Tx) error {
			_, err := tx.QueryUsers(ctx, chat.UserFilter{After: &chat.UserCursor{UserID: "u"}, Limit: 11})
			return err
		}, []string{"(user_id>?)"}},
		{"flagged users", func(tx chat.Tx) error {
			_, err := tx.QueryUsers(ctx, chat.UserFilter{Flagged: true, Limit: 11})
			return err
		}, []string{"users_flagged_idx"}},
		{"reactions by message and name", func(tx chat.Tx) error {
			_, err := tx.QueryReactions(ctx, chat.ReactionFilter{MessageID: "m", ReactionName: "like", After: rcur, Limit: 11})
			return err
		}, []string{"reactions_message_name_idx (message_id=? AND name=?"}},
		{"reactions by message", func(tx chat.Tx) error {
			_, err := tx.QueryReactions(ctx, chat.ReactionFilter{MessageID: "m", Limit: 11})
			return err
		}, []string{"reactions_message_idx (message_id=?)"}},
		{"most reacted", func(tx chat.Tx) error {
			_, err := tx.MostReacted(ctx, "like", "", 10)
			return err
		}, []string{"reaction_counts_top_idx (name=?"}},
		{"most reacted in a channel", func(tx chat.Tx) error {
			_, err := tx.MostReacted(ctx, "like", "c", 10)
			return err
		}, []string{"reaction_counts_channel_top_idx (channel_id=? AND name=?"}},
		{"due deliveries", func(tx chat.Tx) error {
			_, err := tx.ClaimDeliveries(ctx, "owner", now, time.Minute, 10, chat.DeliveryQuota{})
			return err
		}, []string{"deliveries_due_idx (next_attempt_at<?)"}},
		{"next delivery time", func(tx chat.Tx) error {
			_, _, err := tx.NextDeliveryAt(ctx)
			return err
		}, []string{"COVERING INDEX deliveries_due_idx"}},
		{"deliveries of a webhook (index order)", func(tx chat.Tx) error {
			_, err := tx.ListDeliveries(ctx, "w", "r", 10)
			return err
		}, []string{"deliveries_webhook_idx (webhook_id=?"}},
		{"messages of a user", func(tx chat.Tx) error {
			_, err := tx.SoftDeleteUserMessages(ctx, "u", now)
			return err
		}, []string{"messages_user_created_idx (user_id=?)"}},
		{"a purge batch (index order)", func(tx chat.Tx) error {
			_, err := tx.SoftDeleteBatch(ctx, chat.PurgeFilter{UserID: "u", ChannelID: "c", Since: now.Add(-time.Hour), Until: now,
				After: &chat.PurgeCursor{CreatedAt: now.Add(-time.Minute), MessageID: "m"}, Limit: 500}, now)
			return err
		}, []string{"messages_user_created_idx (user_id=? AND (created_at,message_id)>(?,?)"}},
		{"audit log (index order)", func(tx chat.Tx) error {
			_, err := tx.QueryAudit(ctx, chat.AuditFilter{After: &chat.AuditCursor{CreatedAt: now, AuditID: "a"}, Limit: 11})
			return err
		}, []string{"audit_created_idx"}},
		{"audit log of an actor (index order)", func(tx chat.Tx) error {
			_, err := tx.QueryAudit(ctx, chat.AuditFilter{ActorID: "x", After: &chat.AuditCursor{CreatedAt: now, AuditID: "a"}, Limit: 11})
			return err
		}, []string{"audit_actor_idx (actor_id=? AND"}},
		{"audit log of a target (index order)", func(tx chat.Tx) error {
			_, err := tx.QueryAudit(ctx, chat.AuditFilter{TargetID: "x", Limit: 11})
			return err
		}, []string{"audit_target_idx (target_id=?)"}},
		{"audit log of a channel (index order)", func(tx chat.Tx) error {
			_, err := tx.QueryAudit(ctx, chat.AuditFilter{ChannelID: "x", Before: &chat.AuditCursor{CreatedAt: now, AuditID: "a"}, Limit: 11})
			return err
		}, []string{"audit_channel_idx (channel_id=? AND"}},
		{"audit log of an action (index order)", func(tx chat.Tx) error {
			_, err := tx.QueryAudit(ctx, chat.AuditFilter{Action: "role.put", Limit: 11})
			return err
		}, []string{"audit_action_idx (action=?)"}},
		{"messages of a user in a channel", func(tx chat.Tx) error {
			_, err := tx.SoftDeleteMessages(ctx, "c", "u", now)
			return err
		}, []string{"messages_author_idx (channel_id=? AND user_id=?)"}},
		{"newest message of an author in a channel (slow mode)", func(tx chat.Tx) error {
			_, err := tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: "c", UserID: "u", IncludeDeleted: true, Descending: true, Limit: 1})
			return err
		}, []string{"messages_author_idx (channel_id=? AND user_id=?)"}},
		{"unread counts of a page of relations", func(tx chat.Tx) error {
			_, err := chat.UnreadCounts(ctx, tx, []*chat.ChannelUser{{ChannelID: "c", UserID: "u", ReadToSegment: 5}, {ChannelID: "d", UserID: "u"}})
			return err
		}, []string{"USING COVERING INDEX messages_author_idx (channel_id=? AND user_id=? AND channel_segment>?)",
			"USING COVERING INDEX messages_deleted_idx (channel_id=? AND channel_segment>?)",
			"USING INDEX sqlite_autoindex_channels_1 (channel_id=?)"}},
		{"blobs of a channel", func(tx chat.Tx) error {
			return tx.DeleteChannelBlobs(ctx, "c")
		}, []string{"blobs_channel_idx (channel_id=?)"}},
		{"search of every channel, common word driving (index order)", func(tx chat.Tx) error {
			return searchPlan(ctx, tx, chat.MessageSearch{Words: []string{"hello", "wor"}, Prefix: true, Limit: 21})
		}, []string{"SEARCH p USING PRIMARY KEY (word_id=?)", "SEARCH m USING INTEGER PRIMARY KEY (rowid=?)",
			"SEARCH x EXISTS USING PRIMARY KEY (word_id=? AND bucket=?)"}},
		{"search of one channel with few messages", func(tx chat.Tx) error {
			return searchPlan(ctx, tx, chat.MessageSearch{Words: []string{"hello", "wor"}, Prefix: true, ChannelID: "c", Limit: 21})
		}, []string{"SEARCH m USING INDEX messages_segment_idx (channel_id=?)", "SEARCH x EXISTS USING PRIMARY KEY (word_id=? AND bucket=?)"}},
		{"search of a member's channels with few messages, next page", func(tx chat.Tx) error {
			return searchPlan(ctx, tx, chat.MessageSearch{Words: []string{"hello"}, MemberOf: "u", Limit: 21,
				After: &chat.MessageSearchCursor{CreatedAt: now, MessageID: "m"}})
		}, []string{"SEARCH m USING INDEX messages_segment_idx (channel_id=?)", "channel_users_member_idx (user_id=?)"}},
		{"search by a prefix alone", func(tx chat.Tx) error {
			return searchPlan(ctx, tx, chat.MessageSearch{Words: []string{"wor"}, Prefix: true, Limit: 21})
		}, []string{"SEARCH m USING INTEGER PRIMARY KEY (rowid=?)", "SEARCH p USING PRIMARY KEY (word_id=?)"}},
		{"admin by token", func(tx chat.Tx) error {
			_, err := tx.GetAdminByTokenHash(ctx, []byte("h"))
			if chat.ErrorCode(err) == chat.CodeNotFound {
				return nil
			}
			return err
		}, []string{"admins_token_idx (token_hash=?)"}},
		{"lapsed mutes", func(tx chat.Tx) error {
			_, _, err := tx.LapsedMutes(ctx, now, 100)
			return err
		}, []string{"channels_mute_idx (mute_timeout<?)", "channel_users_mute_idx (mute_timeout<?)"}},
		{"next mute end", func(tx chat.Tx) error {
			_, _, err := tx.NextMuteEnd(ctx)
			return err
		}, []string{"channels_mute_idx", "channel_users_mute_idx"}},
	}
	var report strings.Builder
	for _, c := range cases {
		stx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		rec := &recorder{dbtx: stx}
		require.NoError(t, c.run(&tx{s: s, db: rec}), c.name)
		require.NotEmpty(t, rec.stmts, c.name)
		var plan []string
		for _, st := range rec.stmts {
			plan = append(plan, explain(t, stx, st)...)
		}
		require.NoError(t, stx.Rollback())
		joined := strings.Join(plan, "\n")
		fmt.Fprintf(&report, "%s:\n    %s\n", c.name, strings.Join(plan, "\n    "))
		for _, want := range c.index {
			require.Contains(t, joined, want, "%s: plan does not use %s:\n%s", c.name, want, joined)
		}
		for _, line := range plan {
			if strings.Contains(line, "TEMP B-TREE FOR ORDER BY") && (strings.Contains(c.name, "(slow mode)") || strings.Contains(c.name, "(index order)")) {
				require.Failf(t, "sort", "%s: the index does not give the order:\n%s", c.name, joined)
			}
			for _, tbl := range bigTables {
				if scansTable(line, tbl) {
					require.Failf(t, "full scan", "%s: %q scans %s:\n%s", c.name, line, tbl, joined)
				}
			}
		}
	}
	t.Logf("EXPLAIN QUERY PLAN of the hot queries:\n%s", report.String())
}

// explain returns the EXPLAIN QUERY PLAN lines of one statement.
func explain(t *testing.T, q dbtx, st recorded) []string {
	t.Helper()
	rows, err := q.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+st.query, st.args...)
	require.NoError(t, err, st.query)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &notused, &detail))
		out = append(out, detail)
	}
	require.NoError(t, rows.Err())
	return out
}

// scansTable reports whether a plan line reads table (under any alias)
// without an index: "SCAN messages" or "SCAN m" for FROM messages m.
func scansTable(line, table string) bool {
	if !strings.HasPrefix(line, "SCAN ") || strings.Contains(line, " USING ") {
		return false
	}
	name := strings.Fields(strings.TrimPrefix(line, "SCAN "))[0]
	if name == table {
		return true
	}
	// Aliases used in the adapter's SQL.
	aliases := map[string]string{"m": "messages", "c": "channels", "u": "users", "cu": "channel_users",
		"nm": "channel_users", "ct": "channel_tags", "xt": "channel_tags", "mt": "message_tags", "rc": "reaction_counts", "d": "deliveries",
		"p": "search_docs", "x": "search_docs"}
	return aliases[name] == table
}

// searchPlan stores two messages that f finds (so that the search runs
// past its word counts) and searches.
func searchPlan(ctx context.Context, ctx2 chat.Tx, f chat.MessageSearch) error {
	tx, t := ctx2, ctx2.(*tx)
	now := chat.NewTime(time.Unix(1700000000, 0))
	if err := tx.PutChannelUser(ctx, &chat.ChannelUser{ChannelID: "c", UserID: "u", Membership: chat.MembershipMember,
		CreatedAt: now, UpdatedAt: now}); err != nil {
		return err
	}
	for i, text := range []string{"hello world", "hello work"} {
		m := &chat.Message{MessageID: fmt.Sprintf("plan%d", i), ChannelID: "c", UserID: "u", Type: chat.MessageTypeText,
			Data: map[string]any{"text": text}, ChannelSegment: int64(i + 1), CreatedAt: now, UpdatedAt: now}
		if err := tx.CreateMessage(ctx, m); err != nil {
			return err
		}
		// Indexed as IndexSearch would.
		var rowid int64
		if err := t.row(ctx, "SELECT rowid FROM messages WHERE message_id = ?", []any{m.MessageID}, &rowid); err != nil {
			return err
		}
		if err := t.addPostings(ctx, []posting{{rowid, ms(now), chat.MessageWords(m)}}); err != nil {
			return err
		}
	}
	_, err := tx.SearchMessages(ctx, f)
	return err
}

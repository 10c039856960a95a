package postgres

import (
	"context"
	"database/sql"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
)

const reportCols = `report_id, reporter_id, target_type, target_id, channel_id, reason, note, state,
	resolution_action, resolution_actor, resolution_channel, created_at, resolved_at`

func scanReport(sc scanner) (*chat.Report, error) {
	var (
		r                         chat.Report
		channel, action, actor, c sql.NullString
		created                   time.Time
		resolved                  sql.NullTime
	)
	if err := sc.Scan(&r.ReportID, &r.ReporterID, &r.TargetType, &r.TargetID, &channel, &r.Reason, &r.Note, &r.State,
		&action, &actor, &c, &created, &resolved); err != nil {
		return nil, err
	}
	r.ChannelID = channel.String
	if action.Valid {
		r.Resolution = &chat.ReportResolution{Action: action.String, ActorID: actor.String, ChannelID: c.String}
	}
	r.CreatedAt = ct(created)
	r.ResolvedAt = ctp(resolved)
	return &r, nil
}

func (t *tx) reports(ctx context.Context, tmpl string, args ...any) ([]*chat.Report, error) {
	var out []*chat.Report
	err := t.query(ctx, tmpl, args, func(r *sql.Rows) error {
		x, err := scanReport(r)
		if err == nil {
			out = append(out, x)
		}
		return err
	})
	return out, err
}

// resolutionArgs returns the resolution columns of r.
func resolutionArgs(r *chat.Report) (action, actor, channel any) {
	if r.Resolution == nil {
		return nil, nil, nil
	}
	return r.Resolution.Action, nullString(r.Resolution.ActorID), nullString(r.Resolution.ChannelID)
}

func nullTimeArg(t *chat.Time) any {
	if t == nil {
		return nil
	}
	return msTime(t.Time)
}

// CreateReport implements chat.ReportStore; reports_open_key refuses a
// second open report of one reporter and target (CodeConflict).
func (t *tx) CreateReport(ctx context.Context, r *chat.Report) error {
	action, actor, channel := resolutionArgs(r)
	_, err := t.exec(ctx, `INSERT INTO {s}reports (`+reportCols+`) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13)`,
		r.ReportID, r.ReporterID, r.TargetType, r.TargetID, nullString(r.ChannelID), r.Reason, r.Note, r.State,
		action, actor, channel, msTime(r.CreatedAt.Time), nullTimeArg(r.ResolvedAt))
	return err
}

// GetReport implements chat.ReportStore, without a lock.
func (t *tx) GetReport(ctx context.Context, reportID string) (*chat.Report, error) {
	return t.report(ctx, `SELECT `+reportCols+` FROM {s}reports WHERE report_id = $1`, reportID)
}

// LockReport implements chat.LockStore: in an Update the row is held (FOR
// NO KEY UPDATE), so that of two transactions resolving one report the
// second reads it as the first left it.
func (t *tx) LockReport(ctx context.Context, reportID string) (*chat.Report, error) {
	return t.report(ctx, `SELECT `+reportCols+` FROM {s}reports WHERE report_id = $1`+t.lockRows(), reportID)
}

func (t *tx) report(ctx context.Context, tmpl, reportID string) (*chat.Report, error) {
	rs, err := t.reports(ctx, tmpl, reportID)
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, chat.Errorf(chat.CodeNotFound, "report %q not found", reportID)
	}
	return rs[0], nil
}

// UpdateReport implements chat.ReportStore.
func (t *tx) UpdateReport(ctx context.Context, r *chat.Report) error {
	action, actor, channel := resolutionArgs(r)
	n, err := t.exec(ctx, `UPDATE {s}reports SET note = $2, state = $3, resolution_action = $4, resolution_actor = $5,
		resolution_channel = $6, resolved_at = $7 WHERE report_id = $1`,
		r.ReportID, r.Note, r.State, action, actor, channel, nullTimeArg(r.ResolvedAt))
	if err != nil {
		return err
	}
	if n == 0 {
		return chat.Errorf(chat.CodeNotFound, "report %q not found", r.ReportID)
	}
	return nil
}

// QueryReports implements chat.ReportStore. The state and reporter
// filters are equalities on the leading column of their indexes, whose
// (created_at, report_id) order is the keyset.
func (t *tx) QueryReports(ctx context.Context, f chat.ReportFilter) ([]*chat.Report, error) {
	var args argList
	var where []string
	for _, c := range []struct{ col, v string }{{"state", f.State}, {"target_type", f.TargetType}, {"reporter_id", f.ReporterID}} {
		if c.v != "" {
			where = append(where, c.col+" = "+args.add(c.v))
		}
	}
	order := " ORDER BY created_at DESC, report_id DESC"
	if c := f.After; c != nil {
		where = append(where, "(created_at, report_id) < ("+args.add(msTime(c.CreatedAt))+", "+args.add(c.ReportID)+")")
	}
	if c := f.Before; c != nil {
		where = append(where, "(created_at, report_id) > ("+args.add(msTime(c.CreatedAt))+", "+args.add(c.ReportID)+")")
		order = " ORDER BY created_at, report_id"
	}
	q := `SELECT ` + reportCols + ` FROM {s}reports`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += order + limitOffset(&args, f.Limit, 0)
	return t.reports(ctx, q, args...)
}

// UserMessages implements chat.UserDataStore: a range of
// messages_user_created_idx after the cursor (absent, -infinity, so the
// statement text is always the same).
func (t *tx) UserMessages(ctx context.Context, userID string, after *chat.PurgeCursor, limit int) ([]*chat.Message, error) {
	afterAt, afterID := "-infinity", ""
	if after != nil {
		afterAt, afterID = timeText(after.CreatedAt), after.MessageID
	}
	return t.messages(ctx, `SELECT `+messageCols+` FROM {s}messages
		WHERE user_id = $1 AND (created_at, message_id) > ($2::timestamptz, $3::text COLLATE "C")
		ORDER BY created_at, message_id
		LIMIT CASE WHEN $4::int < 0 THEN NULL ELSE $4::int END`, userID, afterAt, afterID, limitOrAll(limit))
}

// UserReactions implements chat.UserDataStore: a range of the unique
// index on (user_id, message_id, name).
func (t *tx) UserReactions(ctx context.Context, userID string, after *chat.UserReactionCursor, limit int) ([]*chat.Reaction, error) {
	afterMsg, afterName := "", ""
	if after != nil {
		afterMsg, afterName = after.MessageID, after.ReactionName
	}
	return t.reactions(ctx, `SELECT `+reactionCols+` FROM {s}reactions
		WHERE user_id = $1 AND (message_id, name) > ($2::text COLLATE "C", $3::text COLLATE "C")
		ORDER BY message_id, name
		LIMIT CASE WHEN $4::int < 0 THEN NULL ELSE $4::int END`, userID, afterMsg, afterName, limitOrAll(limit))
}

// limitOrAll is a LIMIT argument: -1 (no limit) when limit <= 0.
func limitOrAll(limit int) int {
	if limit <= 0 {
		return -1
	}
	return limit
}

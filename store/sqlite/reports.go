package sqlite

import (
	"context"
	"database/sql"
	"strings"

	chat "github.com/chatengine/chat"
)

const reportCols = `report_id, reporter_id, target_type, target_id, channel_id, reason, note, state,
	resolution_action, resolution_actor, resolution_channel, created_at, resolved_at`

func scanReport(sc scanner) (*chat.Report, error) {
	var (
		r                         chat.Report
		channel, action, actor, c sql.NullString
		created                   int64
		resolved                  sql.NullInt64
	)
	if err := sc.Scan(&r.ReportID, &r.ReporterID, &r.TargetType, &r.TargetID, &channel, &r.Reason, &r.Note, &r.State,
		&action, &actor, &c, &created, &resolved); err != nil {
		return nil, err
	}
	r.ChannelID = channel.String
	if action.Valid {
		r.Resolution = &chat.ReportResolution{Action: action.String, ActorID: actor.String, ChannelID: c.String}
	}
	r.CreatedAt = fromMs(created)
	r.ResolvedAt = fromMsp(resolved)
	return &r, nil
}

// resolutionArgs returns the resolution columns of r.
func resolutionArgs(r *chat.Report) (action, actor, channel any) {
	if r.Resolution == nil {
		return nil, nil, nil
	}
	return r.Resolution.Action, nullText(r.Resolution.ActorID), nullText(r.Resolution.ChannelID)
}

// CreateReport implements chat.ReportStore; reports_open_key refuses a
// second open report of one reporter and target (CodeConflict).
func (t *tx) CreateReport(ctx context.Context, r *chat.Report) error {
	action, actor, channel := resolutionArgs(r)
	_, err := t.exec(ctx, `INSERT INTO reports (`+reportCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		r.ReportID, r.ReporterID, r.TargetType, r.TargetID, nullText(r.ChannelID), r.Reason, r.Note, r.State,
		action, actor, channel, ms(r.CreatedAt), msp(r.ResolvedAt))
	return err
}

// GetReport implements chat.ReportStore.
func (t *tx) GetReport(ctx context.Context, reportID string) (*chat.Report, error) {
	rs, err := list(t, ctx, scanReport, `SELECT `+reportCols+` FROM reports WHERE report_id = ?`, reportID)
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, notFound("report", reportID)
	}
	return rs[0], nil
}

// UpdateReport implements chat.ReportStore.
func (t *tx) UpdateReport(ctx context.Context, r *chat.Report) error {
	action, actor, channel := resolutionArgs(r)
	n, err := t.execN(ctx, `UPDATE reports SET note = ?, state = ?, resolution_action = ?, resolution_actor = ?,
		resolution_channel = ?, resolved_at = ? WHERE report_id = ?`,
		r.Note, r.State, action, actor, channel, msp(r.ResolvedAt), r.ReportID)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("report", r.ReportID)
	}
	return nil
}

// QueryReports implements chat.ReportStore. The state and reporter
// filters are equalities on the leading column of their indexes, whose
// (created_at, report_id) order is the keyset.
func (t *tx) QueryReports(ctx context.Context, f chat.ReportFilter) ([]*chat.Report, error) {
	var q strings.Builder
	var args []any
	q.WriteString(`SELECT ` + reportCols + ` FROM reports WHERE 1`)
	for _, c := range []struct{ col, v string }{{"state", f.State}, {"target_type", f.TargetType}, {"reporter_id", f.ReporterID}} {
		if c.v != "" {
			q.WriteString(" AND " + c.col + " = ?")
			args = append(args, c.v)
		}
	}
	order := " ORDER BY created_at DESC, report_id DESC"
	if c := f.After; c != nil {
		q.WriteString(" AND (created_at, report_id) < (?, ?)")
		args = append(args, ms(chat.NewTime(c.CreatedAt)), c.ReportID)
	}
	if c := f.Before; c != nil {
		q.WriteString(" AND (created_at, report_id) > (?, ?)")
		args = append(args, ms(chat.NewTime(c.CreatedAt)), c.ReportID)
		order = " ORDER BY created_at, report_id"
	}
	q.WriteString(order + " LIMIT " + limitParam)
	args = append(args, limitArg(f.Limit))
	return list(t, ctx, scanReport, q.String(), args...)
}

// UserMessages implements chat.UserDataStore: a range of
// messages_user_created_idx after the cursor (absent, the lowest
// position, so the statement text is always the same).
func (t *tx) UserMessages(ctx context.Context, userID string, after *chat.PurgeCursor, limit int) ([]*chat.Message, error) {
	afterAt, afterID := int64(-1<<63), ""
	if after != nil {
		afterAt, afterID = ms(chat.NewTime(after.CreatedAt)), after.MessageID
	}
	row := newMessageRow(limit)
	return list(t, ctx, row.scan, `SELECT `+messageCols+` FROM messages m INDEXED BY messages_user_created_idx
		WHERE m.user_id = ? AND (m.created_at, m.message_id) > (?, ?)
		ORDER BY m.created_at, m.message_id LIMIT `+limitParam,
		userID, afterAt, afterID, limitArg(limit))
}

// UserReactions implements chat.UserDataStore: a range of the unique
// index on (user_id, message_id, name).
func (t *tx) UserReactions(ctx context.Context, userID string, after *chat.UserReactionCursor, limit int) ([]*chat.Reaction, error) {
	afterMsg, afterName := "", ""
	if after != nil {
		afterMsg, afterName = after.MessageID, after.ReactionName
	}
	return list(t, ctx, scanReaction, `SELECT `+reactionCols+` FROM reactions
		WHERE user_id = ? AND (message_id, name) > (?, ?) ORDER BY message_id, name LIMIT `+limitParam,
		userID, afterMsg, afterName, limitArg(limit))
}

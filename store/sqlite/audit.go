package sqlite

import (
	"context"
	"database/sql"
	"math"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
)

func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// AppendAudit implements chat.AuditStore.
func (t *tx) AppendAudit(ctx context.Context, es []*chat.AuditEntry) error {
	for _, e := range es {
		d := e.Details
		if d == nil {
			d = map[string]any{}
		}
		details, err := jsonText(d)
		if err != nil {
			return err
		}
		if _, err := t.exec(ctx, `INSERT INTO audit (audit_id, actor_id, action, target_type, target_id, channel_id, details, created_at)
			VALUES (?,?,?,?,?,?,?,?)`, e.AuditID, nullText(e.ActorID), e.Action, e.TargetType, e.TargetID,
			nullText(e.ChannelID), details, ms(e.CreatedAt)); err != nil {
			return err
		}
	}
	return nil
}

// SetAuditDetails implements chat.AuditStore.
func (t *tx) SetAuditDetails(ctx context.Context, auditID string, details map[string]any) error {
	if details == nil {
		details = map[string]any{}
	}
	d, err := jsonText(details)
	if err != nil {
		return err
	}
	n, err := t.execN(ctx, `UPDATE audit SET details = ? WHERE audit_id = ?`, d, auditID)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("audit entry", auditID)
	}
	return nil
}

func scanAudit(sc scanner) (*chat.AuditEntry, error) {
	var (
		e              chat.AuditEntry
		actor, channel sql.NullString
		details        string
		created        int64
	)
	if err := sc.Scan(&e.AuditID, &actor, &e.Action, &e.TargetType, &e.TargetID, &channel, &details, &created); err != nil {
		return nil, err
	}
	if err := fromJSON(details, &e.Details); err != nil {
		return nil, err
	}
	e.ActorID, e.ChannelID = actor.String, channel.String
	e.CreatedAt = fromMs(created)
	return &e, nil
}

// QueryAudit implements chat.AuditStore. Each filter is an equality on
// the leading column of its index (audit_actor_idx, audit_target_idx,
// audit_channel_idx, audit_action_idx), whose (created_at, audit_id)
// order is the keyset; the planner picks one and checks the others.
func (t *tx) QueryAudit(ctx context.Context, f chat.AuditFilter) ([]*chat.AuditEntry, error) {
	var q strings.Builder
	var args []any
	q.WriteString(`SELECT audit_id, actor_id, action, target_type, target_id, channel_id, details, created_at FROM audit WHERE 1`)
	for _, c := range []struct{ col, v string }{{"actor_id", f.ActorID}, {"target_id", f.TargetID}, {"channel_id", f.ChannelID}, {"action", f.Action}} {
		if c.v != "" {
			q.WriteString(" AND " + c.col + " = ?")
			args = append(args, c.v)
		}
	}
	order := " ORDER BY created_at DESC, audit_id DESC"
	if c := f.After; c != nil {
		q.WriteString(" AND (created_at, audit_id) < (?, ?)")
		args = append(args, ms(chat.NewTime(c.CreatedAt)), c.AuditID)
	}
	if c := f.Before; c != nil {
		q.WriteString(" AND (created_at, audit_id) > (?, ?)")
		args = append(args, ms(chat.NewTime(c.CreatedAt)), c.AuditID)
		order = " ORDER BY created_at, audit_id"
	}
	q.WriteString(order + " LIMIT " + limitParam)
	args = append(args, limitArg(f.Limit))
	return list(t, ctx, scanAudit, q.String(), args...)
}

// SoftDeleteBatch implements chat.PurgeStore with one statement: the
// batch is an index range of messages_user_created_idx after the cursor
// (absent bounds are the extreme values, so the statement text is
// always the same).
func (t *tx) SoftDeleteBatch(ctx context.Context, f chat.PurgeFilter, now time.Time) ([]*chat.Message, error) {
	since, until := int64(math.MinInt64), int64(math.MaxInt64)
	if !f.Since.IsZero() {
		since = ms(chat.NewTime(f.Since))
	}
	if !f.Until.IsZero() {
		until = ms(chat.NewTime(f.Until))
	}
	afterAt, afterID := int64(math.MinInt64), ""
	if f.After != nil {
		afterAt, afterID = ms(chat.NewTime(f.After.CreatedAt)), f.After.MessageID
	}
	row := newMessageRow(f.Limit)
	out, err := list(t, ctx, row.scan, `UPDATE messages SET is_deleted = 1, data = '{}', text = NULL, updated_at = ?
		WHERE rowid IN (SELECT rowid FROM messages INDEXED BY messages_user_created_idx
			WHERE user_id = ? AND (created_at, message_id) > (?, ?) AND created_at >= ? AND created_at <= ?
				AND (? = '' OR channel_id = ?) AND is_deleted = 0
			ORDER BY created_at, message_id LIMIT `+limitParam+`)
		RETURNING `+returningMessageCols,
		ms(chat.NewTime(now)), f.UserID, afterAt, afterID, since, until, f.ChannelID, f.ChannelID, limitArg(f.Limit))
	if err != nil {
		return nil, err
	}
	chat.SortPurged(out)
	return out, nil
}

// returningMessageCols is messageCols without the table alias, which a
// RETURNING clause cannot name.
var returningMessageCols = strings.ReplaceAll(messageCols, "m.", "")

package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
)

// AppendAudit implements chat.AuditStore with one statement.
func (t *tx) AppendAudit(ctx context.Context, es []*chat.AuditEntry) error {
	n := len(es)
	if n == 0 {
		return nil
	}
	ids, actors, actions, types, targets, chans, details, created := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, e := range es {
		d := e.Details
		if d == nil {
			d = map[string]any{}
		}
		b, err := json.Marshal(d)
		if err != nil {
			return chat.WrapError(chat.CodeBadRequest, err, "audit details cannot be stored as JSON")
		}
		ids[i], actors[i], actions[i], types[i], targets[i] = e.AuditID, e.ActorID, e.Action, e.TargetType, e.TargetID
		chans[i], details[i], created[i] = e.ChannelID, string(b), timeText(e.CreatedAt.Time)
	}
	_, err := t.exec(ctx, `INSERT INTO {s}audit (audit_id, actor_id, action, target_type, target_id, channel_id, details, created_at)
		SELECT x.id, NULLIF(x.actor, ''), x.action, x.ttype, x.target, NULLIF(x.ch, ''), x.details::json, x.at::timestamptz
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
			AS x(id, actor, action, ttype, target, ch, details, at)`,
		textArray(ids), textArray(actors), textArray(actions), textArray(types), textArray(targets), textArray(chans),
		textArray(details), textArray(created))
	return err
}

// SetAuditDetails implements chat.AuditStore.
func (t *tx) SetAuditDetails(ctx context.Context, auditID string, details map[string]any) error {
	if details == nil {
		details = map[string]any{}
	}
	b, err := json.Marshal(details)
	if err != nil {
		return chat.WrapError(chat.CodeBadRequest, err, "audit details cannot be stored as JSON")
	}
	n, err := t.exec(ctx, `UPDATE {s}audit SET details = $2::json WHERE audit_id = $1`, auditID, string(b))
	if err != nil {
		return err
	}
	if n == 0 {
		return chat.Errorf(chat.CodeNotFound, "audit entry %q not found", auditID)
	}
	return nil
}

func scanAudit(r scanner) (*chat.AuditEntry, error) {
	var (
		e              chat.AuditEntry
		actor, channel sql.NullString
		details        []byte
		at             time.Time
	)
	if err := r.Scan(&e.AuditID, &actor, &e.Action, &e.TargetType, &e.TargetID, &channel, &details, &at); err != nil {
		return nil, err
	}
	d, err := jsonMap(details)
	if err != nil {
		return nil, err
	}
	e.Details = d
	e.ActorID, e.ChannelID = actor.String, channel.String
	e.CreatedAt = ct(at)
	return &e, nil
}

// QueryAudit implements chat.AuditStore. Each filter is an equality on
// the leading column of its index, whose (created_at, audit_id) order is
// the keyset; the planner picks one and checks the others.
func (t *tx) QueryAudit(ctx context.Context, f chat.AuditFilter) ([]*chat.AuditEntry, error) {
	q, args := auditQuery(f)
	var out []*chat.AuditEntry
	err := t.query(ctx, q, args, func(r *sql.Rows) error {
		e, err := scanAudit(r)
		if err == nil {
			out = append(out, e)
		}
		return err
	})
	return out, err
}

// auditQuery builds the SQL template and arguments of QueryAudit.
func auditQuery(f chat.AuditFilter) (string, []any) {
	var args argList
	var where []string
	for _, c := range []struct{ col, v string }{{"actor_id", f.ActorID}, {"target_id", f.TargetID}, {"channel_id", f.ChannelID}, {"action", f.Action}} {
		if c.v != "" {
			where = append(where, c.col+" = "+args.add(c.v))
		}
	}
	order := " ORDER BY created_at DESC, audit_id DESC"
	if c := f.After; c != nil {
		where = append(where, "(created_at, audit_id) < ("+args.add(msTime(c.CreatedAt))+", "+args.add(c.AuditID)+")")
	}
	if c := f.Before; c != nil {
		where = append(where, "(created_at, audit_id) > ("+args.add(msTime(c.CreatedAt))+", "+args.add(c.AuditID)+")")
		order = " ORDER BY created_at, audit_id"
	}
	q := `SELECT audit_id, actor_id, action, target_type, target_id, channel_id, details, created_at FROM {s}audit`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	return q + order + limitOffset(&args, f.Limit, 0), args
}

// SoftDeleteBatch implements chat.PurgeStore with one statement: the
// batch is an index range of messages_user_created_idx after the cursor,
// locked (FOR UPDATE), then updated. A read-modify-write of a message
// locks its row too (GetMessage in a write transaction), so the two
// serialize: the purge skips a message another transaction deleted
// meanwhile (READ COMMITTED re-checks NOT is_deleted on the locked row),
// and a later reader sees it deleted. Absent bounds are the extreme
// values, so the statement text is always the same.
func (t *tx) SoftDeleteBatch(ctx context.Context, f chat.PurgeFilter, now time.Time) ([]*chat.Message, error) {
	return t.messages(ctx, purgeQuery, purgeArgs(f, now)...)
}

// purgeQuery is the statement of SoftDeleteBatch.
const purgeQuery = `WITH b AS (
		SELECT message_id FROM {s}messages
		WHERE user_id = $1 AND (created_at, message_id) > ($2::timestamptz, $3::text COLLATE "C")
			AND created_at >= $4::timestamptz AND created_at <= $5::timestamptz
			AND ($6::text = '' OR channel_id = $6::text) AND NOT is_deleted
		ORDER BY created_at, message_id
		LIMIT CASE WHEN $7::int < 0 THEN NULL ELSE $7::int END
		FOR UPDATE
	), u AS (
		UPDATE {s}messages m SET is_deleted = true, data = '{}', updated_at = $8
		FROM b WHERE m.message_id = b.message_id
		RETURNING m.*
	)
	SELECT ` + messageCols + ` FROM u ORDER BY created_at, message_id`

// purgeArgs are the arguments of purgeQuery for f.
func purgeArgs(f chat.PurgeFilter, now time.Time) []any {
	since, until := "-infinity", "infinity"
	if !f.Since.IsZero() {
		since = timeText(f.Since)
	}
	if !f.Until.IsZero() {
		until = timeText(f.Until)
	}
	afterAt, afterID := "-infinity", ""
	if f.After != nil {
		afterAt, afterID = timeText(f.After.CreatedAt), f.After.MessageID
	}
	limit := f.Limit
	if limit <= 0 {
		limit = -1
	}
	return []any{f.UserID, afterAt, afterID, since, until, f.ChannelID, limit, timeArg(chat.NewTime(now))}
}

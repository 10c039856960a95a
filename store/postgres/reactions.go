package postgres

import (
	"context"
	"database/sql"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
)

const reactionCols = `reaction_id, message_id, ref_type, name, user_id, created_at`

func scanReaction(r scanner) (*chat.Reaction, error) {
	var (
		x       chat.Reaction
		created time.Time
	)
	if err := r.Scan(&x.ReactionID, &x.ReferenceID, &x.ReferenceType, &x.ReactionName, &x.UserID, &created); err != nil {
		return nil, err
	}
	x.CreatedAt = ct(created)
	return &x, nil
}

func (t *tx) reactions(ctx context.Context, tmpl string, args ...any) ([]*chat.Reaction, error) {
	var out []*chat.Reaction
	err := t.query(ctx, tmpl, args, func(r *sql.Rows) error {
		x, err := scanReaction(r)
		if err == nil {
			out = append(out, x)
		}
		return err
	})
	return out, err
}

func (t *tx) existingReaction(ctx context.Context, userID, messageID, name string) ([]*chat.Reaction, error) {
	return t.reactions(ctx, `SELECT `+reactionCols+` FROM {s}reactions
		WHERE user_id = $1 AND message_id = $2 AND name = $3`, userID, messageID, name)
}

// AddReaction inserts the reaction when the message exists, in one
// statement.
func (t *tx) AddReaction(ctx context.Context, r *chat.Reaction) (*chat.Reaction, bool, error) {
	if old, err := t.existingReaction(ctx, r.UserID, r.ReferenceID, r.ReactionName); err != nil || len(old) > 0 {
		if err != nil {
			return nil, false, err
		}
		return old[0], false, nil
	}
	var inserted, msgFound int64
	err := t.queryRow(ctx, `WITH msg AS (
			SELECT message_id FROM {s}messages WHERE message_id = $2
		), ins AS (
			INSERT INTO {s}reactions (`+reactionCols+`)
			SELECT $1, $2, $3, $4, $5, $6 FROM msg
			ON CONFLICT (user_id, message_id, name) DO NOTHING
			RETURNING 1
		)
		SELECT (SELECT count(*) FROM ins), (SELECT count(*) FROM msg)`,
		[]any{r.ReactionID, r.ReferenceID, r.ReferenceType, r.ReactionName, r.UserID, timeArg(r.CreatedAt)},
		&inserted, &msgFound)
	if err != nil {
		return nil, false, err
	}
	if msgFound == 0 {
		return nil, false, chat.Errorf(chat.CodeNotFound, "message %q not found", r.ReferenceID)
	}
	if inserted == 0 {
		// A concurrent transaction added the same reaction first.
		old, err := t.existingReaction(ctx, r.UserID, r.ReferenceID, r.ReactionName)
		if err != nil {
			return nil, false, err
		}
		if len(old) == 0 {
			return nil, false, chat.Errorf(chat.CodeConflict, "reaction %q could not be added, try again", r.ReactionID)
		}
		return old[0], false, nil
	}
	v := *r
	v.CreatedAt = chat.NewTime(r.CreatedAt.Time)
	return &v, true, nil
}

func (t *tx) RemoveReaction(ctx context.Context, userID, messageID, name string) (*chat.Reaction, error) {
	rs, err := t.reactions(ctx, `DELETE FROM {s}reactions WHERE user_id = $1 AND message_id = $2 AND name = $3
		RETURNING `+reactionCols, userID, messageID, name)
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, chat.Errorf(chat.CodeNotFound, "user %q has no %q reaction to message %q", userID, name, messageID)
	}
	return rs[0], nil
}

// SetReactionCounts writes the message's map and total and the count of
// name that MostReacted reads, in one statement.
func (t *tx) SetReactionCounts(ctx context.Context, m *chat.Message, name string) error {
	_, err := t.exec(ctx, `WITH up AS (
			UPDATE {s}messages SET reactions = $2, reactions_count = $3 WHERE message_id = $1
		)
		INSERT INTO {s}reaction_counts (message_id, name, channel_id, created_at, count) VALUES ($1, $4, $5, $6, $7)
		ON CONFLICT (message_id, name) DO UPDATE SET count = EXCLUDED.count`,
		m.MessageID, countsArg(m.Reactions), m.ReactionsCount, name, m.ChannelID, timeArg(m.CreatedAt), m.Reactions[name])
	return err
}

func (t *tx) QueryReactions(ctx context.Context, f chat.ReactionFilter) ([]*chat.Reaction, error) {
	var args argList
	where := []string{"message_id = " + args.add(f.MessageID)}
	if f.ReactionName != "" {
		where = append(where, "name = "+args.add(f.ReactionName))
	}
	if f.After != nil {
		where = append(where, "(created_at, reaction_id) < ("+args.add(msTime(f.After.CreatedAt))+", "+args.add(f.After.ReactionID)+")")
	}
	if f.Before != nil {
		where = append(where, "(created_at, reaction_id) > ("+args.add(msTime(f.Before.CreatedAt))+", "+args.add(f.Before.ReactionID)+")")
	}
	q := "SELECT " + reactionCols + " FROM {s}reactions WHERE " + strings.Join(where, " AND ")
	if f.Before != nil {
		q += " ORDER BY created_at, reaction_id"
	} else {
		q += " ORDER BY created_at DESC, reaction_id DESC"
	}
	q += limitOffset(&args, f.Limit, f.Offset)
	return t.reactions(ctx, q, args...)
}

// MostReacted walks reaction_counts_top_idx (or its per-channel twin) in
// order and joins the live messages.
func (t *tx) MostReacted(ctx context.Context, name, channelID string, limit int) ([]*chat.Message, error) {
	var args argList
	q := "SELECT " + prefixCols("m.", messageCols) + ` FROM {s}reaction_counts rc
		JOIN {s}messages m ON m.message_id = rc.message_id
		WHERE rc.name = ` + args.add(name) + " AND rc.count > 0 AND NOT m.is_deleted"
	if channelID != "" {
		q += " AND rc.channel_id = " + args.add(channelID)
	}
	q += " ORDER BY rc.count DESC, rc.created_at DESC, rc.message_id DESC"
	q += limitOffset(&args, limit, 0)
	return t.messages(ctx, q, args...)
}

// ---- flags ----

func (t *tx) AddFlag(ctx context.Context, kind, targetID, userID string, now time.Time) (bool, error) {
	n, err := t.exec(ctx, `INSERT INTO {s}flags (kind, target_id, user_id, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT DO NOTHING`, kind, targetID, userID, timeArg(chat.NewTime(now)))
	return n == 1, err
}

func (t *tx) ClearFlags(ctx context.Context, kind, targetID string) error {
	_, err := t.exec(ctx, `DELETE FROM {s}flags WHERE kind = $1 AND target_id = $2`, kind, targetID)
	return err
}

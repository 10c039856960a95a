package sqlite

import (
	"context"
	"strings"

	chat "github.com/chatengine/chat"
)

const reactionCols = "reaction_id, message_id, ref_type, name, user_id, created_at"

func scanReaction(sc scanner) (*chat.Reaction, error) {
	var r chat.Reaction
	var created int64
	if err := sc.Scan(&r.ReactionID, &r.ReferenceID, &r.ReferenceType, &r.ReactionName, &r.UserID, &created); err != nil {
		return nil, err
	}
	r.CreatedAt = fromMs(created)
	return &r, nil
}

// AddReaction implements chat.ReactionStore.
func (t *tx) AddReaction(ctx context.Context, r *chat.Reaction) (*chat.Reaction, bool, error) {
	rs, err := list(t, ctx, scanReaction, "SELECT "+reactionCols+
		" FROM reactions WHERE user_id = ? AND message_id = ? AND name = ?", r.UserID, r.ReferenceID, r.ReactionName)
	if err != nil {
		return nil, false, err
	}
	if len(rs) > 0 {
		return rs[0], false, nil
	}
	var n int
	if err := t.row(ctx, "SELECT count(*) FROM messages WHERE message_id = ?", []any{r.ReferenceID}, &n); err != nil {
		return nil, false, err
	}
	if n == 0 {
		return nil, false, notFound("message", r.ReferenceID)
	}
	if _, err := t.exec(ctx, "INSERT INTO reactions ("+reactionCols+") VALUES (?,?,?,?,?,?)",
		r.ReactionID, r.ReferenceID, r.ReferenceType, r.ReactionName, r.UserID, ms(r.CreatedAt)); err != nil {
		return nil, false, asConflict(err, "reaction", r.ReactionID)
	}
	out := *r
	out.CreatedAt = chat.NewTime(r.CreatedAt.Time)
	return &out, true, nil
}

// SetReactionCounts implements chat.ReactionStore: the message's map and
// total, and the count of name in reaction_counts (deleted at 0).
func (t *tx) SetReactionCounts(ctx context.Context, m *chat.Message, name string) error {
	js, err := jsonText(m.Reactions)
	if err != nil {
		return err
	}
	if _, err := t.exec(ctx, "UPDATE messages SET reactions = ?, reactions_count = ? WHERE message_id = ?",
		js, m.ReactionsCount, m.MessageID); err != nil {
		return err
	}
	if c := m.Reactions[name]; c > 0 {
		_, err = t.exec(ctx, `INSERT INTO reaction_counts (message_id, name, channel_id, created_at, count)
	VALUES (?,?,?,?,?) ON CONFLICT (message_id, name) DO UPDATE SET count = excluded.count`,
			m.MessageID, name, m.ChannelID, ms(m.CreatedAt), c)
	} else {
		_, err = t.exec(ctx, "DELETE FROM reaction_counts WHERE message_id = ? AND name = ?", m.MessageID, name)
	}
	return err
}

// RemoveReaction implements chat.ReactionStore.
func (t *tx) RemoveReaction(ctx context.Context, userID, messageID, name string) (*chat.Reaction, error) {
	rs, err := list(t, ctx, scanReaction, "DELETE FROM reactions WHERE user_id = ? AND message_id = ? AND name = ? RETURNING "+
		reactionCols, userID, messageID, name)
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, notFound("reaction", name)
	}
	return rs[0], nil
}

// QueryReactions implements chat.ReactionStore.
func (t *tx) QueryReactions(ctx context.Context, f chat.ReactionFilter) ([]*chat.Reaction, error) {
	var q strings.Builder
	args := []any{f.MessageID}
	q.WriteString("SELECT " + reactionCols + " FROM reactions WHERE message_id = " + textParam)
	if f.ReactionName != "" {
		q.WriteString(" AND name = " + textParam)
		args = append(args, f.ReactionName)
	}
	if f.After != nil {
		q.WriteString(" AND (created_at, reaction_id) < (?, ?)")
		args = append(args, ms(chat.NewTime(f.After.CreatedAt)), f.After.ReactionID)
	}
	if f.Before != nil {
		q.WriteString(" AND (created_at, reaction_id) > (?, ?) ORDER BY created_at ASC, reaction_id ASC")
		args = append(args, ms(chat.NewTime(f.Before.CreatedAt)), f.Before.ReactionID)
	} else {
		q.WriteString(" ORDER BY created_at DESC, reaction_id DESC")
	}
	q.WriteString(" LIMIT " + limitParam + " OFFSET " + limitParam)
	args = append(args, limitArg(f.Limit), max(f.Offset, 0))
	return list(t, ctx, scanReaction, q.String(), args...)
}

// MostReacted implements chat.ReactionStore. reaction_counts is read in
// index order (reaction_counts_top_idx or, with a channel,
// reaction_counts_channel_top_idx); deleted messages are skipped.
func (t *tx) MostReacted(ctx context.Context, name, channelID string, limit int) ([]*chat.Message, error) {
	q := "SELECT " + messageCols + ` FROM reaction_counts rc CROSS JOIN messages m ON m.message_id = rc.message_id
	WHERE rc.name = ?`
	args := []any{name}
	if channelID != "" {
		q += " AND rc.channel_id = ?"
		args = append(args, channelID)
	}
	q += ` AND rc.count > 0 AND m.is_deleted = 0
	ORDER BY rc.count DESC, rc.created_at DESC, rc.message_id DESC LIMIT ?+0`
	args = append(args, limitArg(limit))
	return list(t, ctx, newMessageRow(limit).scan, q, args...)
}

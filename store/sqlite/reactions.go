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
	if err := t.countReaction(ctx, r.ReferenceID, r.ReactionName, +1); err != nil {
		return nil, false, err
	}
	out := *r
	out.CreatedAt = chat.NewTime(r.CreatedAt.Time)
	return &out, true, nil
}

// countReaction adds d to the count of one reaction name on a message: in
// the message's reactions map and reactionsCount, and in reaction_counts.
// A message that does not exist is left alone.
func (t *tx) countReaction(ctx context.Context, messageID, name string, d int) error {
	var raw string
	var channelID string
	var created int64
	err := t.row(ctx, "SELECT reactions, channel_id, created_at FROM messages WHERE message_id = ?",
		[]any{messageID}, &raw, &channelID, &created)
	if chat.ErrorCode(err) == chat.CodeNotFound {
		return nil
	}
	if err != nil {
		return err
	}
	var counts map[string]int
	if err := fromJSON(raw, &counts); err != nil {
		return err
	}
	if counts == nil {
		counts = map[string]int{}
	}
	c := counts[name] + d
	if c > 0 {
		counts[name] = c
	} else {
		delete(counts, name)
	}
	js, err := jsonText(counts)
	if err != nil {
		return err
	}
	if _, err := t.exec(ctx, "UPDATE messages SET reactions = ?, reactions_count = reactions_count + ? WHERE message_id = ?",
		js, d, messageID); err != nil {
		return err
	}
	if c > 0 {
		_, err = t.exec(ctx, `INSERT INTO reaction_counts (message_id, name, channel_id, created_at, count)
	VALUES (?,?,?,?,?) ON CONFLICT (message_id, name) DO UPDATE SET count = excluded.count`,
			messageID, name, channelID, created, c)
	} else {
		_, err = t.exec(ctx, "DELETE FROM reaction_counts WHERE message_id = ? AND name = ?", messageID, name)
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
	if err := t.countReaction(ctx, messageID, name, -1); err != nil {
		return nil, err
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

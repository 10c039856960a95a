package postgres

import (
	"context"
	"strings"

	chat "github.com/chatengine/chat"
)

// insertMentions adds a row of message_mentions for each user the stored
// message m mentions; nothing, and no round trip, when it mentions none.
func (t *tx) insertMentions(ctx context.Context, m *chat.Message) error {
	if len(m.MentionedUserIDs) == 0 {
		return nil
	}
	_, err := t.exec(ctx, `INSERT INTO {s}message_mentions (user_id, message_id, channel_id, channel_segment, created_at)
		SELECT u, message_id, channel_id, channel_segment, created_at FROM {s}messages, unnest($2::text[]) u
		WHERE message_id = $1 ON CONFLICT DO NOTHING`, m.MessageID, textArray(m.MentionedUserIDs))
	return err
}

// unreadMentionQuery is the statement of UnreadMentionCounts; its
// arguments are unreadArgs. Each relation counts its rows of
// message_mentions above the marker (message_mentions_unread_idx) whose
// message is live.
const unreadMentionQuery = `SELECT (SELECT count(*) FROM {s}message_mentions mm JOIN {s}messages m ON m.message_id = mm.message_id
		WHERE mm.user_id = q.u AND mm.channel_id = q.ch AND mm.channel_segment > q.r AND NOT m.is_deleted)
	FROM unnest($1::text[], $2::text[], $3::bigint[]) WITH ORDINALITY AS q(ch, u, r, i)
	ORDER BY q.i`

// UnreadMentionCounts implements chat.MentionStore in one statement.
func (t *tx) UnreadMentionCounts(ctx context.Context, cus []*chat.ChannelUser) ([]int64, error) {
	return t.countPerRelation(ctx, "unread mention counts", unreadMentionQuery, cus)
}

// QueryMentions implements chat.MentionStore: the user's rows of
// message_mentions newest first (message_mentions_recent_idx), those of
// live messages in channels where the user is a member.
func (t *tx) QueryMentions(ctx context.Context, f chat.MentionFilter) ([]*chat.Message, error) {
	var args argList
	where := []string{"mm.user_id = " + args.add(f.UserID), "NOT m.is_deleted",
		"EXISTS (SELECT 1 FROM {s}channel_users cu WHERE cu.channel_id = mm.channel_id AND cu.user_id = mm.user_id AND cu.membership = 'member')"}
	if f.ChannelID != "" {
		where = append(where, "mm.channel_id = "+args.add(f.ChannelID))
	}
	where = append(where, searchKeyset(&args, chat.MessageSearch{After: f.After, Before: f.Before}, "mm")...)
	order := " ORDER BY mm.created_at DESC, mm.message_id DESC"
	if f.Before != nil {
		order = " ORDER BY mm.created_at, mm.message_id"
	}
	q := "SELECT " + prefixCols("m.", messageCols) + ` FROM {s}message_mentions mm JOIN {s}messages m ON m.message_id = mm.message_id
		WHERE ` + strings.Join(where, " AND ") + order + limitOffset(&args, f.Limit, 0)
	return t.messages(ctx, q, args...)
}

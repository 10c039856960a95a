package sqlite

import (
	"context"
	"encoding/json"
	"strings"

	chat "github.com/chatengine/chat"
)

// mentionsText is the stored form of mentionedUserIds: a JSON array, '[]'
// when empty.
func mentionsText(ids []string) (string, error) {
	if len(ids) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(ids)
	return string(b), err
}

// insertMentions adds a row of message_mentions for each user m mentions
// (the stored message's channel, segment and createdAt).
func (t *tx) insertMentions(ctx context.Context, m *chat.Message) error {
	for _, u := range m.MentionedUserIDs {
		if _, err := t.exec(ctx, `INSERT OR IGNORE INTO message_mentions (user_id, message_id, channel_id, channel_segment, created_at)
	SELECT ?, message_id, channel_id, channel_segment, created_at FROM messages WHERE message_id = ?`, u, m.MessageID); err != nil {
			return err
		}
	}
	return nil
}

// unreadMentionQuery counts, for each [channelId, userId, readToSegment]
// of a JSON array, the user's rows of message_mentions in the channel
// above the marker (message_mentions_unread_idx) whose message is live.
const unreadMentionQuery = `SELECT (SELECT count(*) FROM message_mentions mm CROSS JOIN messages m ON m.message_id = mm.message_id
	WHERE mm.user_id = q.u AND mm.channel_id = q.ch AND mm.channel_segment > q.r AND m.is_deleted = 0)
FROM (SELECT key AS i, CAST(json_extract(value, '$[0]') AS TEXT) AS ch, CAST(json_extract(value, '$[1]') AS TEXT) AS u,
	CAST(json_extract(value, '$[2]') AS INTEGER) AS r FROM json_each(?)) q
ORDER BY q.i`

// UnreadMentionCounts implements chat.MentionStore with one statement.
func (t *tx) UnreadMentionCounts(ctx context.Context, cus []*chat.ChannelUser) ([]int64, error) {
	return t.countPerRelation(ctx, "unread mention counts", unreadMentionQuery, cus)
}

// QueryMentions implements chat.MentionStore: the user's rows of
// message_mentions newest first (message_mentions_recent_idx), those of
// live messages in channels where the user is a member.
func (t *tx) QueryMentions(ctx context.Context, f chat.MentionFilter) ([]*chat.Message, error) {
	where := []string{"mm.user_id = ?", "m.is_deleted = 0",
		"EXISTS (SELECT 1 FROM channel_users cu WHERE cu.channel_id = mm.channel_id AND cu.user_id = mm.user_id AND cu.membership = 'member')"}
	args := []any{f.UserID}
	if f.ChannelID != "" {
		where = append(where, "mm.channel_id = ?")
		args = append(args, f.ChannelID)
	}
	order := " ORDER BY mm.created_at DESC, mm.message_id DESC"
	switch {
	case f.After != nil:
		where = append(where, "(mm.created_at, mm.message_id) < (?, ?)")
		args = append(args, ms(chat.NewTime(f.After.CreatedAt)), f.After.MessageID)
	case f.Before != nil:
		where = append(where, "(mm.created_at, mm.message_id) > (?, ?)")
		args = append(args, ms(chat.NewTime(f.Before.CreatedAt)), f.Before.MessageID)
		order = " ORDER BY mm.created_at ASC, mm.message_id ASC"
	}
	args = append(args, limitArg(f.Limit))
	row := newMessageRow(f.Limit)
	return list(t, ctx, row.scan, "SELECT "+messageCols+` FROM message_mentions mm CROSS JOIN messages m ON m.message_id = mm.message_id
	WHERE `+strings.Join(where, " AND ")+order+" LIMIT "+limitParam, args...)
}

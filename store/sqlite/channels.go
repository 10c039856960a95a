package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
)

const channelCols = `c.channel_id, c.type, c.display_name, c.is_distinct, c.metadata, c.tags, c.is_muted,
	c.mute_timeout, c.last_activity, c.created_at, c.updated_at, c.is_rate_limited, c.rate_limit_window,
	c.member_count, c.message_count, c.is_closed`

func scanChannel(sc scanner) (*chat.Channel, error) {
	var c chat.Channel
	var md, tags string
	var mute sql.NullInt64
	var last, created, updated int64
	if err := sc.Scan(&c.ChannelID, &c.Type, &c.DisplayName, &c.IsDistinct, &md, &tags, &c.IsMuted,
		&mute, &last, &created, &updated, &c.IsRateLimited, &c.RateLimitWindow,
		&c.MemberCount, &c.MessageCount, &c.IsClosed); err != nil {
		return nil, err
	}
	if err := fromJSON(md, &c.Metadata); err != nil {
		return nil, err
	}
	if err := fromJSON(tags, &c.Tags); err != nil {
		return nil, err
	}
	c.MuteTimeout = fromMsp(mute)
	c.LastActivity, c.CreatedAt, c.UpdatedAt = fromMs(last), fromMs(created), fromMs(updated)
	return &c, nil
}

// CreateChannel implements chat.ChannelStore.
func (t *tx) CreateChannel(ctx context.Context, c *chat.Channel) error {
	md, err := jsonText(c.Metadata)
	if err != nil {
		return err
	}
	tags, err := jsonText(c.Tags)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, `INSERT INTO channels (channel_id, type, display_name, is_distinct, metadata, tags,
	is_muted, mute_timeout, last_activity, created_at, updated_at, is_rate_limited, rate_limit_window,
	member_count, message_count, is_closed) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		c.ChannelID, c.Type, c.DisplayName, c.IsDistinct, md, tags, c.IsMuted, msp(c.MuteTimeout),
		ms(c.LastActivity), ms(c.CreatedAt), ms(c.UpdatedAt), c.IsRateLimited, c.RateLimitWindow,
		c.MemberCount, c.MessageCount, c.IsClosed)
	if err != nil {
		return asConflict(err, "channel", c.ChannelID)
	}
	// Relations written before the channel existed get its sort key
	// (channel_users_member_idx); usually there are none.
	if _, err := t.exec(ctx, "UPDATE channel_users SET channel_created_at = ? WHERE channel_id = ?",
		ms(c.CreatedAt), c.ChannelID); err != nil {
		return err
	}
	if err := t.writeChannelKeys(ctx, c, false); err != nil {
		return err
	}
	return t.insertChannelTags(ctx, c.ChannelID, c.Tags)
}

func (t *tx) insertChannelTags(ctx context.Context, id string, tags []string) error {
	for _, tag := range tags {
		if _, err := t.exec(ctx, "INSERT OR IGNORE INTO channel_tags (channel_id, tag) VALUES (?, ?)", id, tag); err != nil {
			return err
		}
	}
	return nil
}

// GetChannel implements chat.ChannelStore.
func (t *tx) GetChannel(ctx context.Context, channelID string) (*chat.Channel, error) {
	rows, err := memoKeyed(t, ctx, memoChannels, scanChannel, channelByID, channelID)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, notFound("channel", channelID)
	}
	return rows[0], nil
}

// GetChannels implements chat.ChannelStore.
func (t *tx) GetChannels(ctx context.Context, ids []string) ([]*chat.Channel, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return keyed(t, ctx, scanChannel, "SELECT "+channelCols+" FROM channels c WHERE c.channel_id IN "+inIDs, jsonIDs(ids))
}

// UpdateChannel implements chat.ChannelStore.
func (t *tx) UpdateChannel(ctx context.Context, c *chat.Channel) error {
	md, err := jsonText(c.Metadata)
	if err != nil {
		return err
	}
	tags, err := jsonText(c.Tags)
	if err != nil {
		return err
	}
	var old []byte
	var oldName string
	if err := t.row(ctx, "SELECT tags, display_name FROM channels WHERE channel_id = ?", []any{c.ChannelID}, &old, &oldName); err != nil {
		return asNotFound(err, "channel", c.ChannelID)
	}
	if _, err := t.exec(ctx, `UPDATE channels SET display_name = ?, metadata = ?, tags = ?,
	mute_timeout = ?, last_activity = ?, updated_at = ?, is_closed = ?, is_rate_limited = ?,
	rate_limit_window = ? WHERE channel_id = ?`,
		c.DisplayName, md, tags, msp(c.MuteTimeout), ms(c.LastActivity), ms(c.UpdatedAt),
		c.IsClosed, c.IsRateLimited, c.RateLimitWindow, c.ChannelID); err != nil {
		return err
	}
	if oldName != c.DisplayName {
		if err := t.writeChannelKeys(ctx, c, true); err != nil {
			return err
		}
	}
	if string(old) == tags {
		return nil
	}
	if _, err := t.exec(ctx, "DELETE FROM channel_tags WHERE channel_id = ?", c.ChannelID); err != nil {
		return err
	}
	return t.insertChannelTags(ctx, c.ChannelID, c.Tags)
}

// channelByID is GetChannel's lookup, which write transactions remember.
const channelByID = "SELECT " + channelCols + " FROM channels c WHERE c.channel_id = ?"

// Positions in channelCols of the columns NextSegment changes.
const (
	channelColLastActivity = 8
	channelColUpdatedAt    = 10
	channelColMessageCount = 14
)

// NextSegment implements chat.ChannelStore.
func (t *tx) NextSegment(ctx context.Context, channelID string, now time.Time) (*chat.Channel, error) {
	n := ms(chat.NewTime(now))
	// The row the transaction remembers, if any: the update's effect on
	// it is known (no trigger on channels), so it is remembered again as
	// changed instead of read anew (a post's rules read the channel just
	// before). An UPDATE with RETURNING would cost SQLite a temporary
	// table on every post, more than the read it saves.
	before, remembered := memoRows(t, channelByID, channelID)
	k, err := t.execN(ctx, `UPDATE channels SET message_count = message_count + 1,
	last_activity = ?, updated_at = ? WHERE channel_id = ?`, n, n, channelID)
	if err != nil {
		return nil, err
	}
	if k == 0 {
		return nil, notFound("channel", channelID)
	}
	if remembered && len(before) == 1 {
		if count, ok := before[0][channelColMessageCount].(int64); ok {
			row := slices.Clone(before[0])
			row[channelColMessageCount] = count + 1
			row[channelColLastActivity], row[channelColUpdatedAt] = n, n
			memoRemember(t, memoChannels, [][]driver.Value{row}, channelByID, channelID)
		}
	}
	rows, err := memoKeyed(t, ctx, memoChannels, scanChannel, channelByID, channelID)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, notFound("channel", channelID)
	}
	return rows[0], nil
}

// QueryChannels implements chat.ChannelStore.
func (t *tx) QueryChannels(ctx context.Context, f chat.ChannelFilter) ([]*chat.Channel, error) {
	var q strings.Builder
	var args []any
	// The sort key the query bounds and orders by: the channel's
	// (created_at, channel_id) in channels_created_idx or, with memberOf,
	// their copy in the user's relations in channel_users_member_idx, so
	// that a page reads about as many relations as it returns.
	created, id := "c.created_at", "c.channel_id"
	q.WriteString("SELECT " + channelCols + " FROM ")
	if f.MemberOf != "" {
		// CROSS JOIN fixes the join order: relations first.
		created, id = "cu.channel_created_at", "cu.channel_id"
		q.WriteString(`channel_users cu CROSS JOIN channels c ON c.channel_id = cu.channel_id
	WHERE cu.user_id = ? AND cu.membership = 'member'`)
		args = append(args, f.MemberOf)
	} else {
		q.WriteString("channels c WHERE 1")
	}
	if f.NotMemberOf != "" {
		q.WriteString(` AND NOT EXISTS (SELECT 1 FROM channel_users nm WHERE nm.channel_id = c.channel_id
	AND nm.user_id = ? AND nm.membership = 'member')`)
		args = append(args, f.NotMemberOf)
	}
	if len(f.Tags) > 0 {
		q.WriteString(" AND EXISTS (SELECT 1 FROM channel_tags ct WHERE ct.channel_id = c.channel_id AND ct.tag IN " + inIDs + ")")
		args = append(args, jsonIDs(f.Tags))
	}
	if len(f.ExcludeTags) > 0 {
		q.WriteString(" AND NOT EXISTS (SELECT 1 FROM channel_tags xt WHERE xt.channel_id = c.channel_id AND xt.tag IN " + inIDs + ")")
		args = append(args, jsonIDs(f.ExcludeTags))
	}
	if !f.IncludeClosed {
		q.WriteString(" AND c.is_closed = 0")
	}
	if f.Search != "" {
		// A prefix range on channel_keys.key, never LIKE.
		c, a := wordCond("k.key", f.Search, true)
		q.WriteString(" AND c.channel_id IN (SELECT k.channel_id FROM channel_keys k WHERE " + c + ")")
		args = append(args, a...)
	}
	sortKey := "(" + created + ", " + id + ")"
	if f.After != nil {
		q.WriteString(" AND " + sortKey + " < (?, ?)")
		args = append(args, ms(chat.NewTime(f.After.CreatedAt)), f.After.ChannelID)
	}
	if f.Before != nil {
		q.WriteString(" AND " + sortKey + " > (?, ?)")
		args = append(args, ms(chat.NewTime(f.Before.CreatedAt)), f.Before.ChannelID)
	}
	if f.Before != nil {
		q.WriteString(" ORDER BY " + created + " ASC, " + id + " ASC")
	} else {
		q.WriteString(" ORDER BY " + created + " DESC, " + id + " DESC")
	}
	q.WriteString(" LIMIT " + limitParam + " OFFSET " + limitParam)
	args = append(args, limitArg(f.Limit), max(f.Offset, 0))
	return list(t, ctx, scanChannel, q.String(), args...)
}

// channelUserCols are the columns PutChannelUser writes; channelUserSel
// adds the read marker, which only MarkRead writes.
const (
	channelUserCols = "channel_id, user_id, membership, is_muted, mute_timeout, created_at, updated_at"
	channelUserSel  = channelUserCols + ", read_to_segment"
)

func scanChannelUser(sc scanner) (*chat.ChannelUser, error) {
	var cu chat.ChannelUser
	var mute sql.NullInt64
	var created, updated int64
	if err := sc.Scan(&cu.ChannelID, &cu.UserID, &cu.Membership, &cu.IsMuted, &mute, &created, &updated, &cu.ReadToSegment); err != nil {
		return nil, err
	}
	cu.MuteTimeout = fromMsp(mute)
	cu.CreatedAt, cu.UpdatedAt = fromMs(created), fromMs(updated)
	return &cu, nil
}

// GetChannelUser implements chat.ChannelStore.
func (t *tx) GetChannelUser(ctx context.Context, channelID, userID string) (*chat.ChannelUser, error) {
	rows, err := memoKeyed(t, ctx, memoChannelUsers, scanChannelUser, "SELECT "+channelUserSel+
		" FROM channel_users WHERE channel_id = ? AND user_id = ?", channelID, userID)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, notFound("channel user", channelID+"/"+userID)
	}
	return rows[0], nil
}

// GetChannelUsers implements chat.ChannelStore.
func (t *tx) GetChannelUsers(ctx context.Context, channelID string, userIDs []string) ([]*chat.ChannelUser, error) {
	if userIDs == nil {
		return list(t, ctx, scanChannelUser, "SELECT "+channelUserSel+
			" FROM channel_users WHERE channel_id = "+textParam+" ORDER BY user_id", channelID)
	}
	if len(userIDs) == 0 {
		return nil, nil
	}
	return keyed(t, ctx, scanChannelUser, "SELECT "+channelUserSel+
		" FROM channel_users WHERE channel_id = "+textParam+" AND user_id IN "+inIDs+" ORDER BY user_id", channelID, jsonIDs(userIDs))
}

// ListMemberships implements chat.ChannelStore. With channelIDs nil it
// returns every relation of the user.
func (t *tx) ListMemberships(ctx context.Context, userID string, channelIDs []string) ([]*chat.ChannelUser, error) {
	if channelIDs == nil {
		return list(t, ctx, scanChannelUser, "SELECT "+channelUserSel+
			" FROM channel_users WHERE user_id = "+textParam+" ORDER BY channel_id", userID)
	}
	if len(channelIDs) == 0 {
		return nil, nil
	}
	return keyed(t, ctx, scanChannelUser, "SELECT "+channelUserSel+
		" FROM channel_users WHERE user_id = "+textParam+" AND channel_id IN "+inIDs+" ORDER BY channel_id", userID, jsonIDs(channelIDs))
}

// SetMemberCount implements chat.ChannelStore.
func (t *tx) SetMemberCount(ctx context.Context, channelID string, n int) error {
	_, err := t.exec(ctx, "UPDATE channels SET member_count = ? WHERE channel_id = ?", n, channelID)
	return err
}

// PutChannelUser implements chat.ChannelStore.
func (t *tx) PutChannelUser(ctx context.Context, cu *chat.ChannelUser) error {
	// channel_created_at: the channel's sort key, for channel_users_member_idx.
	_, err := t.exec(ctx, `INSERT INTO channel_users (`+channelUserCols+`, channel_created_at)
	VALUES (?,?,?,?,?,?,?, (SELECT created_at FROM channels WHERE channel_id = ?))
	ON CONFLICT (channel_id, user_id) DO UPDATE SET membership = excluded.membership,
	is_muted = excluded.is_muted, mute_timeout = excluded.mute_timeout,
	created_at = excluded.created_at, updated_at = excluded.updated_at,
	channel_created_at = excluded.channel_created_at`,
		cu.ChannelID, cu.UserID, cu.Membership, cu.IsMuted, msp(cu.MuteTimeout), ms(cu.CreatedAt), ms(cu.UpdatedAt),
		cu.ChannelID)
	return err
}

// MarkRead implements chat.ChannelStore.
func (t *tx) MarkRead(ctx context.Context, channelID, userID string, segment int64) (*chat.ChannelUser, error) {
	rows, err := keyed(t, ctx, scanChannelUser, "UPDATE channel_users SET read_to_segment = max(read_to_segment, ?)"+
		" WHERE channel_id = ? AND user_id = ? RETURNING "+channelUserSel, segment, channelID, userID)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, notFound("channel user", channelID+"/"+userID)
	}
	return rows[0], nil
}

// unreadQuery reads, for each [channelId, userId, readToSegment] of a
// JSON array, the channel's messageCount, the user's own messages
// (messages_author_idx) and the deleted messages of others
// (messages_deleted_idx) above the marker: index range counts, never a
// read of the unread messages themselves.
const unreadQuery = `SELECT coalesce((SELECT c.message_count FROM channels c WHERE c.channel_id = q.ch), 0),
	(SELECT count(*) FROM messages m WHERE m.channel_id = q.ch AND m.user_id = q.u AND m.channel_segment > q.r),
	(SELECT count(*) FROM messages m WHERE m.channel_id = q.ch AND m.is_deleted = 1 AND m.channel_segment > q.r AND m.user_id <> q.u)
FROM (SELECT key AS i, CAST(json_extract(value, '$[0]') AS TEXT) AS ch, CAST(json_extract(value, '$[1]') AS TEXT) AS u,
	CAST(json_extract(value, '$[2]') AS INTEGER) AS r FROM json_each(?)) q
ORDER BY q.i`

// CountUnread implements chat.ChannelStore with one statement (see
// unreadQuery).
func (t *tx) CountUnread(ctx context.Context, cus []*chat.ChannelUser) ([]chat.UnreadFacts, error) {
	return perRelation(t, ctx, "unread counts", unreadQuery, cus, func(sc scanner) (chat.UnreadFacts, error) {
		var f chat.UnreadFacts
		return f, sc.Scan(&f.MessageCount, &f.Own, &f.DeletedOthers)
	})
}

// countPerRelation runs query, a statement that answers one count for each
// [channelId, userId, readToSegment] of its JSON array argument, in order,
// for the relations cus.
func (t *tx) countPerRelation(ctx context.Context, what, query string, cus []*chat.ChannelUser) ([]int64, error) {
	return perRelation(t, ctx, what, query, cus, func(sc scanner) (int64, error) {
		var n int64
		return n, sc.Scan(&n)
	})
}

// perRelation runs query, a statement that answers one row for each
// [channelId, userId, readToSegment] of its JSON array argument, in order,
// for the relations cus, and scans each row with scan.
func perRelation[T any](t *tx, ctx context.Context, what, query string, cus []*chat.ChannelUser, scan func(scanner) (T, error)) ([]T, error) {
	if len(cus) == 0 {
		return nil, nil
	}
	in := make([][3]any, len(cus))
	for i, cu := range cus {
		in[i] = [3]any{cu.ChannelID, cu.UserID, cu.ReadToSegment}
	}
	arg, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	out, err := list(t, ctx, scan, query, string(arg))
	if err != nil {
		return nil, err
	}
	if len(out) != len(cus) {
		return nil, fmt.Errorf("sqlite: %s: %d rows for %d relations", what, len(out), len(cus))
	}
	return out, nil
}

// DeleteChannelUser implements chat.ChannelStore.
func (t *tx) DeleteChannelUser(ctx context.Context, channelID, userID string) error {
	_, err := t.exec(ctx, "DELETE FROM channel_users WHERE channel_id = ? AND user_id = ?", channelID, userID)
	return err
}

// DeleteChannelUsers implements chat.ChannelStore.
func (t *tx) DeleteChannelUsers(ctx context.Context, channelID string) error {
	_, err := t.exec(ctx, "DELETE FROM channel_users WHERE channel_id = ?", channelID)
	return err
}

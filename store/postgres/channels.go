package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/lib/pq"
)

const channelCols = `channel_id, type, display_name, is_distinct, metadata, tags,
	mute_timeout, last_activity, created_at, updated_at, is_rate_limited, rate_limit_window,
	member_count, message_count, is_closed`

func scanChannel(r scanner) (*chat.Channel, error) {
	var (
		c                      chat.Channel
		md                     []byte
		tags                   pq.StringArray
		mute                   sql.NullTime
		last, created, updated time.Time
	)
	if err := r.Scan(&c.ChannelID, &c.Type, &c.DisplayName, &c.IsDistinct, &md, &tags,
		&mute, &last, &created, &updated, &c.IsRateLimited, &c.RateLimitWindow,
		&c.MemberCount, &c.MessageCount, &c.IsClosed); err != nil {
		return nil, err
	}
	var err error
	if c.Metadata, err = jsonMap(md); err != nil {
		return nil, err
	}
	c.Tags = tagsOut(tags)
	c.MuteTimeout = ctp(mute)
	c.LastActivity, c.CreatedAt, c.UpdatedAt = ct(last), ct(created), ct(updated)
	return &c, nil
}

// copyChannel returns a copy of c that shares nothing with it.
func copyChannel(c *chat.Channel) *chat.Channel {
	v := *c
	v.Metadata = cloneJSONMap(c.Metadata)
	v.Tags = slices.Clone(c.Tags)
	if c.MuteTimeout != nil {
		m := *c.MuteTimeout
		v.MuteTimeout = &m
	}
	return &v
}

func (t *tx) channels(ctx context.Context, tmpl string, args ...any) ([]*chat.Channel, error) {
	var out []*chat.Channel
	err := t.query(ctx, tmpl, args, func(r *sql.Rows) error {
		c, err := scanChannel(r)
		if err == nil {
			out = append(out, c)
		}
		return err
	})
	return out, err
}

// lockedChannel records that the transaction holds the channel's row.
func (t *tx) lockedChannel(id string) {
	if !t.write {
		return
	}
	if t.heldChannels == nil {
		t.heldChannels = make(map[string]bool)
	}
	t.heldChannels[id] = true
}

func (t *tx) CreateChannel(ctx context.Context, c *chat.Channel) error {
	md, err := jsonArg(c.Metadata)
	if err != nil {
		return err
	}
	n, err := t.exec(ctx, `INSERT INTO {s}channels (`+channelCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
		ON CONFLICT DO NOTHING`,
		c.ChannelID, c.Type, c.DisplayName, c.IsDistinct, md, tagsArg(c.Tags),
		timePtrArg(c.MuteTimeout), timeArg(c.LastActivity), timeArg(c.CreatedAt), timeArg(c.UpdatedAt),
		c.IsRateLimited, c.RateLimitWindow, c.MemberCount, c.MessageCount, c.IsClosed)
	if err != nil {
		return err
	}
	if n == 0 {
		return chat.Errorf(chat.CodeConflict, "channel %q already exists", c.ChannelID)
	}
	t.lockedChannel(c.ChannelID)
	return t.writeChannelKeys(ctx, c)
}

// GetChannel reads the row without a lock (a row PrefetchPost read, locked
// in an Update, is served as it is).
func (t *tx) GetChannel(ctx context.Context, channelID string) (*chat.Channel, error) {
	return t.channel(ctx, channelID, false)
}

// LockChannel implements chat.LockStore: in an Update the row is held
// (FOR NO KEY UPDATE) until the transaction ends.
func (t *tx) LockChannel(ctx context.Context, channelID string) (*chat.Channel, error) {
	return t.channel(ctx, channelID, true)
}

func (t *tx) channel(ctx context.Context, channelID string, lock bool) (*chat.Channel, error) {
	if c, ok := t.prefetchedChannel(channelID); ok {
		if c == nil {
			return nil, chat.Errorf(chat.CodeNotFound, "channel %q not found", channelID)
		}
		return c, nil
	}
	tmpl := `SELECT ` + channelCols + ` FROM {s}channels WHERE channel_id = $1`
	if lock {
		tmpl += t.lockRows()
	}
	cs, err := t.channels(ctx, tmpl, channelID)
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		return nil, chat.Errorf(chat.CodeNotFound, "channel %q not found", channelID)
	}
	if lock {
		t.lockedChannel(channelID)
	}
	return cs[0], nil
}

// GetChannels reads without locks.
func (t *tx) GetChannels(ctx context.Context, ids []string) ([]*chat.Channel, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	cs, err := t.channels(ctx, `SELECT `+channelCols+` FROM {s}channels WHERE channel_id = ANY($1::text[])
		ORDER BY channel_id`, textArray(ids))
	if err != nil {
		return nil, err
	}
	return inIDOrder(ids, cs, func(c *chat.Channel) string { return c.ChannelID }, nil), nil
}

// UpdateChannel writes the mutable fields; the counters are left as they
// are, so concurrent posts and membership changes are kept.
func (t *tx) UpdateChannel(ctx context.Context, c *chat.Channel) error {
	md, err := jsonArg(c.Metadata)
	if err != nil {
		return err
	}
	n, err := t.exec(ctx, `UPDATE {s}channels SET display_name = $2, metadata = $3, tags = $4,
		mute_timeout = $5, last_activity = $6, updated_at = $7, is_closed = $8,
		is_rate_limited = $9, rate_limit_window = $10
		WHERE channel_id = $1`,
		c.ChannelID, c.DisplayName, md, tagsArg(c.Tags), timePtrArg(c.MuteTimeout),
		timeArg(c.LastActivity), timeArg(c.UpdatedAt), c.IsClosed, c.IsRateLimited, c.RateLimitWindow)
	if err != nil {
		return err
	}
	if n == 0 {
		return chat.Errorf(chat.CodeNotFound, "channel %q not found", c.ChannelID)
	}
	t.lockedChannel(c.ChannelID)
	return t.writeChannelKeys(ctx, c)
}

// NextSegment relies on the row lock of the UPDATE: concurrent callers on
// one channel, in any process, queue behind each other until the holder
// commits or rolls back, and then (READ COMMITTED) increment the committed
// count, so segments are unique and, since a rolled back increment is
// never seen, gapless.
func (t *tx) NextSegment(ctx context.Context, channelID string, now time.Time) (*chat.Channel, error) {
	var c *chat.Channel
	err := t.query(ctx, `UPDATE {s}channels
		SET message_count = message_count + 1, last_activity = $2, updated_at = $2
		WHERE channel_id = $1 RETURNING `+channelCols, []any{channelID, now.UTC().Truncate(time.Millisecond)},
		func(r *sql.Rows) error {
			var err error
			c, err = scanChannel(r)
			return err
		})
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, chat.Errorf(chat.CodeNotFound, "channel %q not found", channelID)
	}
	t.lockedChannel(channelID)
	return c, nil
}

// argList collects positional arguments of a dynamic query.
type argList []any

func (a *argList) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

func (t *tx) QueryChannels(ctx context.Context, f chat.ChannelFilter) ([]*chat.Channel, error) {
	q, args := channelQuery(f)
	return t.channels(ctx, q, args...)
}

// channelQuery builds the statement of QueryChannels. Without MemberOf it
// walks channels_created_idx. With MemberOf it walks the user's member
// relations in channel_users_member_idx, whose channel_created_at is the
// channel's created_at (kept by triggers, migration 0004), so the keyset
// bounds and the order are on the relation's copy and a page reads about
// as many relations as it returns, however many channels the user is in.
func channelQuery(f chat.ChannelFilter) (string, []any) {
	var (
		args  argList
		where []string
	)
	from := "{s}channels c"
	created, id := "c.created_at", "c.channel_id"
	if f.MemberOf != "" {
		from = "{s}channel_users cu JOIN {s}channels c ON c.channel_id = cu.channel_id"
		created, id = "cu.channel_created_at", "cu.channel_id"
		where = append(where, "cu.user_id = "+args.add(f.MemberOf), "cu.membership = 'member'")
	}
	if !f.IncludeClosed {
		where = append(where, "NOT c.is_closed")
	}
	if f.Search != "" {
		// A prefix range on channel_keys.key, never LIKE. The matching
		// ids are computed once, as an array, then looked up by the
		// channels' primary key: a prepared statement's generic plan,
		// made without knowing how many keys the range holds, would
		// otherwise hash-join a sequential scan of every channel.
		where = append(where, "c.channel_id = ANY (ARRAY(SELECT k.channel_id FROM {s}channel_keys k WHERE "+wordCond(&args, "k.key", f.Search, true)+"))")
	}
	if f.NotMemberOf != "" {
		where = append(where, `NOT EXISTS (SELECT 1 FROM {s}channel_users nm WHERE nm.channel_id = c.channel_id
			AND nm.user_id = `+args.add(f.NotMemberOf)+` AND nm.membership = 'member')`)
	}
	if len(f.Tags) > 0 {
		where = append(where, "c.tags && "+args.add(textArray(f.Tags))+"::text[]")
	}
	if len(f.ExcludeTags) > 0 {
		where = append(where, "NOT (c.tags && "+args.add(textArray(f.ExcludeTags))+"::text[])")
	}
	key := "(" + created + ", " + id + ")"
	if f.After != nil {
		where = append(where, key+" < ("+args.add(msTime(f.After.CreatedAt))+", "+args.add(f.After.ChannelID)+")")
	}
	if f.Before != nil {
		where = append(where, key+" > ("+args.add(msTime(f.Before.CreatedAt))+", "+args.add(f.Before.ChannelID)+")")
	}
	q := "SELECT " + prefixCols("c.", channelCols) + " FROM " + from
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	if f.Before != nil {
		q += " ORDER BY " + created + ", " + id
	} else {
		q += " ORDER BY " + created + " DESC, " + id + " DESC"
	}
	q += limitOffset(&args, f.Limit, f.Offset)
	return q, args
}

func limitOffset(args *argList, limit, offset int) string {
	s := ""
	if limit > 0 {
		s += " LIMIT " + args.add(limit)
	}
	if offset > 0 {
		s += " OFFSET " + args.add(offset)
	}
	return s
}

// prefixCols qualifies a comma-separated column list with a table alias.
func prefixCols(alias, cols string) string {
	parts := strings.Split(cols, ",")
	for i, p := range parts {
		parts[i] = alias + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

// ---- relations ----

const channelUserCols = `channel_id, user_id, membership, mute_timeout, created_at, updated_at`

// channelUserSel adds to channelUserCols (what PutChannelUser writes) the
// read marker, which only MarkRead writes.
const channelUserSel = channelUserCols + `, read_to_segment`

func (t *tx) channelUsers(ctx context.Context, tmpl string, args ...any) ([]*chat.ChannelUser, error) {
	var out []*chat.ChannelUser
	err := t.query(ctx, tmpl, args, func(r *sql.Rows) error {
		cu, err := scanChannelUser(r)
		if err == nil {
			out = append(out, cu)
		}
		return err
	})
	return out, err
}

// scanChannelUser scans the columns of channelUserSel.
func scanChannelUser(r scanner) (*chat.ChannelUser, error) {
	var (
		cu               chat.ChannelUser
		mute             sql.NullTime
		created, updated time.Time
	)
	if err := r.Scan(&cu.ChannelID, &cu.UserID, &cu.Membership, &mute, &created, &updated, &cu.ReadToSegment); err != nil {
		return nil, err
	}
	cu.MuteTimeout = ctp(mute)
	cu.CreatedAt, cu.UpdatedAt = ct(created), ct(updated)
	return &cu, nil
}

// lockChannel takes the row lock of a channel (in an Update) before its
// relations are read or written, unless the transaction holds it already.
// Every reader and writer of a channel's relations in an Update holds it,
// so the statements that follow (each with a fresh READ COMMITTED
// snapshot) see every committed relation, a relation read as missing stays
// missing until the transaction ends, and memberCount stays exact. The
// channel first, then its relations: every transaction takes them in this
// order.
func (t *tx) lockChannel(ctx context.Context, channelID string) error {
	if !t.write || t.heldChannels[channelID] {
		return nil
	}
	if _, err := t.exec(ctx, `SELECT 1 FROM {s}channels WHERE channel_id = $1 FOR NO KEY UPDATE`, channelID); err != nil {
		return err
	}
	t.lockedChannel(channelID)
	return nil
}

// LockChannelUser implements chat.LockStore: in an Update, the channel's
// row and then the relation's are held until the transaction ends.
func (t *tx) LockChannelUser(ctx context.Context, channelID, userID string) (*chat.ChannelUser, error) {
	return t.getChannelUser(ctx, channelID, userID, true)
}

// GetChannelUser reads the relation without a lock (a relation
// PrefetchPost read, locked in an Update, is served as it is).
func (t *tx) GetChannelUser(ctx context.Context, channelID, userID string) (*chat.ChannelUser, error) {
	return t.getChannelUser(ctx, channelID, userID, false)
}

func (t *tx) getChannelUser(ctx context.Context, channelID, userID string, lock bool) (*chat.ChannelUser, error) {
	cu, ok := t.prefetchedChannelUser(channelID, userID)
	if !ok {
		var err error
		if cu, err = t.channelUser(ctx, channelID, userID, lock); err != nil {
			return nil, err
		}
	}
	if cu == nil {
		return nil, chat.Errorf(chat.CodeNotFound, "user %q has no relation to channel %q", userID, channelID)
	}
	return cu, nil
}

// channelUser reads a relation, or nil. To lock it in an Update that does
// not hold the channel's row yet, one statement locks the channel row and then the
// relation. That statement's snapshot may predate the channel lock it
// waited for, so a relation it finds missing (perhaps inserted or deleted
// by the transaction it waited for) is read again by a statement of its
// own, which sees every relation committed before the lock was granted.
// One it finds present is current: the row lock rechecks the newest
// version of a row that changed meanwhile.
func (t *tx) channelUser(ctx context.Context, channelID, userID string, lock bool) (*chat.ChannelUser, error) {
	if lock && t.write && !t.heldChannels[channelID] {
		cus, err := t.channelUsers(ctx, `WITH c AS MATERIALIZED (
				SELECT 1 FROM {s}channels WHERE channel_id = $1 FOR NO KEY UPDATE
			)
			SELECT `+channelUserSel+` FROM {s}channel_users
			WHERE channel_id = $1 AND user_id = $2 AND EXISTS (SELECT FROM c) FOR NO KEY UPDATE`, channelID, userID)
		if err != nil {
			return nil, err
		}
		t.lockedChannel(channelID)
		if len(cus) > 0 {
			return cus[0], nil
		}
	}
	tmpl := `SELECT ` + channelUserSel + ` FROM {s}channel_users WHERE channel_id = $1 AND user_id = $2`
	if lock {
		tmpl += t.lockRows()
	}
	cus, err := t.channelUsers(ctx, tmpl, channelID, userID)
	if err != nil || len(cus) == 0 {
		return nil, err
	}
	return cus[0], nil
}

// GetChannelUsers reads the relations without locks.
func (t *tx) GetChannelUsers(ctx context.Context, channelID string, userIDs []string) ([]*chat.ChannelUser, error) {
	return t.getChannelUsers(ctx, channelID, userIDs, false)
}

// LockChannelUsers implements chat.LockStore: in an Update, the channel's
// row and then the relations are held until the transaction ends.
func (t *tx) LockChannelUsers(ctx context.Context, channelID string, userIDs []string) ([]*chat.ChannelUser, error) {
	return t.getChannelUsers(ctx, channelID, userIDs, true)
}

func (t *tx) getChannelUsers(ctx context.Context, channelID string, userIDs []string, lock bool) ([]*chat.ChannelUser, error) {
	if userIDs != nil && len(userIDs) == 0 {
		return nil, nil
	}
	suffix := ""
	if lock {
		if err := t.lockChannel(ctx, channelID); err != nil {
			return nil, err
		}
		suffix = t.lockRows()
	}
	if userIDs == nil {
		return t.channelUsers(ctx, `SELECT `+channelUserSel+` FROM {s}channel_users
			WHERE channel_id = $1 ORDER BY user_id`+suffix, channelID)
	}
	return t.channelUsers(ctx, `SELECT `+channelUserSel+` FROM {s}channel_users
		WHERE channel_id = $1 AND user_id = ANY($2::text[]) ORDER BY user_id`+suffix, channelID, textArray(userIDs))
}

// ListMemberships reads without locks: it spans channels.
func (t *tx) ListMemberships(ctx context.Context, userID string, channelIDs []string) ([]*chat.ChannelUser, error) {
	if channelIDs == nil {
		return t.channelUsers(ctx, `SELECT `+channelUserSel+` FROM {s}channel_users
			WHERE user_id = $1 ORDER BY channel_id`, userID)
	}
	if len(channelIDs) == 0 {
		return nil, nil
	}
	return t.channelUsers(ctx, `SELECT `+channelUserSel+` FROM {s}channel_users
		WHERE user_id = $1 AND channel_id = ANY($2::text[]) ORDER BY channel_id`, userID, textArray(channelIDs))
}

// MarkRead raises the marker in one statement, under the channel's row
// lock (the channel first, then the relation, as every transaction):
// GREATEST keeps it from moving back whatever the order of concurrent
// calls. PutChannelUser never writes the marker.
func (t *tx) MarkRead(ctx context.Context, channelID, userID string, segment int64) (*chat.ChannelUser, error) {
	if err := t.lockChannel(ctx, channelID); err != nil {
		return nil, err
	}
	cus, err := t.channelUsers(ctx, `UPDATE {s}channel_users SET read_to_segment = GREATEST(read_to_segment, $3)
		WHERE channel_id = $1 AND user_id = $2 RETURNING `+channelUserSel, channelID, userID, segment)
	if err != nil {
		return nil, err
	}
	if len(cus) == 0 {
		return nil, chat.Errorf(chat.CodeNotFound, "user %q has no relation to channel %q", userID, channelID)
	}
	return cus[0], nil
}

// unreadQuery is the statement of CountUnread; its arguments are
// unreadArgs. Each relation reads its channel by primary key (a join
// would let the planner hash the whole channels table for a page).
const unreadQuery = `SELECT COALESCE((SELECT c.message_count FROM {s}channels c WHERE c.channel_id = q.ch), 0),
		(SELECT count(*) FROM {s}messages m WHERE m.channel_id = q.ch AND m.user_id = q.u AND m.channel_segment > q.r),
		(SELECT count(*) FROM {s}messages m WHERE m.channel_id = q.ch AND m.is_deleted AND m.channel_segment > q.r
			AND m.user_id <> q.u)
	FROM unnest($1::text[], $2::text[], $3::bigint[]) WITH ORDINALITY AS q(ch, u, r, i)
	ORDER BY q.i`

// unreadArgs returns the channel ids, user ids and markers of cus as the
// three arrays of unreadQuery.
func unreadArgs(cus []*chat.ChannelUser) []any {
	chs, us, rs := make([]string, len(cus)), make([]string, len(cus)), make([]int64, len(cus))
	for i, cu := range cus {
		chs[i], us[i], rs[i] = cu.ChannelID, cu.UserID, cu.ReadToSegment
	}
	return []any{textArray(chs), textArray(us), pq.Int64Array(rs)}
}

// CountUnread reads, in one statement, each relation's channel
// messageCount, the user's own messages (messages_author_idx) and the
// deleted messages of others (messages_deleted_idx) above its marker:
// index range counts, never a read of the unread messages themselves. It
// takes no locks.
func (t *tx) CountUnread(ctx context.Context, cus []*chat.ChannelUser) ([]chat.UnreadFacts, error) {
	if len(cus) == 0 {
		return nil, nil
	}
	out := make([]chat.UnreadFacts, 0, len(cus))
	err := t.query(ctx, unreadQuery, unreadArgs(cus), func(r *sql.Rows) error {
		var f chat.UnreadFacts
		err := r.Scan(&f.MessageCount, &f.Own, &f.DeletedOthers)
		out = append(out, f)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(out) != len(cus) {
		return nil, fmt.Errorf("postgres: unread counts: %d rows for %d relations", len(out), len(cus))
	}
	return out, nil
}

// countPerRelation runs query, a statement over unreadArgs(cus) that
// answers one count per relation, in order.
func (t *tx) countPerRelation(ctx context.Context, what, query string, cus []*chat.ChannelUser) ([]int64, error) {
	if len(cus) == 0 {
		return nil, nil
	}
	out := make([]int64, 0, len(cus))
	err := t.query(ctx, query, unreadArgs(cus), func(r *sql.Rows) error {
		var n int64
		err := r.Scan(&n)
		out = append(out, n)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(out) != len(cus) {
		return nil, fmt.Errorf("postgres: %s: %d rows for %d relations", what, len(out), len(cus))
	}
	return out, nil
}

// PutChannelUser inserts or replaces the relation under the channel's row
// lock.
func (t *tx) PutChannelUser(ctx context.Context, cu *chat.ChannelUser) error {
	if err := t.lockChannel(ctx, cu.ChannelID); err != nil {
		return err
	}
	_, err := t.exec(ctx, `INSERT INTO {s}channel_users (`+channelUserCols+`) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (channel_id, user_id) DO UPDATE SET membership = EXCLUDED.membership,
			mute_timeout = EXCLUDED.mute_timeout, created_at = EXCLUDED.created_at,
			updated_at = EXCLUDED.updated_at`,
		cu.ChannelID, cu.UserID, cu.Membership, timePtrArg(cu.MuteTimeout), timeArg(cu.CreatedAt), timeArg(cu.UpdatedAt))
	return err
}

// DeleteChannelUser removes the relation (if any) under the channel's row
// lock.
func (t *tx) DeleteChannelUser(ctx context.Context, channelID, userID string) error {
	if err := t.lockChannel(ctx, channelID); err != nil {
		return err
	}
	_, err := t.exec(ctx, `DELETE FROM {s}channel_users WHERE channel_id = $1 AND user_id = $2`, channelID, userID)
	return err
}

func (t *tx) DeleteChannelUsers(ctx context.Context, channelID string) error {
	if err := t.lockChannel(ctx, channelID); err != nil {
		return err
	}
	_, err := t.exec(ctx, `DELETE FROM {s}channel_users WHERE channel_id = $1`, channelID)
	return err
}

func (t *tx) SetMemberCount(ctx context.Context, channelID string, n int) error {
	_, err := t.exec(ctx, `UPDATE {s}channels SET member_count = $2 WHERE channel_id = $1`, channelID, n)
	return err
}

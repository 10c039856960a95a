package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/lib/pq"
)

const channelCols = `channel_id, type, display_name, is_distinct, metadata, tags,
	mute_timeout, last_activity, created_at, updated_at, is_rate_limited, rate_limit_window,
	member_count, message_count, is_closed`

// channelSel is what reads return: the columns and the row version.
const channelSel = channelCols + `, version`

func scanChannel(r scanner) (*chat.Channel, int64, error) {
	var (
		c                      chat.Channel
		md                     []byte
		tags                   pq.StringArray
		mute                   sql.NullTime
		last, created, updated time.Time
		version                int64
	)
	if err := r.Scan(&c.ChannelID, &c.Type, &c.DisplayName, &c.IsDistinct, &md, &tags,
		&mute, &last, &created, &updated, &c.IsRateLimited, &c.RateLimitWindow,
		&c.MemberCount, &c.MessageCount, &c.IsClosed, &version); err != nil {
		return nil, 0, err
	}
	var err error
	if c.Metadata, err = jsonMap(md); err != nil {
		return nil, 0, err
	}
	c.Tags = tagsOut(tags)
	c.MuteTimeout = ctp(mute)
	c.LastActivity, c.CreatedAt, c.UpdatedAt = ct(last), ct(created), ct(updated)
	return &c, version, nil
}

func (t *tx) channels(ctx context.Context, tmpl string, args ...any) ([]*chat.Channel, error) {
	var out []*chat.Channel
	err := t.query(ctx, tmpl, args, func(r *sql.Rows) error {
		c, v, err := scanChannel(r)
		if err == nil {
			out = append(out, c)
			t.seen(channelKey(c.ChannelID), v)
		}
		return err
	})
	return out, err
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
	t.wrote(channelKey(c.ChannelID), 1)
	return nil
}

func (t *tx) GetChannel(ctx context.Context, channelID string) (*chat.Channel, error) {
	cs, err := t.channels(ctx, `SELECT `+channelSel+` FROM {s}channels WHERE channel_id = $1`+t.forUpdate(), channelID)
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		return nil, chat.Errorf(chat.CodeNotFound, "channel %q not found", channelID)
	}
	return cs[0], nil
}

func (t *tx) GetChannels(ctx context.Context, ids []string) ([]*chat.Channel, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	cs, err := t.channels(ctx, `SELECT `+channelSel+` FROM {s}channels WHERE channel_id = ANY($1::text[])
		ORDER BY channel_id`+t.forUpdate(), textArray(ids))
	if err != nil {
		return nil, err
	}
	return inIDOrder(ids, cs, func(c *chat.Channel) string { return c.ChannelID }, nil), nil
}

// UpdateChannel writes only when the channel still has the version this
// transaction read (when it read it); otherwise the transaction runs again.
func (t *tx) UpdateChannel(ctx context.Context, c *chat.Channel) error {
	md, err := jsonArg(c.Metadata)
	if err != nil {
		return err
	}
	key := channelKey(c.ChannelID)
	want := t.expected(key)
	var v []int64
	err = t.query(ctx, `UPDATE {s}channels SET display_name = $2, metadata = $3, tags = $4,
		mute_timeout = $5, last_activity = $6, updated_at = $7, is_closed = $8,
		is_rate_limited = $10, rate_limit_window = $11, version = version + 1
		WHERE channel_id = $1 AND ($9::bigint IS NULL OR version = $9) RETURNING version`,
		[]any{c.ChannelID, c.DisplayName, md, tagsArg(c.Tags), timePtrArg(c.MuteTimeout),
			timeArg(c.LastActivity), timeArg(c.UpdatedAt), c.IsClosed, want, c.IsRateLimited, c.RateLimitWindow}, scanVersion(&v))
	if err != nil {
		return err
	}
	if len(v) == 0 {
		if want != nil {
			found, err := t.exists(ctx, `SELECT 1 FROM {s}channels WHERE channel_id = $1`, c.ChannelID)
			if err != nil {
				return err
			}
			if found {
				return t.conflict("channel " + strconv.Quote(c.ChannelID))
			}
		}
		return chat.Errorf(chat.CodeNotFound, "channel %q not found", c.ChannelID)
	}
	t.wrote(key, v[0])
	return nil
}

// NextSegment relies on the row lock of the UPDATE: concurrent callers on
// one channel queue behind each other until the holder commits or rolls
// back, and then (READ COMMITTED) re-read the committed count, so segments
// are unique and, since a rolled back increment is never seen, gapless.
// It writes lastActivity and updatedAt, so it bumps the row version.
func (t *tx) NextSegment(ctx context.Context, channelID string, now time.Time) (*chat.Channel, error) {
	var (
		c   *chat.Channel
		ver int64
	)
	err := t.query(ctx, `UPDATE {s}channels
		SET message_count = message_count + 1, last_activity = $2, updated_at = $2, version = version + 1
		WHERE channel_id = $1 RETURNING `+channelSel, []any{channelID, now.UTC().Truncate(time.Millisecond)},
		func(r *sql.Rows) error {
			var err error
			c, ver, err = scanChannel(r)
			return err
		})
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, chat.Errorf(chat.CodeNotFound, "channel %q not found", channelID)
	}
	t.wrote(channelKey(channelID), ver)
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
	q := "SELECT " + prefixCols("c.", channelSel) + " FROM " + from
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
// row version and the read marker, which only MarkRead writes.
const channelUserSel = channelUserCols + `, version, read_to_segment`

func (t *tx) channelUsers(ctx context.Context, tmpl string, args ...any) ([]*chat.ChannelUser, error) {
	var out []*chat.ChannelUser
	err := t.query(ctx, tmpl, args, func(r *sql.Rows) error {
		var (
			cu               chat.ChannelUser
			mute             sql.NullTime
			created, updated time.Time
			version          int64
		)
		if err := r.Scan(&cu.ChannelID, &cu.UserID, &cu.Membership, &mute, &created, &updated, &version, &cu.ReadToSegment); err != nil {
			return err
		}
		cu.MuteTimeout = ctp(mute)
		cu.CreatedAt, cu.UpdatedAt = ct(created), ct(updated)
		t.seen(channelUserKey(cu.ChannelID, cu.UserID), version)
		out = append(out, &cu)
		return nil
	})
	return out, err
}

// GetChannelUser also records a missing relation (version 0), so that a
// later PutChannelUser of this transaction does not overwrite a relation
// that another transaction created meanwhile.
// LockChannelUser implements chat.ChannelUserLocker: in an Update, a
// row lock on the channel-user row until the transaction ends.
func (t *tx) LockChannelUser(ctx context.Context, channelID, userID string) error {
	if !t.write {
		return nil
	}
	_, err := t.exists(ctx, `SELECT 1 FROM {s}channel_users WHERE channel_id = $1 AND user_id = $2 FOR UPDATE`, channelID, userID)
	return err
}

func (t *tx) GetChannelUser(ctx context.Context, channelID, userID string) (*chat.ChannelUser, error) {
	cus, err := t.channelUsers(ctx, `SELECT `+channelUserSel+` FROM {s}channel_users
		WHERE channel_id = $1 AND user_id = $2`+t.forUpdate(), channelID, userID)
	if err != nil {
		return nil, err
	}
	if len(cus) == 0 {
		t.seen(channelUserKey(channelID, userID), 0)
		return nil, chat.Errorf(chat.CodeNotFound, "user %q has no relation to channel %q", userID, channelID)
	}
	return cus[0], nil
}

func (t *tx) GetChannelUsers(ctx context.Context, channelID string, userIDs []string) ([]*chat.ChannelUser, error) {
	if userIDs == nil {
		return t.channelUsers(ctx, `SELECT `+channelUserSel+` FROM {s}channel_users
			WHERE channel_id = $1 ORDER BY user_id`+t.forUpdate(), channelID)
	}
	if len(userIDs) == 0 {
		return nil, nil
	}
	cus, err := t.channelUsers(ctx, `SELECT `+channelUserSel+` FROM {s}channel_users
		WHERE channel_id = $1 AND user_id = ANY($2::text[]) ORDER BY user_id`+t.forUpdate(), channelID, textArray(userIDs))
	if err != nil {
		return nil, err
	}
	for _, id := range userIDs {
		t.seen(channelUserKey(channelID, id), 0) // no-op for the ones found
	}
	return cus, nil
}

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

// MarkRead raises the marker in one statement: GREATEST keeps it from
// moving back whatever the order of concurrent calls, and the row lock of
// the UPDATE orders them. The row version is left alone: no other field
// changes, and PutChannelUser never writes the marker.
func (t *tx) MarkRead(ctx context.Context, channelID, userID string, segment int64) (*chat.ChannelUser, error) {
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

// UnreadCounts counts, in one statement, each relation's segments above
// its marker less the user's own messages (messages_author_idx) and the
// deleted messages of others (messages_deleted_idx) above it: index range
// counts, never a read of the unread messages themselves.
func (t *tx) UnreadCounts(ctx context.Context, cus []*chat.ChannelUser) ([]int64, error) {
	if len(cus) == 0 {
		return nil, nil
	}
	chs, us, rs := make([]string, len(cus)), make([]string, len(cus)), make([]int64, len(cus))
	for i, cu := range cus {
		chs[i], us[i], rs[i] = cu.ChannelID, cu.UserID, cu.ReadToSegment
	}
	out := make([]int64, 0, len(cus))
	err := t.query(ctx, `SELECT GREATEST(0, COALESCE(c.message_count, q.r) - q.r
			- (SELECT count(*) FROM {s}messages m WHERE m.channel_id = q.ch AND m.user_id = q.u AND m.channel_segment > q.r)
			- (SELECT count(*) FROM {s}messages m WHERE m.channel_id = q.ch AND m.is_deleted AND m.channel_segment > q.r
				AND m.user_id <> q.u))
		FROM unnest($1::text[], $2::text[], $3::bigint[]) WITH ORDINALITY AS q(ch, u, r, i)
		LEFT JOIN {s}channels c ON c.channel_id = q.ch
		ORDER BY q.i`, []any{textArray(chs), textArray(us), pq.Int64Array(rs)}, func(r *sql.Rows) error {
		var n int64
		err := r.Scan(&n)
		out = append(out, n)
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

// lockChannel takes the row lock of a channel before its relations change.
// Every writer of a channel's relations holds it, so the statements that
// follow (each with a fresh READ COMMITTED snapshot) see every committed
// relation and memberCount stays exact under concurrency.
func (t *tx) lockChannel(ctx context.Context, channelID string) error {
	t.s.pred.forget(channelID, false) // memberCount is about to change
	_, err := t.exec(ctx, `SELECT 1 FROM {s}channels WHERE channel_id = $1 FOR NO KEY UPDATE`, channelID)
	return err
}

// memberDelta is the CTE that keeps memberCount in step with a write of
// one relation: old is the relation before, up the written row.
const memberDelta = `, cnt AS (
	UPDATE {s}channels SET member_count = member_count + ($3 = 'member')::int
		- COALESCE((SELECT (membership = 'member')::int FROM old), 0)
	WHERE channel_id = $1 AND EXISTS (SELECT 1 FROM up)
)
SELECT version FROM up`

// PutChannelUser inserts or replaces the relation. When this transaction
// read the relation, the write happens only if it is unchanged (or, when
// it was read as missing, still missing); otherwise the transaction runs
// again.
func (t *tx) PutChannelUser(ctx context.Context, cu *chat.ChannelUser) error {
	if err := t.lockChannel(ctx, cu.ChannelID); err != nil {
		return err
	}
	key := channelUserKey(cu.ChannelID, cu.UserID)
	want := t.expected(key)
	args := []any{cu.ChannelID, cu.UserID, cu.Membership, timePtrArg(cu.MuteTimeout), timeArg(cu.CreatedAt), timeArg(cu.UpdatedAt)}
	var (
		v   []int64
		err error
	)
	if w, ok := want.(int64); ok && w > 0 {
		err = t.query(ctx, `WITH old AS (
				SELECT membership FROM {s}channel_users WHERE channel_id = $1 AND user_id = $2
			), up AS (
				UPDATE {s}channel_users SET membership = $3, mute_timeout = $4, created_at = $5, updated_at = $6,
					version = version + 1
				WHERE channel_id = $1 AND user_id = $2 AND version = $7 RETURNING version
			)`+memberDelta, append(args, w), scanVersion(&v))
	} else {
		err = t.query(ctx, `WITH old AS (
				SELECT membership FROM {s}channel_users WHERE channel_id = $1 AND user_id = $2
			), up AS (
				INSERT INTO {s}channel_users (`+channelUserCols+`) VALUES ($1, $2, $3, $4, $5, $6)
				ON CONFLICT (channel_id, user_id) DO UPDATE SET membership = EXCLUDED.membership,
					mute_timeout = EXCLUDED.mute_timeout, created_at = EXCLUDED.created_at,
					updated_at = EXCLUDED.updated_at, version = {s}channel_users.version + 1
				WHERE $7::boolean
				RETURNING version
			)`+memberDelta, append(args, want == nil), scanVersion(&v))
	}
	if err != nil {
		return err
	}
	if len(v) == 0 {
		return t.conflict(fmt.Sprintf("the relation of user %q to channel %q", cu.UserID, cu.ChannelID))
	}
	t.wrote(key, v[0])
	return nil
}

func (t *tx) DeleteChannelUser(ctx context.Context, channelID, userID string) error {
	if err := t.lockChannel(ctx, channelID); err != nil {
		return err
	}
	key := channelUserKey(channelID, userID)
	want := t.expected(key)
	var n int
	err := t.queryRow(ctx, `WITH del AS (
			DELETE FROM {s}channel_users WHERE channel_id = $1 AND user_id = $2
				AND ($3::bigint IS NULL OR version = $3)
			RETURNING membership
		), cnt AS (
			UPDATE {s}channels SET member_count = member_count - 1
			WHERE channel_id = $1 AND EXISTS (SELECT 1 FROM del WHERE membership = 'member')
		)
		SELECT count(*) FROM del`, []any{channelID, userID, want}, &n)
	if err != nil {
		return err
	}
	if n == 0 && want != nil {
		// Read as present: it changed or went away. Read as missing: fine
		// unless another transaction created it meanwhile.
		found, err := t.exists(ctx, `SELECT 1 FROM {s}channel_users WHERE channel_id = $1 AND user_id = $2`, channelID, userID)
		if err != nil {
			return err
		}
		if found || want.(int64) > 0 {
			return t.conflict(fmt.Sprintf("the relation of user %q to channel %q", userID, channelID))
		}
	}
	t.wrote(key, 0)
	return nil
}

func (t *tx) DeleteChannelUsers(ctx context.Context, channelID string) error {
	if err := t.lockChannel(ctx, channelID); err != nil {
		return err
	}
	return t.query(ctx, `WITH del AS (
			DELETE FROM {s}channel_users WHERE channel_id = $1 RETURNING user_id
		), cnt AS (
			UPDATE {s}channels SET member_count = 0 WHERE channel_id = $1 AND member_count <> 0
		)
		SELECT user_id FROM del`, []any{channelID}, func(r *sql.Rows) error {
		var id string
		err := r.Scan(&id)
		t.wrote(channelUserKey(channelID, id), 0)
		return err
	})
}

var _ chat.ChannelUserLocker = (*tx)(nil)

package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
)

const pushCols = `push_id, message_id, channel_id, user_id, device_id, title, body, state, attempts, last_error,
	next_attempt_at, lease_owner, lease_until, created_at, updated_at`

func (t *tx) pushes(ctx context.Context, tmpl string, extra bool, args ...any) ([]*chat.PushDelivery, error) {
	var out []*chat.PushDelivery
	err := t.query(ctx, tmpl, args, func(r *sql.Rows) error {
		var (
			p                      chat.PushDelivery
			next, created, updated time.Time
			lease                  sql.NullTime
		)
		dest := []any{&p.PushID, &p.MessageID, &p.ChannelID, &p.UserID, &p.DeviceID, &p.Title, &p.Body, &p.State,
			&p.Attempts, &p.LastError, &next, &p.LeaseOwner, &lease, &created, &updated}
		if extra {
			dest = append(dest, &p.Provider, &p.Token)
		}
		if err := r.Scan(dest...); err != nil {
			return err
		}
		p.NextAttemptAt, p.CreatedAt, p.UpdatedAt, p.LeaseUntil = ct(next), ct(created), ct(updated), ctp(lease)
		out = append(out, &p)
		return nil
	})
	return out, err
}

// ListPushTargets implements chat.PushStore: the channel's members
// (primary key range) joined with their devices (devices_user_idx) and
// levels (primary key).
func (t *tx) ListPushTargets(ctx context.Context, channelID, excludeUserID string) ([]*chat.PushTarget, error) {
	if p := t.targets; p != nil && p.channelID == channelID && p.userID == excludeUserID {
		// Read by PrefetchPost in this transaction, with the post's
		// other rows: the create costs no round trip more.
		t.targets = nil
		return p.list, nil
	}
	var out []*chat.PushTarget
	err := t.query(ctx, `SELECT cu.user_id, d.device_id, coalesce(nu.level, ''), coalesce(nc.level, '')
		`+pushTargetsFrom+`
		ORDER BY cu.user_id, d.device_id`, []any{channelID, excludeUserID}, func(r *sql.Rows) error {
		var p chat.PushTarget
		var own, ch string
		if err := r.Scan(&p.UserID, &p.DeviceID, &own, &ch); err != nil {
			return err
		}
		p.UserLevel, p.ChannelLevel = chat.NotificationLevel(own), chat.NotificationLevel(ch)
		out = append(out, &p)
		return nil
	})
	return out, err
}

// EnqueuePushes implements chat.PushStore with one statement (unnest of
// column arrays); the join with devices leaves out pushes of a device
// that no longer exists.
func (t *tx) EnqueuePushes(ctx context.Context, ps []*chat.PushDelivery) error {
	if len(ps) == 0 {
		return nil
	}
	n := len(ps)
	ids, msgs, chs, users, devs, titles, bodies, states := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	nexts, createds, updateds := make([]string, n), make([]string, n), make([]string, n)
	for i, p := range ps {
		ids[i], msgs[i], chs[i], users[i], devs[i], titles[i], bodies[i], states[i] = p.PushID, p.MessageID,
			p.ChannelID, p.UserID, p.DeviceID, p.Title, p.Body, p.State
		nexts[i], createds[i], updateds[i] = timeText(p.NextAttemptAt.Time), timeText(p.CreatedAt.Time), timeText(p.UpdatedAt.Time)
	}
	_, err := t.exec(ctx, `INSERT INTO {s}pushes (push_id, message_id, channel_id, user_id, device_id, title, body,
			state, next_attempt_at, created_at, updated_at)
		SELECT x.i, x.m, x.c, x.u, x.d, x.t, x.b, x.s, x.n::timestamptz, x.cr::timestamptz, x.up::timestamptz
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
			$9::text[], $10::text[], $11::text[]) AS x(i, m, c, u, d, t, b, s, n, cr, up)
		JOIN {s}devices dv ON dv.device_id = x.d
		ON CONFLICT DO NOTHING`,
		textArray(ids), textArray(msgs), textArray(chs), textArray(users), textArray(devs), textArray(titles),
		textArray(bodies), textArray(states), textArray(nexts), textArray(createds), textArray(updateds))
	return err
}

// ClaimPushes implements chat.PushStore: FOR UPDATE SKIP LOCKED over
// pushes_due_idx, so concurrent claims take different pushes.
func (t *tx) ClaimPushes(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]*chat.PushDelivery, error) {
	var lim any
	if limit > 0 {
		lim = limit
	}
	ps, err := t.pushes(ctx, `WITH c AS MATERIALIZED (
			SELECT push_id FROM {s}pushes
			WHERE state = 'pending' AND next_attempt_at <= $3 AND (lease_until IS NULL OR lease_until <= $3)
			ORDER BY next_attempt_at, push_id
			LIMIT $4
			FOR UPDATE SKIP LOCKED
		)
		UPDATE {s}pushes p SET lease_owner = $1, lease_until = $2
		FROM c, {s}devices d WHERE p.push_id = c.push_id AND d.device_id = p.device_id
		RETURNING `+prefixCols("p.", pushCols)+`, d.provider, d.token`, true,
		owner, msTime(now.Add(lease)), msTime(now), lim)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ps, func(a, b *chat.PushDelivery) int {
		return cmp.Or(a.NextAttemptAt.Compare(b.NextAttemptAt.Time), cmp.Compare(a.PushID, b.PushID))
	})
	return ps, nil
}

// FinishPush implements chat.PushStore in one statement: the update, and
// whether the push exists when the update matched nothing.
func (t *tx) FinishPush(ctx context.Context, owner, pushID, state, lastError string, nextAttemptAt, now time.Time) error {
	var updated, exists int
	err := t.queryRow(ctx, `WITH up AS (
			UPDATE {s}pushes x SET state = $3, attempts = x.attempts + 1, last_error = $4,
				next_attempt_at = CASE WHEN $3 = 'pending' THEN $5 ELSE x.next_attempt_at END,
				lease_owner = '', lease_until = NULL, updated_at = $6
			WHERE x.push_id = $1 AND x.state = 'pending' AND x.lease_owner = $2 AND x.lease_owner <> ''
			RETURNING 1
		)
		SELECT (SELECT count(*) FROM up), (SELECT count(*) FROM {s}pushes WHERE push_id = $1)`,
		[]any{pushID, owner, state, lastError, msTime(nextAttemptAt), msTime(now)}, &updated, &exists)
	switch {
	case err != nil:
		return err
	case updated == 1:
		return nil
	case exists == 0:
		return chat.Errorf(chat.CodeNotFound, "push %q not found", pushID)
	}
	return chat.Errorf(chat.CodeConflict, "push %q is not leased by %q", pushID, owner)
}

// ListPushes implements chat.PushStore (pushes_message_device_key).
func (t *tx) ListPushes(ctx context.Context, messageID string) ([]*chat.PushDelivery, error) {
	return t.pushes(ctx, `SELECT `+pushCols+` FROM {s}pushes WHERE message_id = $1 ORDER BY push_id`, false, messageID)
}

// CountPushes implements chat.PushStore (pushes_due_idx).
func (t *tx) CountPushes(ctx context.Context, now time.Time) (chat.OutboxBacklog, error) {
	var b chat.OutboxBacklog
	err := t.queryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE next_attempt_at <= $1)
		FROM {s}pushes WHERE state = 'pending'`, []any{msTime(now)}, &b.Pending, &b.Due)
	return b, err
}

// EnqueuePushBatch implements chat.PushStore: one row, the ids as arrays.
func (t *tx) EnqueuePushBatch(ctx context.Context, b *chat.PushBatch) error {
	_, err := t.exec(ctx, `INSERT INTO {s}push_batches (message_id, channel_id, title, body, user_ids, device_ids, created_at)
		VALUES ($1,$2,$3,$4,$5,$6,$7)`, b.MessageID, b.ChannelID, b.Title, b.Body, textArray(b.UserIDs),
		textArray(b.DeviceIDs), msTime(b.CreatedAt.Time))
	return err
}

// expandPushBatchesSQL is ExpandPushBatches's statement: the
// batches are taken with FOR UPDATE SKIP LOCKED and deleted, their pushes
// inserted. The table churns like events_pending and is deleted from the
// same way, through its primary key only (relayMoveSQL).
const expandPushBatchesSQL = `WITH b AS (
			DELETE FROM {s}push_batches WHERE message_id = ANY (ARRAY(
				SELECT message_id FROM {s}push_batches ORDER BY created_at, message_id LIMIT $1 FOR UPDATE SKIP LOCKED))
			RETURNING message_id, channel_id, title, body, user_ids, device_ids, created_at
		), ins AS (
			INSERT INTO {s}pushes (push_id, message_id, channel_id, user_id, device_id, title, body, state,
				next_attempt_at, created_at, updated_at)
			SELECT b.message_id || '/' || x.d, b.message_id, b.channel_id, x.u, x.d, b.title, b.body, 'pending',
				b.created_at, b.created_at, b.created_at
			FROM b CROSS JOIN LATERAL unnest(b.user_ids, b.device_ids) AS x(u, d)
			JOIN {s}devices dv ON dv.device_id = x.d
			ON CONFLICT DO NOTHING
		)
		SELECT count(*) FROM b`

// ExpandPushBatches implements chat.PushStore in one statement
// (expandPushBatchesSQL).
func (t *tx) ExpandPushBatches(ctx context.Context, limit int) (int, error) {
	var lim any
	if limit > 0 {
		lim = limit
	}
	var n int
	err := t.queryRow(ctx, expandPushBatchesSQL, []any{lim}, &n)
	if err == nil {
		t.pushBatchesDeleted += n
	}
	return n, err
}

// deleteFinishedPushesSQL deletes up to $2 of the oldest pushes finished
// before $1, chosen through pushes_finished_idx and deleted through the
// primary key (deleteEventsSQL).
const deleteFinishedPushesSQL = `DELETE FROM {s}pushes WHERE push_id = ANY (ARRAY(SELECT push_id FROM {s}pushes
		WHERE state <> 'pending' AND updated_at < $1 ORDER BY updated_at, push_id LIMIT $2))`

// DeleteFinishedPushes implements chat.PushStore (deleteFinishedPushesSQL).
func (t *tx) DeleteFinishedPushes(ctx context.Context, before time.Time, limit int) (int, error) {
	var lim any
	if limit > 0 {
		lim = limit
	}
	n, err := t.exec(ctx, deleteFinishedPushesSQL, msTime(before), lim)
	return int(n), err
}

// pushTargetsFrom selects the devices of the channel's members ($1) but
// the author ($2), with their notification levels (user and channel).
const pushTargetsFrom = `FROM {s}channel_users cu
		JOIN {s}devices d ON d.user_id = cu.user_id
		LEFT JOIN {s}notification_levels nu ON nu.user_id = cu.user_id AND nu.channel_id = ''
		LEFT JOIN {s}notification_levels nc ON nc.user_id = cu.user_id AND nc.channel_id = cu.channel_id
		WHERE cu.channel_id = $1 AND cu.membership = 'member' AND cu.user_id <> $2`

// pushTargetsJSON is ListPushTargets's read as one JSON column of
// PrefetchPost's row: an array of [userId, deviceId, userLevel,
// channelLevel], NULL when there are none.
// The rows are sorted after decoding (decodePushTargets): an ORDER BY in
// the aggregate would set up a sort for every post.
const pushTargetsJSON = `(SELECT json_agg(json_build_array(cu.user_id, d.device_id,
		coalesce(nu.level, ''), coalesce(nc.level, '')))
		` + pushTargetsFrom + `)`

// prefetchedTargets are the push targets of a message by userID in
// channelID, read by PrefetchPost. Like every read of that statement they
// come from its snapshot: a member whose join committed while the post
// waited for the channel's lock is not among them (its first push is for
// the next message).
type prefetchedTargets struct {
	channelID, userID string
	list              []*chat.PushTarget
}

// decodePushTargets decodes pushTargetsJSON's column, in ListPushTargets's
// order (user, then device).
func decodePushTargets(b []byte) ([]*chat.PushTarget, error) {
	if b == nil {
		return nil, nil
	}
	var rows [][4]string
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, err
	}
	out := make([]*chat.PushTarget, len(rows))
	for i, r := range rows {
		out[i] = &chat.PushTarget{UserID: r[0], DeviceID: r[1],
			UserLevel: chat.NotificationLevel(r[2]), ChannelLevel: chat.NotificationLevel(r[3])}
	}
	slices.SortFunc(out, func(a, b *chat.PushTarget) int {
		return cmp.Or(strings.Compare(a.UserID, b.UserID), strings.Compare(a.DeviceID, b.DeviceID))
	})
	return out, nil
}

// touchesTargets reports whether a statement template names a table that
// the prefetched push targets come from.
func touchesTargets(tmpl string) bool {
	return strings.Contains(tmpl, "{s}channel_users") || strings.Contains(tmpl, "{s}devices") ||
		strings.Contains(tmpl, "{s}notification_levels")
}

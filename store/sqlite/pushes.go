package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"sort"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
)

const pushCols = `push_id, message_id, channel_id, user_id, device_id, title, body, state, attempts, last_error,
	next_attempt_at, lease_owner, lease_until, created_at, updated_at`

func scanPush(sc scanner) (*chat.PushDelivery, error) {
	var (
		p                      chat.PushDelivery
		next, created, updated int64
		lease                  sql.NullInt64
	)
	if err := sc.Scan(&p.PushID, &p.MessageID, &p.ChannelID, &p.UserID, &p.DeviceID, &p.Title, &p.Body, &p.State,
		&p.Attempts, &p.LastError, &next, &p.LeaseOwner, &lease, &created, &updated); err != nil {
		return nil, err
	}
	p.NextAttemptAt, p.CreatedAt, p.UpdatedAt, p.LeaseUntil = fromMs(next), fromMs(created), fromMs(updated), fromMsp(lease)
	return &p, nil
}

// ListPushTargets implements chat.PushStore: the channel's members
// (primary key range) joined with their devices (devices_user_idx) and
// levels (primary key). It runs on every post. The rows come in the order of
// the members' key; a user's devices are put in order here, which spares
// SQLite a sorter per run. The channel is bound as
// textParam: with a plain "cu.channel_id = ?" in this join SQLite compiled
// the statement again on every execution, about an eighth of the
// instructions of a whole post through the server.
func (t *tx) ListPushTargets(ctx context.Context, channelID, excludeUserID string) ([]*chat.PushTarget, error) {
	ts, err := list(t, ctx, func(sc scanner) (*chat.PushTarget, error) {
		var p chat.PushTarget
		var own, ch string
		err := sc.Scan(&p.UserID, &p.DeviceID, &own, &ch)
		p.UserLevel, p.ChannelLevel = chat.NotificationLevel(own), chat.NotificationLevel(ch)
		return &p, err
	}, `SELECT cu.user_id, d.device_id, coalesce(nu.level, ''), coalesce(nc.level, '')
	FROM channel_users cu
	JOIN devices d ON d.user_id = cu.user_id
	LEFT JOIN notification_levels nu ON nu.user_id = cu.user_id AND nu.channel_id = ''
	LEFT JOIN notification_levels nc ON nc.user_id = cu.user_id AND nc.channel_id = cu.channel_id
	WHERE cu.channel_id = `+textParam+` AND cu.membership = 'member' AND cu.user_id != ?
	ORDER BY cu.user_id`, channelID, excludeUserID)
	slices.SortStableFunc(ts, func(a, b *chat.PushTarget) int {
		return cmp.Or(strings.Compare(a.UserID, b.UserID), strings.Compare(a.DeviceID, b.DeviceID))
	})
	return ts, err
}

// pushInsertRows is how many pushes one INSERT statement writes.
const pushInsertRows = 64

// pushInsert is the INSERT statement for n pushes: it leaves out a push
// whose id or (message, device) exists, or whose device does not.
func pushInsert(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO pushes (push_id, message_id, channel_id, user_id, device_id, title, body, state,
		next_attempt_at, created_at, updated_at)
	SELECT v.* FROM (VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?,?,?,?,?,?,?,?)")
	}
	b.WriteString(`) AS v JOIN devices d ON d.device_id = v.column5 WHERE true ON CONFLICT DO NOTHING`)
	return b.String()
}

var (
	pushInsertFull = pushInsert(pushInsertRows)
)

// EnqueuePushes implements chat.PushStore, pushInsertRows pushes per
// statement.
func (t *tx) EnqueuePushes(ctx context.Context, ps []*chat.PushDelivery) error {
	args := make([]any, 0, 11*min(len(ps), pushInsertRows))
	for len(ps) > 0 {
		n := min(len(ps), pushInsertRows)
		args = args[:0]
		for _, p := range ps[:n] {
			args = append(args, p.PushID, p.MessageID, p.ChannelID, p.UserID, p.DeviceID, p.Title, p.Body, p.State,
				ms(p.NextAttemptAt), ms(p.CreatedAt), ms(p.UpdatedAt))
		}
		q := pushInsertFull
		if n < pushInsertRows {
			q = pushInsert(n)
		}
		if _, err := t.exec(ctx, q, args...); err != nil {
			return err
		}
		ps = ps[n:]
	}
	return nil
}

// ClaimPushes implements chat.PushStore (pushes_due_idx). SQLite has one
// writer at a time, so a claimed push cannot be claimed again until its
// lease expires.
func (t *tx) ClaimPushes(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]*chat.PushDelivery, error) {
	n := ms(chat.NewTime(now))
	ps, err := list(t, ctx, scanPush, `UPDATE pushes SET lease_owner = ?, lease_until = ?
	WHERE push_id IN (SELECT push_id FROM pushes WHERE state = 'pending' AND next_attempt_at <= ?
		AND (lease_until IS NULL OR lease_until <= ?) ORDER BY next_attempt_at, push_id LIMIT ?+0)
	RETURNING `+pushCols, owner, ms(chat.NewTime(now.Add(lease))), n, n, limitArg(limit))
	if err != nil || len(ps) == 0 {
		return ps, err
	}
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.DeviceID
	}
	type dev struct{ id, provider, token string }
	ds, err := keyed(t, ctx, func(sc scanner) (dev, error) {
		var d dev
		err := sc.Scan(&d.id, &d.provider, &d.token)
		return d, err
	}, `SELECT device_id, provider, token FROM devices WHERE device_id IN `+inIDs, jsonIDs(ids))
	if err != nil {
		return nil, err
	}
	byID := make(map[string]dev, len(ds))
	for _, d := range ds {
		byID[d.id] = d
	}
	for _, p := range ps {
		d := byID[p.DeviceID]
		p.Provider, p.Token = d.provider, d.token
	}
	sortPushes(ps)
	return ps, nil
}

// sortPushes orders claimed pushes by nextAttemptAt then pushId.
func sortPushes(ps []*chat.PushDelivery) {
	sort.Slice(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if !a.NextAttemptAt.Equal(b.NextAttemptAt.Time) {
			return a.NextAttemptAt.Before(b.NextAttemptAt.Time)
		}
		return a.PushID < b.PushID
	})
}

// FinishPush implements chat.PushStore.
func (t *tx) FinishPush(ctx context.Context, owner, pushID, state, lastError string, nextAttemptAt, now time.Time) error {
	n, err := t.execN(ctx, `UPDATE pushes SET state = ?, attempts = attempts + 1, last_error = ?,
	next_attempt_at = CASE WHEN ? = 'pending' THEN ? ELSE next_attempt_at END,
	lease_owner = '', lease_until = NULL, updated_at = ?
	WHERE push_id = ? AND state = 'pending' AND lease_owner = ? AND lease_owner != ''`,
		state, lastError, state, ms(chat.NewTime(nextAttemptAt)), ms(chat.NewTime(now)), pushID, owner)
	if err != nil || n == 1 {
		return err
	}
	var one int
	if err := t.row(ctx, `SELECT 1 FROM pushes WHERE push_id = ?`, []any{pushID}, &one); err != nil {
		if chat.ErrorCode(err) == chat.CodeNotFound {
			return chat.Errorf(chat.CodeNotFound, "push %q not found", pushID)
		}
		return err
	}
	return chat.Errorf(chat.CodeConflict, "push %q is not leased by %q", pushID, owner)
}

// ListPushes implements chat.PushStore (pushes_message_device_key).
func (t *tx) ListPushes(ctx context.Context, messageID string) ([]*chat.PushDelivery, error) {
	return list(t, ctx, scanPush, `SELECT `+pushCols+` FROM pushes WHERE message_id = ? ORDER BY push_id`, messageID)
}

// CountPushes implements chat.PushStore (pushes_due_idx).
func (t *tx) CountPushes(ctx context.Context, now time.Time) (chat.OutboxBacklog, error) {
	var b chat.OutboxBacklog
	err := t.row(ctx, `SELECT count(*), coalesce(sum(next_attempt_at <= ?), 0) FROM pushes WHERE state = 'pending'`,
		[]any{ms(chat.NewTime(now))}, &b.Pending, &b.Due)
	return b, err
}

// EnqueuePushBatch implements chat.PushStore: one row, the ids as JSON
// arrays.
func (t *tx) EnqueuePushBatch(ctx context.Context, b *chat.PushBatch) error {
	_, err := t.exec(ctx, `INSERT INTO push_batches (message_id, channel_id, title, body, user_ids, device_ids, created_at)
	VALUES (?,?,?,?,?,?,?)`, b.MessageID, b.ChannelID, b.Title, b.Body, jsonIDs(b.UserIDs), jsonIDs(b.DeviceIDs), ms(b.CreatedAt))
	return asConflict(err, "push batch", b.MessageID)
}

// ExpandPushBatches implements chat.PushStore. SQLite has one writer at a
// time, so no two expansions see one batch.
func (t *tx) ExpandPushBatches(ctx context.Context, limit int) (int, error) {
	ids, err := list(t, ctx, func(sc scanner) (string, error) {
		var id string
		err := sc.Scan(&id)
		return id, err
	}, `SELECT message_id FROM push_batches ORDER BY created_at, message_id LIMIT `+limitParam, limitArg(limit))
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	in := jsonIDs(ids)
	if _, err := t.exec(ctx, `INSERT INTO pushes (push_id, message_id, channel_id, user_id, device_id, title, body, state,
		next_attempt_at, created_at, updated_at)
	SELECT b.message_id || '/' || dv.value, b.message_id, b.channel_id, uv.value, dv.value, b.title, b.body, 'pending',
		b.created_at, b.created_at, b.created_at
	FROM push_batches b
	JOIN json_each(b.device_ids) dv
	JOIN json_each(b.user_ids) uv ON uv.key = dv.key
	JOIN devices d ON d.device_id = dv.value
	WHERE b.message_id IN `+inIDs+` ON CONFLICT DO NOTHING`, in); err != nil {
		return 0, err
	}
	if _, err := t.exec(ctx, `DELETE FROM push_batches WHERE message_id IN `+inIDs, in); err != nil {
		return 0, err
	}
	return len(ids), nil
}

// DeleteFinishedPushes implements chat.PushStore (pushes_finished_idx).
func (t *tx) DeleteFinishedPushes(ctx context.Context, before time.Time, limit int) (int, error) {
	n, err := t.execN(ctx, `DELETE FROM pushes WHERE push_id IN (SELECT push_id FROM pushes
	WHERE state <> 'pending' AND updated_at < ? ORDER BY updated_at, push_id LIMIT ?)`, ms(chat.NewTime(before)), limitArg(limit))
	return int(n), err
}

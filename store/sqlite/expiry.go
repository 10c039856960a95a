package sqlite

import (
	"context"
	"database/sql"
	"time"

	chat "github.com/chatengine/chat"
)

var _ chat.MuteExpiryStore = (*tx)(nil)

// channelUserSelCU is channelUserSel with the channel_users alias cu.
const channelUserSelCU = `cu.channel_id, cu.user_id, cu.membership, cu.is_muted, cu.mute_timeout,
	cu.created_at, cu.updated_at, cu.read_to_segment`

// LapsedMutes implements chat.MuteExpiryStore. SQLite has one writer at a
// time, so a write transaction holds every row it reads: nothing to skip.
// Both statements walk the partial indexes of the mute_expiry migration.
func (t *tx) LapsedMutes(ctx context.Context, now time.Time, limit int) ([]*chat.Channel, []*chat.ChannelUser, error) {
	at := now.UnixMilli()
	chans, err := list(t, ctx, scanChannel, `SELECT `+channelCols+` FROM channels c
		WHERE c.mute_timeout <= ? AND c.is_closed = 0
		ORDER BY c.mute_timeout, c.channel_id LIMIT `+limitParam, at, limit)
	if err != nil {
		return nil, nil, err
	}
	cus, err := list(t, ctx, scanChannelUser, `SELECT `+channelUserSelCU+` FROM channel_users cu
		JOIN channels c ON c.channel_id = cu.channel_id
		WHERE cu.mute_timeout <= ? AND cu.membership = 'member' AND c.is_closed = 0
		ORDER BY cu.mute_timeout, cu.channel_id, cu.user_id LIMIT `+limitParam, at, limit)
	if err != nil {
		return nil, nil, err
	}
	return chans, cus, nil
}

// NextMuteEnd implements chat.MuteExpiryStore.
func (t *tx) NextMuteEnd(ctx context.Context) (time.Time, bool, error) {
	var next sql.NullInt64
	err := t.row(ctx, `SELECT min(m) FROM (
		SELECT min(mute_timeout) AS m FROM channels WHERE mute_timeout IS NOT NULL AND is_closed = 0
		UNION ALL
		SELECT min(cu.mute_timeout) FROM channel_users cu JOIN channels c ON c.channel_id = cu.channel_id
		WHERE cu.mute_timeout IS NOT NULL AND cu.membership = 'member' AND c.is_closed = 0)`, nil, &next)
	if err != nil || !next.Valid {
		return time.Time{}, false, err
	}
	return fromMs(next.Int64).Time, true, nil
}

package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"time"

	chat "github.com/chatengine/chat"
)

var _ chat.MuteExpiryStore = (*tx)(nil)

// The statements of LapsedMutes and NextMuteEnd. Each reads a partial
// index of the mute_expiry migration (channels_mute_idx, channel_users_mute_idx),
// which holds only the muted rows; TestExplainMuteExpiry checks the plans.
const (
	// lapsedChannelsQuery: the open channels whose mute ended ($1 now,
	// $2 limit); LapsedMutes adds the lock clause.
	lapsedChannelsQuery = `SELECT ` + channelCols + ` FROM {s}channels
		WHERE mute_timeout <= $1 AND NOT is_closed
		ORDER BY mute_timeout, channel_id LIMIT $2`
	// lapsedMemberChannelsQuery: the open channels with members whose
	// mute ended, earliest first. The channel is looked up per relation by
	// a scalar subquery (its primary key), which the planner does not turn
	// into a join: a generic plan would hash all channels.
	lapsedMemberChannelsQuery = `SELECT cu.channel_id FROM {s}channel_users cu
		WHERE cu.mute_timeout <= $1 AND cu.membership = 'member'
			AND (SELECT NOT c.is_closed FROM {s}channels c WHERE c.channel_id = cu.channel_id)
		GROUP BY cu.channel_id ORDER BY min(cu.mute_timeout), cu.channel_id LIMIT $2`
	// lapsedMembersQuery: one channel's members whose mute ended ($1
	// channel, $2 now, $3 limit); LapsedMutes adds the lock clause.
	lapsedMembersQuery = `SELECT ` + channelUserSel + ` FROM {s}channel_users
		WHERE channel_id = $1 AND mute_timeout <= $2 AND membership = 'member'
		ORDER BY mute_timeout, user_id LIMIT $3`
	// nextMuteEndQuery: the earliest mute end of an open channel or a
	// member (least ignores NULLs). The members' part walks the index in
	// order and stops at the first relation of an open channel.
	nextMuteEndQuery = `SELECT least(
		(SELECT min(mute_timeout) FROM {s}channels WHERE mute_timeout IS NOT NULL AND NOT is_closed),
		(SELECT cu.mute_timeout FROM {s}channel_users cu
			WHERE cu.mute_timeout IS NOT NULL AND cu.membership = 'member'
				AND (SELECT NOT c.is_closed FROM {s}channels c WHERE c.channel_id = cu.channel_id)
			ORDER BY cu.mute_timeout LIMIT 1))`
)

// LapsedMutes implements chat.MuteExpiryStore. In an Update every row is
// taken with FOR NO KEY UPDATE SKIP LOCKED, so expirers in several
// processes split the lapsed mutes between them and none waits for
// another, or for a transaction that holds a channel. Relations follow the
// house lock order: the channel's row first (skipped when held elsewhere),
// then its relations, read again under that lock with a fresh snapshot, so
// a relation another transaction just announced (mute_timeout back to
// NULL) is not returned twice.
func (t *tx) LapsedMutes(ctx context.Context, now time.Time, limit int) ([]*chat.Channel, []*chat.ChannelUser, error) {
	at := now.UTC().Truncate(time.Millisecond)
	skip := ""
	if t.write {
		skip = " FOR NO KEY UPDATE SKIP LOCKED"
	}
	chans, err := t.channels(ctx, lapsedChannelsQuery+skip, at, limit)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range chans {
		t.lockedChannel(c.ChannelID)
	}

	var ids []string
	err = t.query(ctx, lapsedMemberChannelsQuery, []any{at, limit}, func(r *sql.Rows) error {
		var id string
		err := r.Scan(&id)
		ids = append(ids, id)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	var cus []*chat.ChannelUser
	for _, id := range ids {
		if len(cus) >= limit {
			break
		}
		open, err := t.exists(ctx, `SELECT 1 FROM {s}channels WHERE channel_id = $1 AND NOT is_closed`+skip, id)
		if err != nil {
			return nil, nil, err
		}
		if !open {
			continue // held by another transaction, or closed meanwhile
		}
		t.lockedChannel(id)
		rel, err := t.channelUsers(ctx, lapsedMembersQuery+t.lockRows(), id, at, limit-len(cus))
		if err != nil {
			return nil, nil, err
		}
		cus = append(cus, rel...)
	}
	slices.SortFunc(cus, func(a, b *chat.ChannelUser) int {
		return cmp.Or(a.MuteTimeout.Compare(b.MuteTimeout.Time), cmp.Compare(a.ChannelID, b.ChannelID), cmp.Compare(a.UserID, b.UserID))
	})
	return chans, cus, nil
}

// NextMuteEnd implements chat.MuteExpiryStore. Both minimums are read from
// the partial indexes of the mute_expiry migration.
func (t *tx) NextMuteEnd(ctx context.Context) (time.Time, bool, error) {
	var next sql.NullTime
	err := t.queryRow(ctx, nextMuteEndQuery, nil, &next)
	if err != nil || !next.Valid {
		return time.Time{}, false, err
	}
	return next.Time.UTC(), true, nil
}

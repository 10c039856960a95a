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
	chans, err := t.channels(ctx, `SELECT `+channelCols+` FROM {s}channels
		WHERE mute_timeout <= $1 AND NOT is_closed
		ORDER BY mute_timeout, channel_id LIMIT $2`+skip, at, limit)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range chans {
		t.lockedChannel(c.ChannelID)
	}

	var ids []string
	err = t.query(ctx, `SELECT cu.channel_id FROM {s}channel_users cu
		JOIN {s}channels c ON c.channel_id = cu.channel_id
		WHERE cu.mute_timeout <= $1 AND cu.membership = 'member' AND NOT c.is_closed
		GROUP BY cu.channel_id ORDER BY min(cu.mute_timeout), cu.channel_id LIMIT $2`,
		[]any{at, limit}, func(r *sql.Rows) error {
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
		rel, err := t.channelUsers(ctx, `SELECT `+channelUserSel+` FROM {s}channel_users
			WHERE channel_id = $1 AND mute_timeout <= $2 AND membership = 'member'
			ORDER BY mute_timeout, user_id LIMIT $3`+t.lockRows(), id, at, limit-len(cus))
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
// the partial indexes of migration 0008.
func (t *tx) NextMuteEnd(ctx context.Context) (time.Time, bool, error) {
	var next sql.NullTime
	err := t.queryRow(ctx, `SELECT least(
		(SELECT min(mute_timeout) FROM {s}channels WHERE mute_timeout IS NOT NULL AND NOT is_closed),
		(SELECT min(cu.mute_timeout) FROM {s}channel_users cu JOIN {s}channels c ON c.channel_id = cu.channel_id
			WHERE cu.mute_timeout IS NOT NULL AND cu.membership = 'member' AND NOT c.is_closed))`, nil, &next)
	if err != nil || !next.Valid {
		return time.Time{}, false, err
	}
	return next.Time.UTC(), true, nil
}

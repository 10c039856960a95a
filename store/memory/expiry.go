package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	chat "github.com/chatengine/chat"
)

var _ chat.MuteExpiryStore = (*tx)(nil)

// muteKey names a muted channel (UserID "") or relation in data.muted.
type muteKey struct {
	ChannelID, UserID string
}

// trackMute keeps data.muted in step with a write of the channel's
// (userID "") or the relation's mute timeout; timeout nil also stands for
// a deleted relation.
func (t *tx) trackMute(channelID, userID string, timeout *chat.Time) {
	k := muteKey{channelID, userID}
	if timeout != nil {
		if _, ok := t.d.muted[k]; !ok {
			setKey(t, t.d.muted, k, struct{}{})
		}
		return
	}
	delKey(t, t.d.muted, k)
}

// mutedRecords calls fn for each open channel (cu nil) and member
// relation (of an open channel) whose MuteTimeout is set.
func (t *tx) mutedRecords(fn func(c *chat.Channel, cu *chat.ChannelUser)) {
	for k := range t.d.muted {
		c, ok := t.d.channels[k.ChannelID]
		if !ok || c.IsClosed {
			continue
		}
		if k.UserID == "" {
			if c.MuteTimeout != nil {
				fn(c, nil)
			}
			continue
		}
		cu := t.d.members[k.ChannelID][k.UserID]
		if cu != nil && cu.Membership == chat.MembershipMember && cu.MuteTimeout != nil {
			fn(c, cu)
		}
	}
}

// LapsedMutes implements chat.MuteExpiryStore. Write transactions hold
// the store's lock, so there is nothing to skip. It reads the muted
// records only (data.muted).
func (t *tx) LapsedMutes(_ context.Context, now time.Time, limit int) ([]*chat.Channel, []*chat.ChannelUser, error) {
	if err := t.readable(); err != nil {
		return nil, nil, err
	}
	var chans []*chat.Channel
	var cus []*chat.ChannelUser
	t.mutedRecords(func(c *chat.Channel, cu *chat.ChannelUser) {
		switch {
		case cu == nil && !c.MuteTimeout.After(now):
			chans = append(chans, c)
		case cu != nil && !cu.MuteTimeout.After(now):
			cus = append(cus, cu)
		}
	})
	slices.SortFunc(chans, func(a, b *chat.Channel) int {
		return cmp.Or(a.MuteTimeout.Compare(b.MuteTimeout.Time), cmp.Compare(a.ChannelID, b.ChannelID))
	})
	slices.SortFunc(cus, func(a, b *chat.ChannelUser) int {
		return cmp.Or(a.MuteTimeout.Compare(b.MuteTimeout.Time), cmp.Compare(a.ChannelID, b.ChannelID), cmp.Compare(a.UserID, b.UserID))
	})
	chans, cus = chans[:min(len(chans), limit)], cus[:min(len(cus), limit)]
	outC := make([]*chat.Channel, len(chans))
	for i, c := range chans {
		outC[i] = cpChannel(c)
	}
	outU := make([]*chat.ChannelUser, len(cus))
	for i, cu := range cus {
		outU[i] = cpChannelUser(cu)
	}
	return outC, outU, nil
}

// NextMuteEnd implements chat.MuteExpiryStore.
func (t *tx) NextMuteEnd(_ context.Context) (time.Time, bool, error) {
	if err := t.readable(); err != nil {
		return time.Time{}, false, err
	}
	var next time.Time
	ok := false
	t.mutedRecords(func(c *chat.Channel, cu *chat.ChannelUser) {
		v := c.MuteTimeout
		if cu != nil {
			v = cu.MuteTimeout
		}
		if !ok || v.Before(next) {
			next, ok = v.Time, true
		}
	})
	return next, ok, nil
}

package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	chat "github.com/chatengine/chat"
)

var _ chat.MuteExpiryStore = (*tx)(nil)

// lapsed reports whether a mute timeout is set and not after now.
func lapsed(timeout *chat.Time, now time.Time) bool {
	return timeout != nil && !timeout.After(now)
}

// LapsedMutes implements chat.MuteExpiryStore. Write transactions hold
// the store's lock, so there is nothing to skip. It walks every channel
// and relation: the memory store is for tests and small deployments.
func (t *tx) LapsedMutes(_ context.Context, now time.Time, limit int) ([]*chat.Channel, []*chat.ChannelUser, error) {
	if err := t.readable(); err != nil {
		return nil, nil, err
	}
	var chans []*chat.Channel
	for _, c := range t.d.chanOrder {
		if !c.IsClosed && lapsed(c.MuteTimeout, now) {
			chans = append(chans, c)
		}
	}
	slices.SortFunc(chans, func(a, b *chat.Channel) int {
		return cmp.Or(a.MuteTimeout.Compare(b.MuteTimeout.Time), cmp.Compare(a.ChannelID, b.ChannelID))
	})
	var cus []*chat.ChannelUser
	for channelID, rel := range t.d.members {
		if c, ok := t.d.channels[channelID]; !ok || c.IsClosed {
			continue
		}
		for _, cu := range rel {
			if cu.Membership == chat.MembershipMember && lapsed(cu.MuteTimeout, now) {
				cus = append(cus, cu)
			}
		}
	}
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
	see := func(v *chat.Time) {
		if v != nil && (!ok || v.Before(next)) {
			next, ok = v.Time, true
		}
	}
	for _, c := range t.d.chanOrder {
		if !c.IsClosed {
			see(c.MuteTimeout)
		}
	}
	for channelID, rel := range t.d.members {
		if c, found := t.d.channels[channelID]; !found || c.IsClosed {
			continue
		}
		for _, cu := range rel {
			if cu.Membership == chat.MembershipMember {
				see(cu.MuteTimeout)
			}
		}
	}
	return next, ok, nil
}

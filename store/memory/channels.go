package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	chat "github.com/chatengine/chat"
)

func (t *tx) CreateChannel(_ context.Context, c *chat.Channel) error {
	if err := t.writable(); err != nil {
		return err
	}
	if _, ok := t.d.channels[c.ChannelID]; ok {
		return conflict("channel %q already exists", c.ChannelID)
	}
	sc, err := normChannel(c)
	if err != nil {
		return err
	}
	setKey(t, t.d.channels, sc.ChannelID, sc)
	sortedInsert(t, &t.d.chanOrder, sc, cmpChannel)
	t.trackMute(sc.ChannelID, "", sc.MuteTimeout)
	// Relations written before the channel existed (usually none).
	for userID, cu := range t.d.members[sc.ChannelID] {
		if cu.Membership == chat.MembershipMember {
			sortedInsert(t, t.memberList(userID), sc, cmpChannel)
		}
	}
	return nil
}

func (t *tx) GetChannel(_ context.Context, channelID string) (*chat.Channel, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	c, ok := t.d.channels[channelID]
	if !ok {
		return nil, notFound("channel", channelID)
	}
	return cpChannel(c), nil
}

func (t *tx) GetChannels(_ context.Context, ids []string) ([]*chat.Channel, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	out := make([]*chat.Channel, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if c, ok := t.d.channels[id]; ok && !seen[id] {
			seen[id] = true
			out = append(out, cpChannel(c))
		}
	}
	return out, nil
}

func (t *tx) UpdateChannel(_ context.Context, c *chat.Channel) error {
	if err := t.writable(); err != nil {
		return err
	}
	p, ok := t.d.channels[c.ChannelID]
	if !ok {
		return notFound("channel", c.ChannelID)
	}
	in, err := normChannel(c)
	if err != nil {
		return err
	}
	v := *p
	v.DisplayName = in.DisplayName
	v.Metadata = in.Metadata
	v.Tags = in.Tags
	v.MuteTimeout = in.MuteTimeout
	v.LastActivity = in.LastActivity
	v.UpdatedAt = in.UpdatedAt
	v.IsClosed = in.IsClosed
	v.IsRateLimited = in.IsRateLimited
	v.RateLimitWindow = in.RateLimitWindow
	replace(t, p, v)
	t.trackMute(v.ChannelID, "", v.MuteTimeout)
	return nil
}

func (t *tx) NextSegment(_ context.Context, channelID string, now time.Time) (*chat.Channel, error) {
	if err := t.writable(); err != nil {
		return nil, err
	}
	p, ok := t.d.channels[channelID]
	if !ok {
		return nil, notFound("channel", channelID)
	}
	// Only three fields change: record those for the undo rather than a
	// copy of the whole channel.
	count, last, updated := p.MessageCount, p.LastActivity, p.UpdatedAt
	p.MessageCount++
	p.LastActivity = chat.NewTime(now)
	p.UpdatedAt = p.LastActivity
	t.onUndo(func() { p.MessageCount, p.LastActivity, p.UpdatedAt = count, last, updated })
	return cpChannel(p), nil
}

func (t *tx) QueryChannels(_ context.Context, f chat.ChannelFilter) ([]*chat.Channel, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	list := t.d.chanOrder
	if f.MemberOf != "" {
		list = nil
		if l := t.d.memberOf[f.MemberOf]; l != nil {
			list = *l
		}
	}
	// Newest first is descending order: After bounds from above (older
	// rows), Before from below (newer rows, returned ascending).
	var low, high func(*chat.Channel) int
	if f.After != nil {
		cur := *f.After
		high = func(c *chat.Channel) int { return cmpChannelCursor(c, cur) }
	}
	if f.Before != nil {
		cur := *f.Before
		low = func(c *chat.Channel) int { return cmpChannelCursor(c, cur) }
	}
	lo, hi := window(list, low, high)
	notMember := t.d.userChans[f.NotMemberOf]
	pg := page{skip: f.Offset, limit: f.Limit}
	var out []*chat.Channel
	walk(list, lo, hi, f.Before == nil, func(c *chat.Channel) bool {
		if c.IsClosed && !f.IncludeClosed {
			return true
		}
		if !tagsMatch(c.Tags, f.Tags, f.ExcludeTags) {
			return true
		}
		if f.Search != "" && !chat.MatchChannel(f.Search, c) {
			return true
		}
		if f.NotMemberOf != "" {
			if cu, ok := notMember[c.ChannelID]; ok && cu.Membership == chat.MembershipMember {
				return true
			}
		}
		keep, full := pg.take()
		if keep {
			out = append(out, cpChannel(c))
		}
		return !full
	})
	return out, nil
}

func cmpChannelCursor(c *chat.Channel, cur chat.ChannelCursor) int {
	if x := c.CreatedAt.Compare(cur.CreatedAt); x != 0 {
		return x
	}
	return cmp.Compare(c.ChannelID, cur.ChannelID)
}

// ---- relations ----

func (t *tx) GetChannelUser(_ context.Context, channelID, userID string) (*chat.ChannelUser, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	cu, ok := t.d.members[channelID][userID]
	if !ok {
		return nil, chat.Errorf(chat.CodeNotFound, "user %q has no relation to channel %q", userID, channelID)
	}
	return cpChannelUser(cu), nil
}

func (t *tx) GetChannelUsers(_ context.Context, channelID string, userIDs []string) ([]*chat.ChannelUser, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	rel := t.d.members[channelID]
	var out []*chat.ChannelUser
	if userIDs == nil {
		out = make([]*chat.ChannelUser, 0, len(rel))
		for _, cu := range rel {
			out = append(out, cpChannelUser(cu))
		}
	} else {
		seen := make(map[string]bool, len(userIDs))
		for _, id := range userIDs {
			if cu, ok := rel[id]; ok && !seen[id] {
				seen[id] = true
				out = append(out, cpChannelUser(cu))
			}
		}
	}
	slices.SortFunc(out, func(a, b *chat.ChannelUser) int { return cmp.Compare(a.UserID, b.UserID) })
	return out, nil
}

func (t *tx) ListMemberships(_ context.Context, userID string, channelIDs []string) ([]*chat.ChannelUser, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	rel := t.d.userChans[userID]
	var out []*chat.ChannelUser
	if channelIDs == nil {
		for _, cu := range rel {
			out = append(out, cpChannelUser(cu))
		}
	} else {
		seen := make(map[string]bool, len(channelIDs))
		for _, id := range channelIDs {
			if cu, ok := rel[id]; ok && !seen[id] {
				seen[id] = true
				out = append(out, cpChannelUser(cu))
			}
		}
	}
	slices.SortFunc(out, func(a, b *chat.ChannelUser) int { return cmp.Compare(a.ChannelID, b.ChannelID) })
	return out, nil
}

// memberList returns the user's entry of memberOf, creating it (with undo)
// when absent.
func (t *tx) memberList(userID string) *[]*chat.Channel {
	l, ok := t.d.memberOf[userID]
	if !ok {
		l = new([]*chat.Channel)
		setKey(t, t.d.memberOf, userID, l)
	}
	return l
}

// memberChange keeps memberOf in step when the user's relation to the
// channel goes from was to now (nil = no relation).
func (t *tx) memberChange(channelID, userID string, was, now *chat.ChannelUser) {
	c, ok := t.d.channels[channelID]
	if !ok {
		return // listed from CreateChannel on
	}
	switch isMember(now) - isMember(was) {
	case 1:
		sortedInsert(t, t.memberList(userID), c, cmpChannel)
	case -1:
		if l := t.d.memberOf[userID]; l != nil {
			sortedRemove(t, l, c, cmpChannel)
		}
	}
}

// addMemberCount adjusts a channel's memberCount (when the channel exists).
func (t *tx) addMemberCount(channelID string, delta int) {
	if delta == 0 {
		return
	}
	if p, ok := t.d.channels[channelID]; ok {
		v := *p
		v.MemberCount += delta
		replace(t, p, v)
	}
}

func isMember(cu *chat.ChannelUser) int {
	if cu != nil && cu.Membership == chat.MembershipMember {
		return 1
	}
	return 0
}

func (t *tx) PutChannelUser(_ context.Context, cu *chat.ChannelUser) error {
	if err := t.writable(); err != nil {
		return err
	}
	v := normChannelUser(cu)
	old := t.d.members[v.ChannelID][v.UserID]
	// The read marker is MarkRead's alone: kept when the relation is
	// replaced, 0 for a new one.
	v.ReadToSegment, v.UnreadCount = 0, 0
	if old != nil {
		v.ReadToSegment = old.ReadToSegment
	}
	setKey(t, innerMap(t, t.d.members, v.ChannelID), v.UserID, v)
	setKey(t, innerMap(t, t.d.userChans, v.UserID), v.ChannelID, v)
	t.trackMute(v.ChannelID, v.UserID, v.MuteTimeout)
	t.memberChange(v.ChannelID, v.UserID, old, v)
	t.addMemberCount(v.ChannelID, isMember(v)-isMember(old))
	return nil
}

func (t *tx) DeleteChannelUser(_ context.Context, channelID, userID string) error {
	if err := t.writable(); err != nil {
		return err
	}
	old, ok := t.d.members[channelID][userID]
	if !ok {
		return nil
	}
	delKey(t, t.d.members[channelID], userID)
	delKey(t, t.d.userChans[userID], channelID)
	t.trackMute(channelID, userID, nil)
	t.memberChange(channelID, userID, old, nil)
	t.addMemberCount(channelID, -isMember(old))
	return nil
}

func (t *tx) DeleteChannelUsers(_ context.Context, channelID string) error {
	if err := t.writable(); err != nil {
		return err
	}
	if rel, ok := t.d.members[channelID]; ok {
		for userID, cu := range rel {
			delKey(t, t.d.userChans[userID], channelID)
			t.trackMute(channelID, userID, nil)
			t.memberChange(channelID, userID, cu, nil)
		}
		delKey(t, t.d.members, channelID)
	}
	if p, ok := t.d.channels[channelID]; ok && p.MemberCount != 0 {
		v := *p
		v.MemberCount = 0
		replace(t, p, v)
	}
	return nil
}

func (t *tx) MarkRead(_ context.Context, channelID, userID string, segment int64) (*chat.ChannelUser, error) {
	if err := t.writable(); err != nil {
		return nil, err
	}
	cu, ok := t.d.members[channelID][userID]
	if !ok {
		return nil, chat.Errorf(chat.CodeNotFound, "user %q has no relation to channel %q", userID, channelID)
	}
	if segment > cu.ReadToSegment {
		// members and userChans hold the same pointer: both see it.
		v := *cu
		v.ReadToSegment = segment
		replace(t, cu, v)
	}
	return cpChannelUser(cu), nil
}

// CountUnread reads the channel's messageCount, the user's own messages
// above the marker (chanAuthor) and the deleted messages of others above
// it (chanMsgs.deleted).
func (t *tx) CountUnread(_ context.Context, cus []*chat.ChannelUser) ([]chat.UnreadFacts, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	d := t.d
	out := make([]chat.UnreadFacts, len(cus))
	for i, cu := range cus {
		c, ok := d.channels[cu.ChannelID]
		if !ok {
			continue
		}
		r := cu.ReadToSegment
		f := &out[i]
		f.MessageCount = c.MessageCount
		ch, okc := d.strIDs[cu.ChannelID]
		u, oku := d.strIDs[cu.UserID]
		if okc && oku {
			if own := d.chanAuthor[chanAuthorKey{ch, u}]; own != nil {
				j, _ := d.search(*own, r+1)
				f.Own = int64(len(*own) - j)
			}
		}
		if cm := d.chanMsgs[cu.ChannelID]; cm != nil {
			j, _ := d.search(cm.deleted, r+1)
			for _, p := range cm.deleted[j:] {
				if !oku || d.allMsgs[p].user != u {
					f.DeletedOthers++
				}
			}
		}
	}
	return out, nil
}

package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	chat "github.com/chatengine/chat"
)

func (t *tx) CreateChannel(_ context.Context, c *chat.Channel) error {
	v := cloneChannel(c)
	var err error
	if v.Metadata, err = normMap(c.Metadata); err != nil {
		return err
	}
	return insert(t, t.r().channels, v.ChannelID, v, "channel")
}

func (t *tx) GetChannel(_ context.Context, channelID string) (*chat.Channel, error) {
	return get(t, t.r().channels, channelID, cloneChannel, "channel")
}

// byIDs returns copies of the values of m among ids, each once, in the
// order of ids.
func byIDs[T any](m map[string]*T, ids []string, cp func(*T) *T) []*T {
	out := make([]*T, 0, len(ids))
	for i, id := range ids {
		if v, ok := m[id]; ok && !slices.Contains(ids[:i], id) {
			out = append(out, cp(v))
		}
	}
	return out
}

func (t *tx) GetChannels(_ context.Context, ids []string) ([]*chat.Channel, error) {
	return byIDs(t.r().channels, ids, cloneChannel), nil
}

func (t *tx) UpdateChannel(_ context.Context, c *chat.Channel) error {
	md, err := normMap(c.Metadata)
	if err != nil {
		return err
	}
	in := cloneChannel(c)
	return change(t, t.r().channels, c.ChannelID, "channel", func(v *chat.Channel) {
		v.DisplayName, v.Metadata, v.Tags, v.MuteTimeout = in.DisplayName, md, in.Tags, in.MuteTimeout
		v.LastActivity, v.UpdatedAt, v.IsClosed = in.LastActivity, in.UpdatedAt, in.IsClosed
		v.IsRateLimited, v.RateLimitWindow = in.IsRateLimited, in.RateLimitWindow
	})
}

func (t *tx) NextSegment(_ context.Context, channelID string, now time.Time) (*chat.Channel, error) {
	t.w()
	p, ok := t.r().channels[channelID]
	if !ok {
		return nil, notFound("channel", channelID)
	}
	// Only three fields change: undo those rather than the whole channel.
	count, last, updated := p.MessageCount, p.LastActivity, p.UpdatedAt
	p.MessageCount++
	p.LastActivity = chat.NewTime(now)
	p.UpdatedAt = p.LastActivity
	t.undo = append(t.undo, func() { p.MessageCount, p.LastActivity, p.UpdatedAt = count, last, updated })
	return cloneChannel(p), nil
}

// newestChannel orders channels newest first.
func newestChannel(a, b *chat.Channel) int {
	return cmp.Or(b.CreatedAt.Compare(a.CreatedAt.Time), cmp.Compare(b.ChannelID, a.ChannelID))
}

func (t *tx) QueryChannels(_ context.Context, f chat.ChannelFilter) ([]*chat.Channel, error) {
	l := sortedValues(t.r().channels, func(c *chat.Channel) bool {
		return (f.MemberOf == "" || t.r().isMember(c.ChannelID, f.MemberOf)) && (!c.IsClosed || f.IncludeClosed) &&
			(f.NotMemberOf == "" || !t.r().isMember(c.ChannelID, f.NotMemberOf)) &&
			tagsMatch(c.Tags, f.Tags, f.ExcludeTags) && (f.Search == "" || chat.MatchChannel(f.Search, c))
	}, newestChannel)
	cursor := func(c *chat.ChannelCursor) func(*chat.Channel) int {
		if c == nil {
			return nil
		}
		cur := &chat.Channel{CreatedAt: chat.NewTime(c.CreatedAt), ChannelID: c.ChannelID}
		return func(x *chat.Channel) int { return newestChannel(x, cur) }
	}
	return copies(window(l, cursor(f.After), cursor(f.Before), f.Offset, f.Limit), cloneChannel), nil
}

// tagsMatch applies the any-of and none-of tag filters.
func tagsMatch(have, anyTags, noneTags []string) bool {
	hasAny := func(want []string) bool {
		return slices.ContainsFunc(want, func(w string) bool { return slices.Contains(have, w) })
	}
	return (len(anyTags) == 0 || hasAny(anyTags)) && !hasAny(noneTags)
}

// ---- relations ----

func (t *tx) GetChannelUser(_ context.Context, channelID, userID string) (*chat.ChannelUser, error) {
	return get(t, t.r().members[channelID], userID, cloneChannelUser, "relation to channel "+channelID+" of user")
}

// relations returns copies of the relations of rel among ids (all when ids
// is nil), ordered by key.
func relations(rel map[string]*chat.ChannelUser, ids []string, key func(*chat.ChannelUser) string) []*chat.ChannelUser {
	l := sortedValues(rel, func(cu *chat.ChannelUser) bool { return ids == nil || slices.Contains(ids, key(cu)) },
		func(a, b *chat.ChannelUser) int { return cmp.Compare(key(a), key(b)) })
	return copies(l, cloneChannelUser)
}

func (t *tx) GetChannelUsers(_ context.Context, channelID string, userIDs []string) ([]*chat.ChannelUser, error) {
	return relations(t.r().members[channelID], userIDs, func(cu *chat.ChannelUser) string { return cu.UserID }), nil
}

func (t *tx) ListMemberships(_ context.Context, userID string, channelIDs []string) ([]*chat.ChannelUser, error) {
	return relations(t.r().userRels[userID], channelIDs, func(cu *chat.ChannelUser) string { return cu.ChannelID }), nil
}

// addMembers adds delta to the channel's memberCount (when it exists).
func (t *tx) addMembers(channelID string, delta int) {
	if _, ok := t.r().channels[channelID]; ok && delta != 0 {
		_ = change(t, t.r().channels, channelID, "channel", func(c *chat.Channel) { c.MemberCount += delta })
	}
}

func isMember(cu *chat.ChannelUser) int {
	if cu != nil && cu.Membership == chat.MembershipMember {
		return 1
	}
	return 0
}

// isMember reports whether userID is a member of channelID now.
func (d *data) isMember(channelID, userID string) bool {
	return isMember(d.members[channelID][userID]) == 1
}

func (t *tx) PutChannelUser(_ context.Context, cu *chat.ChannelUser) error {
	v := cloneChannelUser(cu)
	old := t.r().members[v.ChannelID][v.UserID]
	// The read marker is MarkRead's alone: kept when the relation is
	// replaced, 0 for a new one.
	v.ReadToSegment, v.UnreadCount = 0, 0
	if old != nil {
		v.ReadToSegment = old.ReadToSegment
	}
	put(t, inner(t, t.r().members, v.ChannelID), v.UserID, v)
	put(t, inner(t, t.r().userRels, v.UserID), v.ChannelID, v)
	t.addMembers(v.ChannelID, isMember(v)-isMember(old))
	return nil
}

func (t *tx) DeleteChannelUser(_ context.Context, channelID, userID string) error {
	if old, ok := t.r().members[channelID][userID]; ok {
		del(t, t.r().members[channelID], userID)
		del(t, t.r().userRels[userID], channelID)
		t.addMembers(channelID, -isMember(old))
	}
	return nil
}

func (t *tx) DeleteChannelUsers(_ context.Context, channelID string) error {
	for userID := range t.r().members[channelID] {
		del(t, t.r().userRels[userID], channelID)
	}
	del(t, t.r().members, channelID)
	if c, ok := t.r().channels[channelID]; ok {
		t.addMembers(channelID, -c.MemberCount)
	}
	return nil
}

func (t *tx) MarkRead(_ context.Context, channelID, userID string, segment int64) (*chat.ChannelUser, error) {
	// Both maps hold the relation's pointer: change keeps it.
	err := change(t, t.r().members[channelID], userID, "relation to channel "+channelID+" of user", func(cu *chat.ChannelUser) {
		cu.ReadToSegment = max(cu.ReadToSegment, segment)
	})
	if err != nil {
		return nil, err
	}
	return cloneChannelUser(t.r().members[channelID][userID]), nil
}

// above returns the messages of the channel with a segment above seg.
func (d *data) above(channelID string, seg int64) []*chat.Message {
	l := d.chanMsgs[channelID]
	i, _ := segIndex(l, seg+1)
	return l[i:]
}

// UnreadCounts counts the live messages of others above each marker.
func (t *tx) UnreadCounts(_ context.Context, cus []*chat.ChannelUser) ([]int64, error) {
	out := make([]int64, len(cus))
	for i, cu := range cus {
		for _, m := range t.r().above(cu.ChannelID, cu.ReadToSegment) {
			if !m.IsDeleted && m.UserID != cu.UserID {
				out[i]++
			}
		}
	}
	return out, nil
}

// ---- mute expiry ----

// LapsedMutes reads every channel and relation. Write transactions hold
// the store's lock, so there is nothing to skip.
func (t *tx) LapsedMutes(_ context.Context, now time.Time, limit int) ([]*chat.Channel, []*chat.ChannelUser, error) {
	var chans []*chat.Channel
	var cus []*chat.ChannelUser
	t.muted(func(c *chat.Channel, cu *chat.ChannelUser) {
		if cu == nil && !c.MuteTimeout.After(now) {
			chans = append(chans, c)
		} else if cu != nil && !cu.MuteTimeout.After(now) {
			cus = append(cus, cu)
		}
	})
	slices.SortFunc(chans, func(a, b *chat.Channel) int {
		return cmp.Or(a.MuteTimeout.Compare(b.MuteTimeout.Time), cmp.Compare(a.ChannelID, b.ChannelID))
	})
	slices.SortFunc(cus, func(a, b *chat.ChannelUser) int {
		return cmp.Or(a.MuteTimeout.Compare(b.MuteTimeout.Time), cmp.Compare(a.ChannelID, b.ChannelID), cmp.Compare(a.UserID, b.UserID))
	})
	return copies(chans[:min(len(chans), limit)], cloneChannel), copies(cus[:min(len(cus), limit)], cloneChannelUser), nil
}

// muted calls fn for each open channel (cu nil) and member relation of an
// open channel whose MuteTimeout is set.
func (t *tx) muted(fn func(c *chat.Channel, cu *chat.ChannelUser)) {
	for id, c := range t.r().channels {
		if c.IsClosed {
			continue
		}
		if c.MuteTimeout != nil {
			fn(c, nil)
		}
		for _, cu := range t.r().members[id] {
			if cu.MuteTimeout != nil && cu.Membership == chat.MembershipMember {
				fn(c, cu)
			}
		}
	}
}

func (t *tx) NextMuteEnd(_ context.Context) (time.Time, bool, error) {
	var next *chat.Time
	t.muted(func(c *chat.Channel, cu *chat.ChannelUser) {
		v := c.MuteTimeout
		if cu != nil {
			v = cu.MuteTimeout
		}
		if next == nil || v.Before(next.Time) {
			next = v
		}
	})
	if next == nil {
		return time.Time{}, false, nil
	}
	return next.Time, true, nil
}

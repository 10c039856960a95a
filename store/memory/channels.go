package memory

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	chat "github.com/chatengine/chat"
)

func (t *tx) CreateChannel(_ context.Context, c *chat.Channel) error {
	v, err := copyChannel(c)
	if err != nil {
		return err
	}
	return insert(t, &t.r().channels, v.ChannelID, v, "channel")
}

func (t *tx) GetChannel(_ context.Context, channelID string) (*chat.Channel, error) {
	return get(t.r().channels, channelID, cloneChannel, "channel")
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
	in, err := copyChannel(c)
	if err != nil {
		return err
	}
	return change(t, t.r().channels, c.ChannelID, "channel", func(v *chat.Channel) {
		v.DisplayName, v.Metadata, v.Tags, v.MuteTimeout = in.DisplayName, in.Metadata, in.Tags, in.MuteTimeout
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
	// The hot path: undo three fields rather than a copy of the channel.
	count, last, updated := p.MessageCount, p.LastActivity, p.UpdatedAt
	at := nt(chat.Time{Time: now})
	p.MessageCount, p.LastActivity, p.UpdatedAt = p.MessageCount+1, at, at
	t.undo = append(t.undo, func() { p.MessageCount, p.LastActivity, p.UpdatedAt = count, last, updated })
	return cloneChannel(p), nil
}

func newestChannel(a, b *chat.Channel) int {
	return newest(a.CreatedAt, b.CreatedAt, a.ChannelID, b.ChannelID)
}

func (t *tx) QueryChannels(_ context.Context, f chat.ChannelFilter) ([]*chat.Channel, error) {
	l := sortedValues(t.r().channels, func(c *chat.Channel) bool {
		return (f.MemberOf == "" || t.r().isMember(c.ChannelID, f.MemberOf)) && (!c.IsClosed || f.IncludeClosed) &&
			(f.NotMemberOf == "" || !t.r().isMember(c.ChannelID, f.NotMemberOf)) &&
			tagsMatch(c.Tags, f.Tags, f.ExcludeTags) && (f.Search == "" || chat.MatchChannel(f.Search, c))
	}, newestChannel)
	at := func(x *chat.Channel, c *chat.ChannelCursor) int {
		return newest(x.CreatedAt, chat.NewTime(c.CreatedAt), x.ChannelID, c.ChannelID)
	}
	return copies(window(l, cursor(f.After, at), cursor(f.Before, at), f.Offset, f.Limit), cloneChannel), nil
}

// tagsMatch applies the any-of and none-of tag filters.
func tagsMatch(have, anyTags, noneTags []string) bool {
	hasAny := func(want []string) bool {
		return slices.ContainsFunc(want, func(w string) bool { return slices.Contains(have, w) })
	}
	return (len(anyTags) == 0 || hasAny(anyTags)) && !hasAny(noneTags)
}

func (t *tx) GetChannelUser(_ context.Context, channelID, userID string) (*chat.ChannelUser, error) {
	return get(t.r().members, pair{channelID, userID}, cloneChannelUser, "relation (channel, user)")
}

// relations returns copies of the relations that keep keeps, ordered by
// key, among those whose key is in ids when ids is not nil.
func (t *tx) relations(keep func(*chat.ChannelUser) bool, ids []string, key func(*chat.ChannelUser) string) []*chat.ChannelUser {
	l := sortedValues(t.r().members, func(cu *chat.ChannelUser) bool { return keep(cu) && (ids == nil || slices.Contains(ids, key(cu))) },
		func(a, b *chat.ChannelUser) int { return cmp.Compare(key(a), key(b)) })
	return copies(l, cloneChannelUser)
}

func (t *tx) GetChannelUsers(_ context.Context, channelID string, userIDs []string) ([]*chat.ChannelUser, error) {
	return t.relations(func(cu *chat.ChannelUser) bool { return cu.ChannelID == channelID }, userIDs,
		func(cu *chat.ChannelUser) string { return cu.UserID }), nil
}

func (t *tx) ListMemberships(_ context.Context, userID string, channelIDs []string) ([]*chat.ChannelUser, error) {
	return t.relations(func(cu *chat.ChannelUser) bool { return cu.UserID == userID }, channelIDs,
		func(cu *chat.ChannelUser) string { return cu.ChannelID }), nil
}

func (t *tx) SetMemberCount(_ context.Context, channelID string, n int) error {
	_ = change(t, t.r().channels, channelID, "channel", func(c *chat.Channel) { c.MemberCount = n })
	return nil
}

// isMember reports whether userID is a member of channelID now.
func (d *data) isMember(channelID, userID string) bool {
	cu := d.members[pair{channelID, userID}]
	return cu != nil && cu.Membership == chat.MembershipMember
}

func (t *tx) PutChannelUser(_ context.Context, cu *chat.ChannelUser) error {
	v := cloneChannelUser(cu)
	old := t.r().members[pair{v.ChannelID, v.UserID}]
	// The read marker is MarkRead's alone: kept when the relation is
	// replaced, 0 for a new one.
	v.ReadToSegment, v.UnreadCount = 0, 0
	if old != nil {
		v.ReadToSegment = old.ReadToSegment
	}
	put(t, &t.r().members, pair{v.ChannelID, v.UserID}, v)
	return nil
}

func (t *tx) DeleteChannelUser(_ context.Context, channelID, userID string) error {
	del(t, t.r().members, pair{channelID, userID})
	return nil
}

func (t *tx) DeleteChannelUsers(_ context.Context, channelID string) error {
	deleteWhere(t, t.r().members, func(cu *chat.ChannelUser) bool { return cu.ChannelID == channelID }, 0)
	return nil
}

func (t *tx) MarkRead(_ context.Context, channelID, userID string, segment int64) (*chat.ChannelUser, error) {
	k := pair{channelID, userID}
	err := change(t, t.r().members, k, "relation (channel, user)", func(cu *chat.ChannelUser) { cu.ReadToSegment = max(cu.ReadToSegment, segment) })
	if err != nil {
		return nil, err
	}
	return cloneChannelUser(t.r().members[k]), nil
}

// above returns the messages of the channel with a segment above seg.
func (d *data) above(channelID string, seg int64) []*chat.Message {
	l := d.chanMsgs[channelID]
	i, _ := segIndex(l, seg+1)
	return l[i:]
}

// CountUnread returns, for each relation, the facts chat.UnreadCount
// needs: the channel's message count and, above the marker, the user's own
// messages and the deleted messages of others.
func (t *tx) CountUnread(_ context.Context, cus []*chat.ChannelUser) ([]chat.UnreadFacts, error) {
	out := make([]chat.UnreadFacts, len(cus))
	for i, cu := range cus {
		c, ok := t.r().channels[cu.ChannelID]
		if !ok {
			continue
		}
		out[i].MessageCount = c.MessageCount
		for _, m := range t.r().above(cu.ChannelID, cu.ReadToSegment) {
			if m.UserID == cu.UserID {
				out[i].Own++
			} else if m.IsDeleted {
				out[i].DeletedOthers++
			}
		}
	}
	return out, nil
}

// mutes returns the open channels and the member relations of open
// channels whose MuteTimeout is set (and not after *lapsed unless lapsed
// is nil), earliest first. Write transactions hold the store's lock, so
// LapsedMutes has nothing to skip.
func (t *tx) mutes(lapsed *time.Time) ([]*chat.Channel, []*chat.ChannelUser) {
	muted := func(at *chat.Time) bool { return at != nil && (lapsed == nil || !at.After(*lapsed)) }
	chans := sortedValues(t.r().channels, func(c *chat.Channel) bool { return !c.IsClosed && muted(c.MuteTimeout) },
		func(a, b *chat.Channel) int {
			return cmp.Or(a.MuteTimeout.Compare(b.MuteTimeout.Time), cmp.Compare(a.ChannelID, b.ChannelID))
		})
	cus := sortedValues(t.r().members, func(cu *chat.ChannelUser) bool {
		c, ok := t.r().channels[cu.ChannelID]
		return ok && !c.IsClosed && cu.Membership == chat.MembershipMember && muted(cu.MuteTimeout)
	}, func(a, b *chat.ChannelUser) int {
		return cmp.Or(a.MuteTimeout.Compare(b.MuteTimeout.Time), cmp.Compare(a.ChannelID, b.ChannelID), cmp.Compare(a.UserID, b.UserID))
	})
	return chans, cus
}

func (t *tx) LapsedMutes(_ context.Context, now time.Time, limit int) ([]*chat.Channel, []*chat.ChannelUser, error) {
	chans, cus := t.mutes(&now)
	return copies(chans[:min(len(chans), limit)], cloneChannel), copies(cus[:min(len(cus), limit)], cloneChannelUser), nil
}

func (t *tx) NextMuteEnd(_ context.Context) (time.Time, bool, error) {
	chans, cus := t.mutes(nil)
	if len(chans) > 0 && (len(cus) == 0 || chans[0].MuteTimeout.Before(cus[0].MuteTimeout.Time)) {
		return chans[0].MuteTimeout.Time, true, nil
	} else if len(cus) > 0 {
		return cus[0].MuteTimeout.Time, true, nil
	}
	return time.Time{}, false, nil
}

// segIndex returns the index of the first message of l whose segment is
// >= seg, and whether it is equal.
func segIndex(l []*chat.Message, seg int64) (int, bool) {
	if n := len(l); n == 0 || l[n-1].ChannelSegment < seg {
		return n, false // past the end: the check of every new message
	}
	return slices.BinarySearchFunc(l, seg, func(m *chat.Message, s int64) int { return cmp.Compare(m.ChannelSegment, s) })
}

func (t *tx) CreateMessage(_ context.Context, m *chat.Message) error {
	d := t.r()
	if _, ok := d.messages[m.MessageID]; ok {
		return conflict("message %q already exists", m.MessageID)
	}
	l := d.chanMsgs[m.ChannelID]
	i, taken := segIndex(l, m.ChannelSegment)
	if taken {
		return conflict("channel %q already has a message with segment %d", m.ChannelID, m.ChannelSegment)
	}
	v, err := copyMessage(m)
	if err != nil {
		return err
	}
	put(t, &d.messages, v.MessageID, v)
	if i < len(l) {
		l = slices.Clip(l) // insert into a new array: the undo keeps the old one
	}
	put(t, &d.chanMsgs, v.ChannelID, slices.Insert(l, i, v))
	return nil
}

func (t *tx) SetChildrenNumber(_ context.Context, messageID string, n int) error {
	_ = change(t, t.r().messages, messageID, "message", func(m *chat.Message) { m.ChildrenNumber = n })
	return nil
}

func (t *tx) GetMessage(_ context.Context, messageID string) (*chat.Message, error) {
	return get(t.r().messages, messageID, cloneMessage, "message")
}

func (t *tx) GetMessages(_ context.Context, ids []string) ([]*chat.Message, error) {
	return byIDs(t.r().messages, ids, cloneMessage), nil
}

func (t *tx) UpdateMessage(_ context.Context, m *chat.Message) error {
	in, err := copyMessage(m)
	if err != nil {
		return err
	}
	return change(t, t.r().messages, m.MessageID, "message", func(v *chat.Message) {
		v.Data, v.Tags, v.IsDeleted, v.EditedAt, v.UpdatedAt = in.Data, in.Tags, in.IsDeleted, in.EditedAt, in.UpdatedAt
		v.FlagCount, v.Hashflag, v.MentionedUserIDs = in.FlagCount, in.Hashflag, in.MentionedUserIDs
	})
}

func (t *tx) QueryMessages(_ context.Context, f chat.MessageFilter) ([]*chat.Message, error) {
	channelID := f.ChannelID // (with ParentID and TopLevel both set, nothing matches)
	if p, ok := t.r().messages[f.ParentID]; ok && channelID == "" {
		channelID = p.ChannelID
	}
	l := t.r().chanMsgs[channelID]
	lo, hi := 0, len(l)
	if f.AfterSegment > 0 {
		lo, _ = segIndex(l, f.AfterSegment+1)
	}
	if f.BeforeSegment > 0 {
		hi, _ = segIndex(l, f.BeforeSegment)
	}
	hi = max(hi, lo)
	var out []*chat.Message
	for k := range hi - lo {
		m := l[lo+k]
		if f.Descending {
			m = l[hi-1-k]
		}
		if f.ParentID != "" && m.ParentID != f.ParentID || f.TopLevel && m.ParentID != "" ||
			f.UserID != "" && m.UserID != f.UserID || m.IsDeleted && !f.IncludeDeleted ||
			!tagsMatch(m.Tags, f.Tags, f.ExcludeTags) {
			continue
		}
		if out = append(out, cloneMessage(m)); f.Limit > 0 && len(out) >= f.Limit {
			break
		}
	}
	return out, nil
}

// softDelete marks m deleted (when live) and reports whether it did.
func (t *tx) softDelete(m *chat.Message, now time.Time) bool {
	return !m.IsDeleted && change(t, t.r().messages, m.MessageID, "message", func(v *chat.Message) {
		v.IsDeleted, v.Data, v.UpdatedAt = true, map[string]any{}, chat.NewTime(now)
	}) == nil
}

// softDeleteAll soft-deletes the messages of l that match and returns
// their ids.
func (t *tx) softDeleteAll(l []*chat.Message, match func(*chat.Message) bool, now time.Time) []string {
	var ids []string
	for _, m := range l {
		if match(m) && t.softDelete(m, now) {
			ids = append(ids, m.MessageID)
		}
	}
	return ids
}

func (t *tx) SoftDeleteMessages(_ context.Context, channelID, userID string, now time.Time) ([]string, error) {
	return t.softDeleteAll(t.r().chanMsgs[channelID], func(m *chat.Message) bool { return userID == "" || m.UserID == userID }, now), nil
}

func (t *tx) SoftDeleteUserMessages(_ context.Context, userID string, now time.Time) ([]string, error) {
	l := sortedValues(t.r().messages, func(m *chat.Message) bool { return m.UserID == userID }, oldestMessage)
	return t.softDeleteAll(l, func(*chat.Message) bool { return true }, now), nil
}

func newestMessage(a, b *chat.Message) int {
	return newest(a.CreatedAt, b.CreatedAt, a.MessageID, b.MessageID)
}

func oldestMessage(a, b *chat.Message) int { return newestMessage(b, a) }

// newestPage returns the messages that keep keeps, newest first, paged
// with the cursors of a search.
func (t *tx) newestPage(keep func(*chat.Message) bool, after, before *chat.MessageSearchCursor, limit int) []*chat.Message {
	l := sortedValues(t.r().messages, func(m *chat.Message) bool { return !m.IsDeleted && keep(m) }, newestMessage)
	at := func(m *chat.Message, c *chat.MessageSearchCursor) int {
		return newest(m.CreatedAt, chat.NewTime(c.CreatedAt), m.MessageID, c.MessageID)
	}
	return copies(window(l, cursor(after, at), cursor(before, at), 0, limit), cloneMessage)
}

// SearchMessages reads every live message: the SQL adapters answer the
// same from their word indexes.
func (t *tx) SearchMessages(_ context.Context, f chat.MessageSearch) ([]*chat.Message, error) {
	return t.newestPage(func(m *chat.Message) bool {
		return (f.ChannelID == "" || m.ChannelID == f.ChannelID) && (f.UserID == "" || m.UserID == f.UserID) &&
			(f.MemberOf == "" || t.r().isMember(m.ChannelID, f.MemberOf)) && f.Matches(chat.MessageWords(m))
	}, f.After, f.Before, f.Limit), nil
}

func (t *tx) UnreadMentionCounts(_ context.Context, cus []*chat.ChannelUser) ([]int64, error) {
	out := make([]int64, len(cus))
	for i, cu := range cus {
		for _, m := range t.r().above(cu.ChannelID, cu.ReadToSegment) {
			if !m.IsDeleted && slices.Contains(m.MentionedUserIDs, cu.UserID) {
				out[i]++
			}
		}
	}
	return out, nil
}

func (t *tx) QueryMentions(_ context.Context, f chat.MentionFilter) ([]*chat.Message, error) {
	return t.newestPage(func(m *chat.Message) bool {
		return (f.ChannelID == "" || m.ChannelID == f.ChannelID) && slices.Contains(m.MentionedUserIDs, f.UserID) &&
			t.r().isMember(m.ChannelID, f.UserID)
	}, f.After, f.Before, f.Limit), nil
}

// authorMessages returns the messages of userID that match, oldest first
// (createdAt, then id), up to limit.
func (t *tx) authorMessages(userID string, after *chat.PurgeCursor, limit int, match func(*chat.Message) bool) []*chat.Message {
	var cur *chat.Message
	if after != nil {
		cur = &chat.Message{CreatedAt: chat.NewTime(after.CreatedAt), MessageID: after.MessageID}
	}
	return first(sortedValues(t.r().messages, func(m *chat.Message) bool {
		return m.UserID == userID && (cur == nil || oldestMessage(m, cur) > 0) && match(m)
	}, oldestMessage), limit)
}

func (t *tx) SoftDeleteBatch(_ context.Context, f chat.PurgeFilter, now time.Time) ([]*chat.Message, error) {
	since, until := chat.NewTime(f.Since), chat.NewTime(f.Until)
	found := t.authorMessages(f.UserID, f.After, f.Limit, func(m *chat.Message) bool {
		return !m.IsDeleted && (f.ChannelID == "" || m.ChannelID == f.ChannelID) &&
			(f.Since.IsZero() || !m.CreatedAt.Before(since.Time)) && (f.Until.IsZero() || !m.CreatedAt.After(until.Time))
	})
	for _, m := range found {
		t.softDelete(m, now)
	}
	return copies(found, cloneMessage), nil
}

func (t *tx) UserMessages(_ context.Context, userID string, after *chat.PurgeCursor, limit int) ([]*chat.Message, error) {
	return copies(t.authorMessages(userID, after, limit, func(*chat.Message) bool { return true }), cloneMessage), nil
}

func (t *tx) AddReaction(_ context.Context, r *chat.Reaction) (*chat.Reaction, bool, error) {
	k := [3]string{r.UserID, r.ReferenceID, r.ReactionName}
	if old, ok := t.r().reactions[k]; ok {
		return cloneReaction(old), false, nil
	}
	if _, ok := t.r().messages[r.ReferenceID]; !ok {
		return nil, false, notFound("message", r.ReferenceID)
	}
	put(t, &t.r().reactions, k, cloneReaction(r))
	return cloneReaction(r), true, nil
}

func (t *tx) SetReactionCounts(_ context.Context, m *chat.Message, _ string) error {
	return change(t, t.r().messages, m.MessageID, "message", func(v *chat.Message) {
		v.Reactions, v.ReactionsCount = maps.Clone(m.Reactions), m.ReactionsCount
	})
}

func (t *tx) RemoveReaction(_ context.Context, userID, messageID, name string) (*chat.Reaction, error) {
	k := [3]string{userID, messageID, name}
	r, ok := t.r().reactions[k]
	if !ok {
		return nil, chat.Errorf(chat.CodeNotFound, "user %q has no %q reaction to message %q", userID, name, messageID)
	}
	del(t, t.r().reactions, k)
	return cloneReaction(r), nil
}

func (t *tx) QueryReactions(_ context.Context, f chat.ReactionFilter) ([]*chat.Reaction, error) {
	l := sortedValues(t.r().reactions, func(r *chat.Reaction) bool {
		return r.ReferenceID == f.MessageID && (f.ReactionName == "" || r.ReactionName == f.ReactionName)
	}, func(a, b *chat.Reaction) int { return newest(a.CreatedAt, b.CreatedAt, a.ReactionID, b.ReactionID) })
	at := func(r *chat.Reaction, c *chat.ReactionCursor) int {
		return newest(r.CreatedAt, chat.NewTime(c.CreatedAt), r.ReactionID, c.ReactionID)
	}
	return copies(window(l, cursor(f.After, at), cursor(f.Before, at), f.Offset, f.Limit), cloneReaction), nil
}

func (t *tx) MostReacted(_ context.Context, name, channelID string, limit int) ([]*chat.Message, error) {
	found := sortedValues(t.r().messages, func(m *chat.Message) bool {
		return !m.IsDeleted && (channelID == "" || m.ChannelID == channelID) && m.Reactions[name] > 0
	}, func(a, b *chat.Message) int {
		return cmp.Or(cmp.Compare(b.Reactions[name], a.Reactions[name]), newestMessage(a, b))
	})
	return copies(first(found, limit), cloneMessage), nil
}

func (t *tx) UserReactions(_ context.Context, userID string, after *chat.UserReactionCursor, limit int) ([]*chat.Reaction, error) {
	order := func(a, b *chat.Reaction) int {
		return cmp.Or(cmp.Compare(a.ReferenceID, b.ReferenceID), cmp.Compare(a.ReactionName, b.ReactionName))
	}
	keep := func(r *chat.Reaction) bool {
		return r.UserID == userID &&
			(after == nil || order(r, &chat.Reaction{ReferenceID: after.MessageID, ReactionName: after.ReactionName}) > 0)
	}
	return copies(first(sortedValues(t.r().reactions, keep, order), limit), cloneReaction), nil
}

func (t *tx) AddFlag(_ context.Context, kind, targetID, userID string, _ time.Time) (bool, error) {
	k := [3]string{kind, targetID, userID}
	if t.r().flags[k] {
		return false, nil
	}
	put(t, &t.r().flags, k, true)
	return true, nil
}

func (t *tx) ClearFlags(_ context.Context, kind, targetID string) error {
	for k := range t.r().flags {
		if k[0] == kind && k[1] == targetID {
			del(t, t.r().flags, k)
		}
	}
	return nil
}

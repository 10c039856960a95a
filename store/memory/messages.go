package memory

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	chat "github.com/chatengine/chat"
)

// segIndex returns the index of the first message of l whose segment is
// >= seg, and whether it is equal.
func segIndex(l []*chat.Message, seg int64) (int, bool) {
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
	v := cloneMessage(m)
	var err error
	if v.Data, err = normMap(m.Data); err != nil {
		return err
	}
	put(t, d.messages, v.MessageID, v)
	set(t, &d.all, append(d.all, v))
	if i < len(l) {
		l = slices.Clip(l) // insert into a new array: the undo keeps the old one
	}
	put(t, d.chanMsgs, v.ChannelID, slices.Insert(l, i, v))
	if _, ok := d.messages[v.ParentID]; ok && v.ParentID != "" {
		return change(t, d.messages, v.ParentID, "message", func(p *chat.Message) { p.ChildrenNumber++ })
	}
	return nil
}

func (t *tx) GetMessage(_ context.Context, messageID string) (*chat.Message, error) {
	return get(t, t.r().messages, messageID, cloneMessage, "message")
}

func (t *tx) GetMessages(_ context.Context, ids []string) ([]*chat.Message, error) {
	return byIDs(t.r().messages, ids, cloneMessage), nil
}

func (t *tx) UpdateMessage(_ context.Context, m *chat.Message) error {
	data, err := normMap(m.Data)
	if err != nil {
		return err
	}
	in := cloneMessage(m)
	return change(t, t.r().messages, m.MessageID, "message", func(v *chat.Message) {
		v.Data, v.Tags, v.IsDeleted, v.EditedAt, v.UpdatedAt = data, in.Tags, in.IsDeleted, in.EditedAt, in.UpdatedAt
		v.FlagCount, v.Hashflag, v.MentionedUserIDs = in.FlagCount, in.Hashflag, in.MentionedUserIDs
	})
}

func (t *tx) QueryMessages(_ context.Context, f chat.MessageFilter) ([]*chat.Message, error) {
	if f.ParentID != "" && f.TopLevel {
		return nil, nil
	}
	channelID := f.ChannelID
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
	if m.IsDeleted {
		return false
	}
	return change(t, t.r().messages, m.MessageID, "message", func(v *chat.Message) {
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
	return t.softDeleteAll(t.r().all, func(m *chat.Message) bool { return m.UserID == userID }, now), nil
}

// newestMessage orders messages newest first (createdAt, then id).
func newestMessage(a, b *chat.Message) int {
	return cmp.Or(b.CreatedAt.Compare(a.CreatedAt.Time), cmp.Compare(b.MessageID, a.MessageID))
}

// oldestMessage orders messages oldest first (createdAt, then id).
func oldestMessage(a, b *chat.Message) int { return newestMessage(b, a) }

// newestPage sorts l newest first and pages it with the cursors of a
// search.
func newestPage(l []*chat.Message, after, before *chat.MessageSearchCursor, limit int) []*chat.Message {
	slices.SortFunc(l, newestMessage)
	cursor := func(c *chat.MessageSearchCursor) func(*chat.Message) int {
		if c == nil {
			return nil
		}
		cur := &chat.Message{CreatedAt: chat.NewTime(c.CreatedAt), MessageID: c.MessageID}
		return func(m *chat.Message) int { return newestMessage(m, cur) }
	}
	return copies(window(l, cursor(after), cursor(before), 0, limit), cloneMessage)
}

// SearchMessages implements chat.SearchStore by reading every live
// message: the SQL adapters answer the same from their word indexes.
func (t *tx) SearchMessages(_ context.Context, f chat.MessageSearch) ([]*chat.Message, error) {
	var found []*chat.Message
	for _, m := range t.r().all {
		if !m.IsDeleted && (f.ChannelID == "" || m.ChannelID == f.ChannelID) && (f.UserID == "" || m.UserID == f.UserID) &&
			(f.MemberOf == "" || t.r().isMember(m.ChannelID, f.MemberOf)) && f.Matches(chat.MessageWords(m)) {
			found = append(found, m)
		}
	}
	return newestPage(found, f.After, f.Before, f.Limit), nil
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
	var found []*chat.Message
	for _, m := range t.r().all {
		if !m.IsDeleted && (f.ChannelID == "" || m.ChannelID == f.ChannelID) &&
			slices.Contains(m.MentionedUserIDs, f.UserID) && t.r().isMember(m.ChannelID, f.UserID) {
			found = append(found, m)
		}
	}
	return newestPage(found, f.After, f.Before, f.Limit), nil
}

// authorMessages returns the messages of userID that match, oldest first
// (createdAt, then id), up to limit.
func (t *tx) authorMessages(userID string, after *chat.PurgeCursor, limit int, match func(*chat.Message) bool) []*chat.Message {
	var cur *chat.Message
	if after != nil {
		cur = &chat.Message{CreatedAt: chat.NewTime(after.CreatedAt), MessageID: after.MessageID}
	}
	var found []*chat.Message
	for _, m := range t.r().all {
		if m.UserID == userID && (cur == nil || oldestMessage(m, cur) > 0) && match(m) {
			found = append(found, m)
		}
	}
	slices.SortFunc(found, oldestMessage)
	return first(found, limit)
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

// ---- reactions and flags ----

// findReaction returns the index of the user's reaction of name in l, or -1.
func findReaction(l []*chat.Reaction, userID, name string) int {
	return slices.IndexFunc(l, func(r *chat.Reaction) bool { return r.UserID == userID && r.ReactionName == name })
}

func (t *tx) AddReaction(_ context.Context, r *chat.Reaction) (*chat.Reaction, bool, error) {
	l := t.r().msgReacts[r.ReferenceID]
	if i := findReaction(l, r.UserID, r.ReactionName); i >= 0 {
		return cloneReaction(l[i]), false, nil
	}
	m, ok := t.r().messages[r.ReferenceID]
	if !ok {
		return nil, false, notFound("message", r.ReferenceID)
	}
	if _, ok := t.r().reactions[r.ReactionID]; ok {
		return nil, false, conflict("reaction %q already exists", r.ReactionID)
	}
	v := cloneReaction(r)
	put(t, t.r().reactions, v.ReactionID, v)
	put(t, t.r().msgReacts, v.ReferenceID, append(l, v))
	t.countReaction(m, v.ReactionName, +1)
	return cloneReaction(v), true, nil
}

// countReaction adds delta to the message's count of name.
func (t *tx) countReaction(m *chat.Message, name string, delta int) {
	_ = change(t, t.r().messages, m.MessageID, "message", func(v *chat.Message) {
		v.Reactions = maps.Clone(m.Reactions)
		if v.Reactions == nil {
			v.Reactions = map[string]int{}
		}
		if v.Reactions[name] += delta; v.Reactions[name] <= 0 {
			delete(v.Reactions, name)
		}
		v.ReactionsCount += delta
	})
}

func (t *tx) RemoveReaction(_ context.Context, userID, messageID, name string) (*chat.Reaction, error) {
	l := t.r().msgReacts[messageID]
	i := findReaction(l, userID, name)
	if i < 0 {
		return nil, chat.Errorf(chat.CodeNotFound, "user %q has no %q reaction to message %q", userID, name, messageID)
	}
	r := l[i]
	del(t, t.r().reactions, r.ReactionID)
	put(t, t.r().msgReacts, messageID, slices.Delete(slices.Clone(l), i, i+1))
	if m, ok := t.r().messages[messageID]; ok {
		t.countReaction(m, name, -1)
	}
	return cloneReaction(r), nil
}

// newestReaction orders reactions newest first.
func newestReaction(a, b *chat.Reaction) int {
	return cmp.Or(b.CreatedAt.Compare(a.CreatedAt.Time), cmp.Compare(b.ReactionID, a.ReactionID))
}

func (t *tx) QueryReactions(_ context.Context, f chat.ReactionFilter) ([]*chat.Reaction, error) {
	var l []*chat.Reaction
	for _, r := range t.r().msgReacts[f.MessageID] {
		if f.ReactionName == "" || r.ReactionName == f.ReactionName {
			l = append(l, r)
		}
	}
	slices.SortFunc(l, newestReaction)
	cursor := func(c *chat.ReactionCursor) func(*chat.Reaction) int {
		if c == nil {
			return nil
		}
		cur := &chat.Reaction{CreatedAt: chat.NewTime(c.CreatedAt), ReactionID: c.ReactionID}
		return func(r *chat.Reaction) int { return newestReaction(r, cur) }
	}
	return copies(window(l, cursor(f.After), cursor(f.Before), f.Offset, f.Limit), cloneReaction), nil
}

func (t *tx) MostReacted(_ context.Context, name, channelID string, limit int) ([]*chat.Message, error) {
	var found []*chat.Message
	for id := range t.r().msgReacts {
		m, ok := t.r().messages[id]
		if ok && !m.IsDeleted && (channelID == "" || m.ChannelID == channelID) && m.Reactions[name] > 0 {
			found = append(found, m)
		}
	}
	slices.SortFunc(found, func(a, b *chat.Message) int {
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
	put(t, t.r().flags, k, true)
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

package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	chat "github.com/chatengine/chat"
)

func (t *tx) AddReaction(_ context.Context, r *chat.Reaction) (*chat.Reaction, bool, error) {
	if err := t.writable(); err != nil {
		return nil, false, err
	}
	d := t.d
	key := reactKey{r.UserID, r.ReferenceID, r.ReactionName}
	if old, ok := d.reactions[key]; ok {
		return cpReaction(old), false, nil
	}
	m, ok := d.msgs[r.ReferenceID]
	if !ok {
		return nil, false, notFound("message", r.ReferenceID)
	}
	if _, ok := d.reactIDs[r.ReactionID]; ok {
		return nil, false, conflict("reaction %q already exists", r.ReactionID)
	}
	v := normReaction(r)
	setKey(t, d.reactions, key, v)
	setKey(t, d.reactIDs, v.ReactionID, key)
	list := d.msgReacts[v.ReferenceID]
	if list == nil {
		list = &reactList{}
		setKey(t, d.msgReacts, v.ReferenceID, list)
	}
	sortedInsert(t, list, v, cmpReaction)
	t.countReaction(m, v.ReactionName, +1)
	return cpReaction(v), true, nil
}

// countReaction adds delta to the message's count of name and keeps the
// per-name index in step.
func (t *tx) countReaction(m *msg, name string, delta int) {
	mv := *m
	e := mv.extra()
	e.reactions = cloneCounts(e.reactions)
	if e.reactions == nil {
		e.reactions = map[string]int{}
	}
	n := e.reactions[name] + delta
	if n > 0 {
		e.reactions[name] = n
	} else {
		delete(e.reactions, name)
	}
	e.reactionsCount += delta
	mv.setExtra(e)
	replace(t, m, mv)
	if n > 0 {
		setKey(t, innerMap(t, t.d.reactNames, name), m.id, m)
	} else if byMsg := t.d.reactNames[name]; byMsg != nil {
		delKey(t, byMsg, m.id)
	}
}

func (t *tx) RemoveReaction(_ context.Context, userID, messageID, name string) (*chat.Reaction, error) {
	if err := t.writable(); err != nil {
		return nil, err
	}
	d := t.d
	key := reactKey{userID, messageID, name}
	r, ok := d.reactions[key]
	if !ok {
		return nil, chat.Errorf(chat.CodeNotFound, "user %q has no %q reaction to message %q", userID, name, messageID)
	}
	delKey(t, d.reactions, key)
	delKey(t, d.reactIDs, r.ReactionID)
	if list := d.msgReacts[messageID]; list != nil {
		sortedRemove(t, list, r, cmpReaction)
	}
	if m, ok := d.msgs[messageID]; ok {
		t.countReaction(m, name, -1)
	}
	return cpReaction(r), nil
}

func (t *tx) QueryReactions(_ context.Context, f chat.ReactionFilter) ([]*chat.Reaction, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	var list reactList
	if p := t.d.msgReacts[f.MessageID]; p != nil {
		list = *p
	}
	var low, high func(*chat.Reaction) int
	if f.After != nil {
		cur := *f.After
		high = func(r *chat.Reaction) int { return cmpReactionCursor(r, cur) }
	}
	if f.Before != nil {
		cur := *f.Before
		low = func(r *chat.Reaction) int { return cmpReactionCursor(r, cur) }
	}
	lo, hi := window(list, low, high)
	pg := page{skip: f.Offset, limit: f.Limit}
	var out []*chat.Reaction
	walk(list, lo, hi, f.Before == nil, func(r *chat.Reaction) bool {
		if f.ReactionName != "" && r.ReactionName != f.ReactionName {
			return true
		}
		keep, full := pg.take()
		if keep {
			out = append(out, cpReaction(r))
		}
		return !full
	})
	return out, nil
}

func cmpReactionCursor(r *chat.Reaction, cur chat.ReactionCursor) int {
	if c := r.CreatedAt.Compare(cur.CreatedAt); c != 0 {
		return c
	}
	return cmp.Compare(r.ReactionID, cur.ReactionID)
}

func (t *tx) MostReacted(_ context.Context, name, channelID string, limit int) ([]*chat.Message, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	var found []*msg
	for _, m := range t.d.reactNames[name] {
		if m.deleted || (channelID != "" && t.d.str(m.ch) != channelID) || m.reactionCount(name) <= 0 {
			continue
		}
		found = append(found, m)
	}
	slices.SortFunc(found, func(a, b *msg) int {
		if c := cmp.Compare(b.reactionCount(name), a.reactionCount(name)); c != 0 {
			return c
		}
		if c := cmp.Compare(b.created, a.created); c != 0 {
			return c
		}
		return cmp.Compare(b.id, a.id)
	})
	if limit > 0 && len(found) > limit {
		found = found[:limit]
	}
	out := make([]*chat.Message, len(found))
	for i, m := range found {
		out[i] = t.d.message(m)
	}
	return out, nil
}

// ---- flags ----

func (t *tx) AddFlag(_ context.Context, kind, targetID, userID string, now time.Time) (bool, error) {
	if err := t.writable(); err != nil {
		return false, err
	}
	by := innerMap(t, t.d.flags, flagKey{kind, targetID})
	if _, ok := by[userID]; ok {
		return false, nil
	}
	setKey(t, by, userID, chat.NewTime(now))
	return true, nil
}

func (t *tx) ClearFlags(_ context.Context, kind, targetID string) error {
	if err := t.writable(); err != nil {
		return err
	}
	delKey(t, t.d.flags, flagKey{kind, targetID})
	return nil
}

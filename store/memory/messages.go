package memory

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	chat "github.com/chatengine/chat"
)

func (t *tx) CreateMessage(_ context.Context, m *chat.Message) error {
	if err := t.writable(); err != nil {
		return err
	}
	d := t.d
	if _, ok := d.msgs[m.MessageID]; ok {
		return conflict("message %q already exists", m.MessageID)
	}
	cm := d.chanMsgs[m.ChannelID]
	if cm != nil && d.find(cm.all, m.ChannelSegment) != nil {
		return conflict("channel %q already has a message with segment %d", m.ChannelID, m.ChannelSegment)
	}
	sm, err := d.toMsg(m)
	if err != nil {
		return err
	}
	if len(d.allMsgs) >= math.MaxInt32 {
		return chat.Errorf(chat.CodeInternal, "memory store: too many messages")
	}
	// One undo entry (below) reverses every insertion; the parent's count
	// is replaced with its own entry.
	pos := int32(len(d.allMsgs))
	d.allMsgs = append(d.allMsgs, sm)
	d.msgs[sm.id] = sm
	newCM := cm == nil
	if newCM {
		cm = &chanMsgs{}
		d.chanMsgs[m.ChannelID] = cm
	}
	d.insertSeg(&cm.all, pos)
	var kids *msgList
	newKids := false
	if sm.parentID == "" {
		d.insertSeg(&cm.top, pos)
	} else {
		kids = d.children[sm.parentID]
		if kids == nil {
			kids, newKids = &msgList{}, true
			d.children[sm.parentID] = kids
		}
		d.insertSeg(kids, pos)
	}
	mine := d.byAuthor[m.UserID]
	newMine := mine == nil
	if newMine {
		mine = &msgList{}
		d.byAuthor[m.UserID] = mine
	}
	*mine = append(*mine, pos)
	t.onUndo(func() {
		// Undo runs in reverse, so pos is the last of its author's and of
		// allMsgs again.
		if n := len(*mine); n > 0 && (*mine)[n-1] == pos {
			*mine = (*mine)[:n-1]
		}
		if newMine {
			delete(d.byAuthor, d.str(sm.user))
		}
		if kids != nil {
			d.removeSeg(kids, pos)
			if newKids {
				delete(d.children, sm.parentID)
			}
		} else {
			d.removeSeg(&cm.top, pos)
		}
		d.removeSeg(&cm.all, pos)
		if newCM {
			delete(d.chanMsgs, d.str(sm.ch))
		}
		delete(d.msgs, sm.id)
		if n := len(d.allMsgs); n > 0 && d.allMsgs[n-1] == sm {
			d.allMsgs[n-1] = nil
			d.allMsgs = d.allMsgs[:n-1]
		}
	})
	if sm.deleted {
		d.insertSeg(&cm.deleted, pos)
		t.onUndo(func() { d.removeSeg(&cm.deleted, pos) })
	}
	ca := chanAuthorKey{sm.ch, sm.user}
	own := d.chanAuthor[ca]
	if own == nil {
		own = &msgList{}
		setKey(t, d.chanAuthor, ca, own)
	}
	d.insertSeg(own, pos)
	t.onUndo(func() { d.removeSeg(own, pos) })
	if sm.parentID != "" {
		if p, ok := d.msgs[sm.parentID]; ok {
			v := *p
			v.children++
			replace(t, p, v)
		}
	}
	if sm.x != nil {
		t.indexMentions(pos, nil, sm.x.mentions)
	}
	return nil
}

func (t *tx) GetMessage(_ context.Context, messageID string) (*chat.Message, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	m, ok := t.d.msgs[messageID]
	if !ok {
		return nil, notFound("message", messageID)
	}
	return t.d.message(m), nil
}

func (t *tx) GetMessages(_ context.Context, ids []string) ([]*chat.Message, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	out := make([]*chat.Message, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if m, ok := t.d.msgs[id]; ok && !seen[id] {
			seen[id] = true
			out = append(out, t.d.message(m))
		}
	}
	return out, nil
}

func (t *tx) UpdateMessage(_ context.Context, m *chat.Message) error {
	if err := t.writable(); err != nil {
		return err
	}
	p, ok := t.d.msgs[m.MessageID]
	if !ok {
		return notFound("message", m.MessageID)
	}
	in, err := t.d.toMsg(m)
	if err != nil {
		return err
	}
	v := *p
	t.deletedChange(p, in.deleted)
	v.data = in.data
	v.deleted = in.deleted
	v.updated = in.updated
	v.emptyTags = in.emptyTags
	e, ne := v.extra(), in.extra()
	e.tags = ne.tags
	e.hasEdited, e.edited = ne.hasEdited, ne.edited
	e.flagCount = ne.flagCount
	e.bits, e.hashes, e.hash = ne.bits, ne.hashes, ne.hash
	old := e.mentions
	e.mentions = ne.mentions
	v.setExtra(e)
	replace(t, p, v)
	if len(ne.mentions) > 0 {
		if pos, ok := t.d.position(p); ok {
			t.indexMentions(pos, old, ne.mentions)
		}
	}
	return nil
}

func (t *tx) QueryMessages(_ context.Context, f chat.MessageFilter) ([]*chat.Message, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	var list msgList
	switch {
	case f.ParentID != "":
		if f.TopLevel {
			return nil, nil
		}
		if kids := t.d.children[f.ParentID]; kids != nil {
			list = *kids
		}
	case f.TopLevel:
		if cm := t.d.chanMsgs[f.ChannelID]; cm != nil {
			list = cm.top
		}
	default:
		if cm := t.d.chanMsgs[f.ChannelID]; cm != nil {
			list = cm.all
		}
	}
	if f.UserID != "" {
		list = t.authorList(f)
	}
	lo, hi := t.d.bounds(list, f.AfterSegment, f.BeforeSegment)
	pg := page{limit: f.Limit}
	var out []*chat.Message
	walk(list, lo, hi, f.Descending, func(i int32) bool {
		m := t.d.allMsgs[i]
		if f.ChannelID != "" && t.d.str(m.ch) != f.ChannelID {
			return true
		}
		if m.deleted && !f.IncludeDeleted {
			return true
		}
		if !tagsMatch(m.tags(), f.Tags, f.ExcludeTags) {
			return true
		}
		keep, full := pg.take()
		if keep {
			out = append(out, t.d.message(m))
		}
		return !full
	})
	return out, nil
}

// authorList returns the positions of f.UserID's messages in f's channel
// (comments of f.ParentID, or top-level ones, when f says so) in segment
// order: the author's list holds every channel, in insertion order.
func (t *tx) authorList(f chat.MessageFilter) msgList {
	mine := t.d.byAuthor[f.UserID]
	if mine == nil {
		return nil
	}
	var out msgList
	for _, i := range *mine {
		m := t.d.allMsgs[i]
		if t.d.str(m.ch) != f.ChannelID ||
			(f.ParentID != "" && m.parentID != f.ParentID) || (f.TopLevel && m.parentID != "") {
			continue
		}
		out = append(out, i)
	}
	slices.SortFunc(out, func(a, b int32) int { return cmp.Compare(t.d.segAt(a), t.d.segAt(b)) })
	return out
}

// softDelete marks m deleted (when live) and reports whether it did.
func (t *tx) softDelete(m *msg, now int64) bool {
	if m.deleted {
		return false
	}
	t.deletedChange(m, true)
	v := *m
	v.deleted = true
	v.data = emptyData
	v.updated = now
	replace(t, m, v)
	return true
}

// deletedChange keeps the channel's list of deleted messages in step when
// m's deleted flag is about to become deleted.
func (t *tx) deletedChange(m *msg, deleted bool) {
	if m.deleted == deleted {
		return
	}
	d := t.d
	cm := d.chanMsgs[d.str(m.ch)]
	i, ok := d.search(cm.all, m.seg)
	if !ok {
		return
	}
	pos := cm.all[i]
	if deleted {
		d.insertSeg(&cm.deleted, pos)
		t.onUndo(func() { d.removeSeg(&cm.deleted, pos) })
	} else {
		d.removeSeg(&cm.deleted, pos)
		t.onUndo(func() { d.insertSeg(&cm.deleted, pos) })
	}
}

// emptyData is the encoding of an empty object (the data of a deleted
// message). It is never modified.
var emptyData = []byte{encObject, 0}

func (t *tx) SoftDeleteMessages(_ context.Context, channelID, userID string, now time.Time) ([]string, error) {
	if err := t.writable(); err != nil {
		return nil, err
	}
	at := ms(now)
	var ids []string
	if userID == "" {
		if cm := t.d.chanMsgs[channelID]; cm != nil {
			for _, i := range cm.all {
				if m := t.d.allMsgs[i]; t.softDelete(m, at) {
					ids = append(ids, m.id)
				}
			}
		}
		return ids, nil
	}
	if mine := t.d.byAuthor[userID]; mine != nil {
		for _, i := range *mine {
			if m := t.d.allMsgs[i]; t.d.str(m.ch) == channelID && t.softDelete(m, at) {
				ids = append(ids, m.id)
			}
		}
	}
	return ids, nil
}

func (t *tx) SoftDeleteUserMessages(_ context.Context, userID string, now time.Time) ([]string, error) {
	if err := t.writable(); err != nil {
		return nil, err
	}
	at := ms(now)
	var ids []string
	if mine := t.d.byAuthor[userID]; mine != nil {
		for _, i := range *mine {
			if m := t.d.allMsgs[i]; t.softDelete(m, at) {
				ids = append(ids, m.id)
			}
		}
	}
	return ids, nil
}

package memory

import (
	"context"
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
	if cm != nil && cm.all.find(m.ChannelSegment) != nil {
		return conflict("channel %q already has a message with segment %d", m.ChannelID, m.ChannelSegment)
	}
	sm, err := normMessage(m)
	if err != nil {
		return err
	}
	if cm == nil {
		cm = &chanMsgs{}
		setKey(t, d.chanMsgs, m.ChannelID, cm)
	}
	setKey(t, d.msgs, sm.MessageID, sm)
	sortedInsert(t, (*[]*chat.Message)(&cm.all), sm, cmpSeg)
	if sm.ParentID == "" {
		sortedInsert(t, (*[]*chat.Message)(&cm.top), sm, cmpSeg)
	} else {
		kids := d.children[sm.ParentID]
		if kids == nil {
			kids = &msgList{}
			setKey(t, d.children, sm.ParentID, kids)
		}
		sortedInsert(t, (*[]*chat.Message)(kids), sm, cmpSeg)
		if p, ok := d.msgs[sm.ParentID]; ok {
			v := *p
			v.ChildrenNumber++
			replace(t, p, v)
		}
	}
	mine := d.byAuthor[sm.UserID]
	if mine == nil {
		mine = &[]*chat.Message{}
		setKey(t, d.byAuthor, sm.UserID, mine)
	}
	*mine = append(*mine, sm)
	t.onUndo(func() {
		// Undo runs in reverse, so sm is the last element again.
		if n := len(*mine); n > 0 && (*mine)[n-1] == sm {
			(*mine)[n-1] = nil
			*mine = (*mine)[:n-1]
		}
	})
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
	return cpMessage(m), nil
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
			out = append(out, cpMessage(m))
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
	in, err := normMessage(m)
	if err != nil {
		return err
	}
	v := *p
	v.Data = in.Data
	v.Tags = in.Tags
	v.IsDeleted = in.IsDeleted
	v.EditedAt = in.EditedAt
	v.UpdatedAt = in.UpdatedAt
	v.FlagCount = in.FlagCount
	v.Hashflag = in.Hashflag
	replace(t, p, v)
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
	lo, hi := list.bounds(f.AfterSegment, f.BeforeSegment)
	pg := page{limit: f.Limit}
	var out []*chat.Message
	walk(list, lo, hi, f.Descending, func(m *chat.Message) bool {
		if f.ChannelID != "" && m.ChannelID != f.ChannelID {
			return true
		}
		if m.IsDeleted && !f.IncludeDeleted {
			return true
		}
		if !tagsMatch(m.Tags, f.Tags, f.ExcludeTags) {
			return true
		}
		keep, full := pg.take()
		if keep {
			out = append(out, cpMessage(m))
		}
		return !full
	})
	return out, nil
}

// softDelete marks m deleted (when live) and reports whether it did.
func (t *tx) softDelete(m *chat.Message, now chat.Time) bool {
	if m.IsDeleted {
		return false
	}
	v := *m
	v.IsDeleted = true
	v.Data = map[string]any{}
	v.UpdatedAt = now
	replace(t, m, v)
	return true
}

func (t *tx) SoftDeleteMessages(_ context.Context, channelID, userID string, now time.Time) ([]string, error) {
	if err := t.writable(); err != nil {
		return nil, err
	}
	at := chat.NewTime(now)
	var ids []string
	if userID == "" {
		if cm := t.d.chanMsgs[channelID]; cm != nil {
			for _, m := range cm.all {
				if t.softDelete(m, at) {
					ids = append(ids, m.MessageID)
				}
			}
		}
		return ids, nil
	}
	if mine := t.d.byAuthor[userID]; mine != nil {
		for _, m := range *mine {
			if m.ChannelID == channelID && t.softDelete(m, at) {
				ids = append(ids, m.MessageID)
			}
		}
	}
	return ids, nil
}

func (t *tx) SoftDeleteUserMessages(_ context.Context, userID string, now time.Time) ([]string, error) {
	if err := t.writable(); err != nil {
		return nil, err
	}
	at := chat.NewTime(now)
	var ids []string
	if mine := t.d.byAuthor[userID]; mine != nil {
		for _, m := range *mine {
			if t.softDelete(m, at) {
				ids = append(ids, m.MessageID)
			}
		}
	}
	return ids, nil
}

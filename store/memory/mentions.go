package memory

import (
	"context"
	"slices"
	"strings"

	chat "github.com/chatengine/chat"
)

// position returns the position in allMsgs of the stored message p.
func (d *data) position(p *msg) (int32, bool) {
	cm := d.chanMsgs[d.str(p.ch)]
	if cm == nil {
		return 0, false
	}
	i, ok := d.search(cm.all, p.seg)
	if !ok {
		return 0, false
	}
	return cm.all[i], true
}

// indexMentions adds the message at pos to the mention lists of the users
// of now that were not in was.
func (t *tx) indexMentions(pos int32, was, now []string) {
	d := t.d
	for _, u := range now {
		if slices.Contains(was, u) {
			continue
		}
		l := d.mentioned[u]
		if l == nil {
			l = &[]int32{}
			setKey(t, d.mentioned, u, l)
		}
		*l = append(*l, pos)
		t.onUndo(func() {
			if n := len(*l); n > 0 && (*l)[n-1] == pos {
				*l = (*l)[:n-1]
			}
		})
	}
}

// mentionsOf returns the distinct live messages that mention userID now,
// in channelID when not empty.
func (d *data) mentionsOf(userID, channelID string) []*msg {
	l := d.mentioned[userID]
	if l == nil {
		return nil
	}
	var out []*msg
	seen := make(map[int32]bool, len(*l))
	for _, pos := range *l {
		m := d.allMsgs[pos]
		if seen[pos] || m == nil || m.deleted || m.x == nil || !slices.Contains(m.x.mentions, userID) {
			continue
		}
		if channelID != "" && d.str(m.ch) != channelID {
			continue
		}
		seen[pos] = true
		out = append(out, m)
	}
	return out
}

// UnreadMentionCounts implements chat.MentionStore.
func (t *tx) UnreadMentionCounts(_ context.Context, cus []*chat.ChannelUser) ([]int64, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	out := make([]int64, len(cus))
	for i, cu := range cus {
		if t.d.mentioned[cu.UserID] == nil {
			continue
		}
		for _, m := range t.d.mentionsOf(cu.UserID, cu.ChannelID) {
			if m.seg > cu.ReadToSegment {
				out[i]++
			}
		}
	}
	return out, nil
}

// QueryMentions implements chat.MentionStore.
func (t *tx) QueryMentions(_ context.Context, f chat.MentionFilter) ([]*chat.Message, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	d := t.d
	found := d.mentionsOf(f.UserID, f.ChannelID)
	mine := d.userChans[f.UserID]
	keep := found[:0]
	for _, m := range found {
		if cu := mine[d.str(m.ch)]; cu == nil || cu.Membership != chat.MembershipMember {
			continue
		}
		keep = append(keep, m)
	}
	// Newest first: createdAt, then messageId, descending.
	cmp := func(a, b *msg) int {
		if a.created != b.created {
			if a.created > b.created {
				return -1
			}
			return 1
		}
		return -strings.Compare(a.id, b.id)
	}
	slices.SortFunc(keep, cmp)
	at := func(c *chat.MessageSearchCursor) *msg { return &msg{created: ms(c.CreatedAt), id: c.MessageID} }
	var out []*chat.Message
	if f.Before != nil {
		b := at(f.Before)
		for i := len(keep) - 1; i >= 0 && (f.Limit <= 0 || len(out) < f.Limit); i-- {
			if cmp(keep[i], b) < 0 {
				out = append(out, d.message(keep[i]))
			}
		}
		return out, nil
	}
	for _, m := range keep {
		if f.Limit > 0 && len(out) >= f.Limit {
			break
		}
		if f.After != nil && cmp(m, at(f.After)) <= 0 {
			continue
		}
		out = append(out, d.message(m))
	}
	return out, nil
}

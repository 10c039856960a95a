package memory

import (
	"cmp"
	"context"
	"slices"
	"strings"

	chat "github.com/chatengine/chat"
)

// SearchMessages implements chat.SearchStore by scanning every live
// message: the SQL adapters answer the same from their word indexes.
func (t *tx) SearchMessages(_ context.Context, f chat.MessageSearch) ([]*chat.Message, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	after := func(m *msg, c *chat.MessageSearchCursor) int {
		// > 0 when m comes after c in the newest-first order.
		if x := cmp.Compare(c.CreatedAt.UnixMilli(), m.created); x != 0 {
			return x
		}
		return strings.Compare(c.MessageID, m.id)
	}
	var found []*msg
	for _, m := range t.d.allMsgs {
		if m.deleted {
			continue
		}
		ch := t.d.str(m.ch)
		if f.ChannelID != "" && ch != f.ChannelID || f.UserID != "" && t.d.str(m.user) != f.UserID {
			continue
		}
		if f.MemberOf != "" {
			cu := t.d.members[ch][f.MemberOf]
			if cu == nil || cu.Membership != chat.MembershipMember {
				continue
			}
		}
		if f.After != nil && after(m, f.After) <= 0 || f.Before != nil && after(m, f.Before) >= 0 {
			continue
		}
		if !f.Matches(chat.MessageWords(t.d.message(m))) {
			continue
		}
		found = append(found, m)
	}
	slices.SortFunc(found, func(a, b *msg) int {
		if c := cmp.Compare(b.created, a.created); c != 0 {
			return c
		}
		return strings.Compare(b.id, a.id)
	})
	if f.Before != nil {
		slices.Reverse(found)
	}
	if f.Limit > 0 && len(found) > f.Limit {
		found = found[:f.Limit]
	}
	out := make([]*chat.Message, len(found))
	for i, m := range found {
		out[i] = t.d.message(m)
	}
	return out, nil
}

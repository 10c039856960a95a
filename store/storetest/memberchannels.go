package storetest

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// memberModel is what the member-channel cases expect: the channels and
// the user's memberships, from which a filter's result is computed.
type memberModel struct {
	channels map[string]*chat.Channel
	member   map[string]bool // channel id -> the user is a member
}

// want returns the ids QueryChannels(f) must return for f.MemberOf, newest
// first, ignoring After, Before, Offset and Limit.
func (m *memberModel) want(f chat.ChannelFilter) []string {
	var cs []*chat.Channel
	for id, c := range m.channels {
		if !m.member[id] || c.IsClosed && !f.IncludeClosed {
			continue
		}
		if len(f.Tags) > 0 && !slices.ContainsFunc(f.Tags, func(t string) bool { return slices.Contains(c.Tags, t) }) {
			continue
		}
		if slices.ContainsFunc(f.ExcludeTags, func(t string) bool { return slices.Contains(c.Tags, t) }) {
			continue
		}
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b *chat.Channel) int {
		if x := b.CreatedAt.Compare(a.CreatedAt.Time); x != 0 {
			return x
		}
		return cmp.Compare(b.ChannelID, a.ChannelID)
	})
	return nilIfEmpty(channelIDs(cs))
}

// add creates the channel and, when member, the user's relation to it in
// one transaction, and records both in the model.
func (m *memberModel) add(e *env, userID string, c *chat.Channel, member bool) {
	e.t.Helper()
	e.update(func(tx chat.Tx) error {
		if err := tx.CreateChannel(e.ctx, c); err != nil {
			return err
		}
		if !member {
			return nil
		}
		return tx.PutChannelUser(e.ctx, memberAt(c.ChannelID, userID, chat.MembershipMember, c.CreatedAt))
	})
	cp := *c
	m.channels[c.ChannelID] = &cp
	m.member[c.ChannelID] = member
}

func memberAt(channelID, userID string, membership chat.Membership, t chat.Time) *chat.ChannelUser {
	return &chat.ChannelUser{ChannelID: channelID, UserID: userID, Membership: membership, CreatedAt: t, UpdatedAt: t}
}

// A user's channels (MemberOf), with and without the tag and closed
// filters, page forward with After while channels and memberships are
// added between the pages, and backward with Before: every channel listed
// at the start is returned exactly once, nothing is returned twice, each
// page is in the channel order, and the whole list matches the model.
func testMemberChannelPaging(t *testing.T, e *env) {
	m := &memberModel{channels: map[string]*chat.Channel{}, member: map[string]bool{}}
	for i := 0; i < 40; i++ {
		var tags []string
		if i%4 == 0 {
			tags = append(tags, "red")
		}
		if i%5 == 0 {
			tags = append(tags, "blue")
		}
		c := newChannel(fmt.Sprintf("c%02d", i), at(int64(i/3)*1000), tags...)
		c.IsClosed = i%9 == 0
		m.add(e, "u", c, i%2 == 0 || i%3 == 0)
		if i%7 == 0 && !m.member[c.ChannelID] {
			e.putMembers(member(c.ChannelID, "u", chat.MembershipBanned))
		}
		e.putMembers(member(c.ChannelID, "other", chat.MembershipMember))
	}
	filters := []struct {
		name string
		f    chat.ChannelFilter
	}{
		{"plain", chat.ChannelFilter{MemberOf: "u"}},
		{"includeClosed", chat.ChannelFilter{MemberOf: "u", IncludeClosed: true}},
		{"tags", chat.ChannelFilter{MemberOf: "u", Tags: []string{"red", "green"}}},
		{"excludeTags", chat.ChannelFilter{MemberOf: "u", ExcludeTags: []string{"blue"}}},
		{"tags, excludeTags, includeClosed", chat.ChannelFilter{MemberOf: "u", Tags: []string{"red"}, ExcludeTags: []string{"blue"}, IncludeClosed: true}},
		{"notMemberOf another user", chat.ChannelFilter{MemberOf: "u", NotMemberOf: "nobody"}},
	}
	added := 0
	for _, fc := range filters {
		start := m.want(fc.f)
		require.NotEmpty(t, start, fc.name)
		var fwd []string
		var cur *chat.ChannelCursor
		for pages := 0; ; pages++ {
			boundPages(t, pages)
			f := fc.f
			f.After, f.Limit = cur, 3
			page := read(e, func(tx chat.Tx) ([]*chat.Channel, error) { return tx.QueryChannels(e.ctx, f) })
			if len(page) == 0 {
				break
			}
			require.LessOrEqual(t, len(page), 3, fc.name)
			for i, c := range page {
				if cur != nil {
					require.Negative(t, cmpCursor(c, cur), "%s: %s is not after the cursor", fc.name, c.ChannelID)
				}
				if i > 0 {
					require.Negative(t, cmpCursor(c, cursorOf(page[i-1])), "%s: page out of order: %v", fc.name, channelIDs(page))
				}
			}
			fwd = append(fwd, channelIDs(page)...)
			cur = cursorOf(page[len(page)-1])
			// Between the first pages: a newer channel, an older one
			// (still ahead) and one with the cursor's createdAt, the
			// user a member of each, plus a channel the user is not in.
			if pages >= 3 {
				continue
			}
			added++
			tags := []string{"red"}
			m.add(e, "u", newChannel(fmt.Sprintf("new%03d", added), at(int64(100+added)*1000), tags...), true)
			m.add(e, "u", newChannel(fmt.Sprintf("old%03d", added), at(-int64(added)*1000), tags...), true)
			m.add(e, "u", newChannel(fmt.Sprintf("tie%03d", added), chat.NewTime(cur.CreatedAt), tags...), true)
			m.add(e, "u", newChannel(fmt.Sprintf("not%03d", added), at(int64(added)*10), tags...), false)
		}
		seenOnce(t, start, fwd, fc.name)
		final := m.want(fc.f)
		for _, id := range fwd {
			require.Contains(t, final, id, "%s: %s does not match the filter", fc.name, id)
		}
		// The whole list at once, and backward from past the oldest.
		got := read(e, func(tx chat.Tx) ([]*chat.Channel, error) { return tx.QueryChannels(e.ctx, fc.f) })
		require.Equal(t, final, nilIfEmpty(channelIDs(got)), fc.name)
		var bwd []string
		cur = &chat.ChannelCursor{CreatedAt: at(-1_000_000).Time}
		for pages := 0; ; pages++ {
			boundPages(t, pages)
			f := fc.f
			f.Before, f.Limit = cur, 4
			page := read(e, func(tx chat.Tx) ([]*chat.Channel, error) { return tx.QueryChannels(e.ctx, f) })
			if len(page) == 0 {
				break
			}
			bwd = append(bwd, channelIDs(page)...)
			cur = cursorOf(page[len(page)-1])
		}
		require.Equal(t, reversed(final), bwd, "%s: backward", fc.name)
		// Offset and limit after a cursor.
		f := fc.f
		f.After, f.Offset, f.Limit = &chat.ChannelCursor{CreatedAt: at(1_000_000).Time}, 1, 2
		got = read(e, func(tx chat.Tx) ([]*chat.Channel, error) { return tx.QueryChannels(e.ctx, f) })
		require.Equal(t, final[1:min(3, len(final))], channelIDs(got), "%s: offset", fc.name)
	}
}

func cmpCursor(c *chat.Channel, cur *chat.ChannelCursor) int {
	if x := c.CreatedAt.Compare(cur.CreatedAt); x != 0 {
		return x
	}
	return cmp.Compare(c.ChannelID, cur.ChannelID)
}

// A user's channels follow every change of the relations and of the
// channels: membership changes, deletes, relations written before their
// channel, rolled back writes, closing and retagging.
func testMemberChannelChanges(t *testing.T, e *env) {
	list := func(f chat.ChannelFilter) []string {
		t.Helper()
		f.MemberOf = "u"
		return nilIfEmpty(channelIDs(read(e, func(tx chat.Tx) ([]*chat.Channel, error) { return tx.QueryChannels(e.ctx, f) })))
	}
	e.createChannels(newChannel("a", at(1000)), newChannel("b", at(2000), "t"), newChannel("c", at(3000)), newChannel("d", at(2000)))
	e.putMembers(member("a", "u", chat.MembershipMember), member("b", "u", chat.MembershipMember),
		member("c", "u", chat.MembershipMember), member("d", "u", chat.MembershipNone))
	require.Equal(t, []string{"c", "b", "a"}, list(chat.ChannelFilter{}))

	steps := []struct {
		name string
		fn   func(tx chat.Tx) error
		want []string
	}{
		{"member becomes banned", func(tx chat.Tx) error { return tx.PutChannelUser(e.ctx, member("b", "u", chat.MembershipBanned)) }, []string{"c", "a"}},
		{"none becomes member", func(tx chat.Tx) error { return tx.PutChannelUser(e.ctx, member("d", "u", chat.MembershipMember)) }, []string{"c", "d", "a"}},
		{"banned becomes member again", func(tx chat.Tx) error { return tx.PutChannelUser(e.ctx, member("b", "u", chat.MembershipMember)) }, []string{"c", "d", "b", "a"}},
		{"re-put a member", func(tx chat.Tx) error { return tx.PutChannelUser(e.ctx, member("b", "u", chat.MembershipMember)) }, []string{"c", "d", "b", "a"}},
		{"delete one relation", func(tx chat.Tx) error { return tx.DeleteChannelUser(e.ctx, "c", "u") }, []string{"d", "b", "a"}},
		{"delete every relation of a channel", func(tx chat.Tx) error { return tx.DeleteChannelUsers(e.ctx, "a") }, []string{"d", "b"}},
		{"relation before its channel", func(tx chat.Tx) error {
			return tx.PutChannelUser(e.ctx, member("late", "u", chat.MembershipMember))
		}, []string{"d", "b"}},
		{"the channel comes", func(tx chat.Tx) error { return tx.CreateChannel(e.ctx, newChannel("late", at(1500))) }, []string{"d", "b", "late"}},
		{"added back after delete all", func(tx chat.Tx) error { return tx.PutChannelUser(e.ctx, member("a", "u", chat.MembershipMember)) }, []string{"d", "b", "late", "a"}},
		{"another user's change", func(tx chat.Tx) error { return tx.PutChannelUser(e.ctx, member("c", "v", chat.MembershipMember)) }, []string{"d", "b", "late", "a"}},
	}
	for _, s := range steps {
		require.NoError(t, e.s.Update(e.ctx, s.fn), s.name)
		require.Equal(t, s.want, list(chat.ChannelFilter{}), s.name)
	}

	// A rolled back Update leaves the list as it was.
	err := e.s.Update(e.ctx, func(tx chat.Tx) error {
		if err := tx.PutChannelUser(e.ctx, member("c", "u", chat.MembershipMember)); err != nil {
			return err
		}
		if err := tx.PutChannelUser(e.ctx, member("b", "u", chat.MembershipBanned)); err != nil {
			return err
		}
		if err := tx.DeleteChannelUser(e.ctx, "d", "u"); err != nil {
			return err
		}
		if err := tx.CreateChannel(e.ctx, newChannel("gone", at(9000))); err != nil {
			return err
		}
		if err := tx.PutChannelUser(e.ctx, member("gone", "u", chat.MembershipMember)); err != nil {
			return err
		}
		cs, err := tx.QueryChannels(e.ctx, chat.ChannelFilter{MemberOf: "u"})
		require.NoError(t, err)
		require.Equal(t, []string{"gone", "c", "late", "a"}, channelIDs(cs), "the transaction sees its own writes")
		return errBoom
	})
	require.ErrorIs(t, err, errBoom)
	require.Equal(t, []string{"d", "b", "late", "a"}, list(chat.ChannelFilter{}), "after rollback")

	// Closing and retagging a channel apply to the list at once.
	e.update(func(tx chat.Tx) error {
		c, err := tx.GetChannel(e.ctx, "d")
		require.NoError(t, err)
		c.IsClosed = true
		if err := tx.UpdateChannel(e.ctx, c); err != nil {
			return err
		}
		c, err = tx.GetChannel(e.ctx, "late")
		require.NoError(t, err)
		c.Tags = []string{"t"}
		return tx.UpdateChannel(e.ctx, c)
	})
	require.Equal(t, []string{"b", "late", "a"}, list(chat.ChannelFilter{}))
	require.Equal(t, []string{"d", "b", "late", "a"}, list(chat.ChannelFilter{IncludeClosed: true}))
	require.Equal(t, []string{"b", "late"}, list(chat.ChannelFilter{Tags: []string{"t"}}))
	require.Equal(t, []string{"d", "a"}, list(chat.ChannelFilter{ExcludeTags: []string{"t"}, IncludeClosed: true}))
	require.Equal(t, []string{"late", "a"}, list(chat.ChannelFilter{After: &chat.ChannelCursor{CreatedAt: at(2000).Time, ChannelID: "b"}}))
	require.Equal(t, []string{"b"}, list(chat.ChannelFilter{Before: &chat.ChannelCursor{CreatedAt: at(1500).Time, ChannelID: "late"}, Limit: 1}))
}

package storetest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// named is newChannel with a displayName.
func named(id, name string, created chat.Time, tags ...string) *chat.Channel {
	c := newChannel(id, created, tags...)
	c.DisplayName = name
	return c
}

// searchChannels runs QueryChannels with f and the search s (passed
// through chat.SearchKey) and returns the channel ids.
func (e *env) searchChannels(s string, f chat.ChannelFilter) []string {
	e.t.Helper()
	f.Search = chat.SearchKey(s)
	return nilIfEmpty(channelIDs(read(e, func(tx chat.Tx) ([]*chat.Channel, error) { return tx.QueryChannels(e.ctx, f) })))
}

// testChannelSearch: a case-insensitive prefix of the channelId or of a
// word of the displayName (and the rest of the name from it), combined
// with the other filters; closed channels only with includeClosed.
func testChannelSearch(t *testing.T, e *env) {
	old := named("zebra-old", "Old Zebras", at(5))
	old.IsClosed = true
	e.createChannels(
		named("general", "The Zebra Keeper", at(0), "pets"),
		named("Ops-Room", "Night Shift", at(1)),
		named("zoo", "Animals", at(2), "pets"),
		named("night-owls", "", at(3)),
		named("sofia", "ΣΟΦΙΑ room", at(4)),
		old,
		named("a%b", "under_score", at(6)),
	)
	e.putMembers(member("general", "u1", chat.MembershipMember), member("zoo", "u2", chat.MembershipMember))
	cases := []struct {
		name   string
		search string
		f      chat.ChannelFilter
		want   []string
	}{
		{"prefix of a name's first word", "zeb", chat.ChannelFilter{}, []string{"general"}},
		{"closed only with includeClosed", "zeb", chat.ChannelFilter{IncludeClosed: true}, []string{"zebra-old", "general"}},
		{"prefix of a later word", "keep", chat.ChannelFilter{}, []string{"general"}},
		{"across words", "ZEBRA K", chat.ChannelFilter{}, []string{"general"}},
		{"across words needs the separator", "zebrak", chat.ChannelFilter{}, nil},
		{"prefix of the id, case-insensitive", "ops", chat.ChannelFilter{}, []string{"Ops-Room"}},
		{"the id with its punctuation", "OPS-R", chat.ChannelFilter{}, []string{"Ops-Room"}},
		{"id and name, newest first", "night", chat.ChannelFilter{}, []string{"night-owls", "Ops-Room"}},
		{"not inside a word", "hift", chat.ChannelFilter{}, nil},
		{"Unicode folding", "σοφ", chat.ChannelFilter{}, []string{"sofia"}},
		{"a later word after Unicode", "ROOM", chat.ChannelFilter{}, []string{"sofia"}},
		{"one letter", "z", chat.ChannelFilter{}, []string{"zoo", "general"}},
		{"one letter with closed", "z", chat.ChannelFilter{IncludeClosed: true}, []string{"zebra-old", "zoo", "general"}},
		{"LIKE wildcards are plain characters", "a%", chat.ChannelFilter{}, []string{"a%b"}},
		{"underscore is plain", "a_", chat.ChannelFilter{}, nil},
		{"with tags", "z", chat.ChannelFilter{Tags: []string{"pets"}}, []string{"zoo", "general"}},
		{"with excludeTags", "z", chat.ChannelFilter{ExcludeTags: []string{"pets"}}, nil},
		{"with memberOf", "z", chat.ChannelFilter{MemberOf: "u1"}, []string{"general"}},
		{"with notMemberOf", "z", chat.ChannelFilter{NotMemberOf: "u1"}, []string{"zoo"}},
		{"limit", "z", chat.ChannelFilter{Limit: 1}, []string{"zoo"}},
		{"offset", "z", chat.ChannelFilter{Offset: 1}, []string{"general"}},
		{"no match", "quux", chat.ChannelFilter{}, nil},
	}
	for _, c := range cases {
		require.Equal(t, c.want, e.searchChannels(c.search, c.f), c.name)
	}
}

// testChannelSearchUpdate: a renamed channel is found by its new name
// only, and always by its id; an update that keeps the name keeps it
// found.
func testChannelSearchUpdate(t *testing.T, e *env) {
	e.createChannels(named("lobby", "Front Desk", at(0)))
	require.Equal(t, []string{"lobby"}, e.searchChannels("desk", chat.ChannelFilter{}))
	e.update(func(tx chat.Tx) error {
		c, err := tx.GetChannel(e.ctx, "lobby")
		if err != nil {
			return err
		}
		c.DisplayName = "Back Office"
		return tx.UpdateChannel(e.ctx, c)
	})
	require.Nil(t, e.searchChannels("desk", chat.ChannelFilter{}), "the old name is gone")
	require.Nil(t, e.searchChannels("front", chat.ChannelFilter{}))
	require.Equal(t, []string{"lobby"}, e.searchChannels("off", chat.ChannelFilter{}))
	require.Equal(t, []string{"lobby"}, e.searchChannels("LOB", chat.ChannelFilter{}))
	e.update(func(tx chat.Tx) error {
		c, err := tx.GetChannel(e.ctx, "lobby")
		if err != nil {
			return err
		}
		c.IsRateLimited, c.RateLimitWindow = true, 5000
		return tx.UpdateChannel(e.ctx, c)
	})
	require.Equal(t, []string{"lobby"}, e.searchChannels("back", chat.ChannelFilter{}), "an update keeping the name")
	e.update(func(tx chat.Tx) error {
		c, err := tx.GetChannel(e.ctx, "lobby")
		if err != nil {
			return err
		}
		c.IsClosed = true
		return tx.UpdateChannel(e.ctx, c)
	})
	require.Nil(t, e.searchChannels("back", chat.ChannelFilter{}))
	require.Equal(t, []string{"lobby"}, e.searchChannels("back", chat.ChannelFilter{IncludeClosed: true}))
}

// testChannelSearchPaging: keyset paging over the matches only.
func testChannelSearchPaging(t *testing.T, e *env) {
	for i := 0; i < 7; i++ {
		e.createChannels(named(fmt.Sprintf("p%d", i), "Project", at(int64(i/2)*1000)))
		e.createChannels(named(fmt.Sprintf("q%d", i), "Other", at(int64(i/2)*1000)))
	}
	all := read(e, func(tx chat.Tx) ([]*chat.Channel, error) {
		return tx.QueryChannels(e.ctx, chat.ChannelFilter{Search: chat.SearchKey("proj")})
	})
	ids := channelIDs(all)
	require.Equal(t, []string{"p6", "p5", "p4", "p3", "p2", "p1", "p0"}, ids)
	e.view(func(tx chat.Tx) error {
		got, err := tx.QueryChannels(e.ctx, chat.ChannelFilter{Search: chat.SearchKey("proj"), After: cursorOf(all[1]), Limit: 3})
		require.NoError(t, err)
		require.Equal(t, ids[2:5], channelIDs(got))
		got, err = tx.QueryChannels(e.ctx, chat.ChannelFilter{Search: chat.SearchKey("proj"), Before: cursorOf(all[4]), Limit: 2})
		require.NoError(t, err)
		require.Equal(t, []string{ids[3], ids[2]}, channelIDs(got))
		got, err = tx.QueryChannels(e.ctx, chat.ChannelFilter{Search: chat.SearchKey("proj"), After: cursorOf(all[6])})
		require.NoError(t, err)
		require.Empty(t, got)
		return nil
	})
}

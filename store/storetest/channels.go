package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

var channelCases = []tcase{
	{"CreateGet", testChannelCreateGet},
	{"CreateConflict", testChannelConflict},
	{"NotFound", testChannelNotFound},
	{"GetChannels", testGetChannels},
	{"Update", testChannelUpdate},
	{"NextSegment", testNextSegment},
	{"QueryOrder", testChannelQueryOrder},
	{"QueryFilters", testChannelQueryFilters},
	{"QueryPaging", testChannelQueryPaging},
	{"QueryPagingConcurrentInserts", testChannelPagingConcurrent},
	{"Search", testChannelSearch},
	{"SearchAfterUpdate", testChannelSearchUpdate},
	{"SearchPaging", testChannelSearchPaging},
	{"Isolation", testChannelIsolation},
	{"TimeRoundTrip", testChannelTimes},
}

var memberCases = []tcase{
	{"PutGet", testMemberPutGet},
	{"MemberCount", testMemberCount},
	{"GetChannelUsers", testGetChannelUsers},
	{"ListMemberships", testListMemberships},
	{"Isolation", testMemberIsolation},
	{"ChannelPaging", testMemberChannelPaging},
	{"ChannelChanges", testMemberChannelChanges},
}

func fullChannel() *chat.Channel {
	return &chat.Channel{
		ChannelID: "chan-1", Type: chat.ChannelTypeStandard, DisplayName: "Général ✓", IsDistinct: true,
		Metadata: map[string]any{
			"s": "v", "n": 1.5, "b": true, "null": nil,
			"nested": map[string]any{"list": []any{"x", 2.0, false, map[string]any{"deep": "y"}}},
		},
		Tags:         []string{"t1", "t2"},
		MuteTimeout:  atp(60_000),
		LastActivity: at(2000), CreatedAt: at(1000), UpdatedAt: at(3000),
		IsRateLimited: true, RateLimitWindow: 60,
	}
}

func testChannelCreateGet(t *testing.T, e *env) {
	c := fullChannel()
	closed := newChannel("closed", at(0), "x")
	closed.IsClosed = true
	e.createChannels(c, closed)
	require.Equal(t, cChannel(t, fullChannel()), cChannel(t, e.channel("chan-1")))
	got := e.channel("closed")
	require.True(t, got.IsClosed)
	require.Equal(t, cChannel(t, closed), cChannel(t, got))
}

func testChannelConflict(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	dup := newChannel("c", at(5))
	dup.DisplayName = "other"
	err := e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.CreateChannel(e.ctx, dup) })
	requireConflict(t, err, "duplicate channel id")
	require.Equal(t, "Channel c", e.channel("c").DisplayName, "a conflicting create must not change the channel")

	// A closed channel keeps its id forever.
	e.update(func(tx chat.Tx) error {
		c, err := tx.GetChannel(e.ctx, "c")
		require.NoError(t, err)
		c.IsClosed = true
		return tx.UpdateChannel(e.ctx, c)
	})
	err = e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.CreateChannel(e.ctx, dup) })
	requireConflict(t, err, "duplicate id of a closed channel")
}

func testChannelNotFound(t *testing.T, e *env) {
	_, err := readErr(e, func(tx chat.Tx) (*chat.Channel, error) { return tx.GetChannel(e.ctx, "missing") })
	requireNotFound(t, err, "GetChannel")
	err = e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.UpdateChannel(e.ctx, newChannel("missing", at(0))) })
	requireNotFound(t, err, "UpdateChannel")
	_, err = writeErr(e, func(tx chat.Tx) (*chat.Channel, error) { return tx.NextSegment(e.ctx, "missing", base) })
	requireNotFound(t, err, "NextSegment")
}

func testGetChannels(t *testing.T, e *env) {
	e.createChannels(newChannel("a", at(0)), newChannel("b", at(1)), newChannel("c", at(2)))
	got := read(e, func(tx chat.Tx) ([]*chat.Channel, error) { return tx.GetChannels(e.ctx, []string{"c", "missing", "a"}) })
	require.ElementsMatch(t, []string{"a", "c"}, channelIDs(got))
	for _, c := range got {
		require.Equal(t, cChannel(t, newChannel(c.ChannelID, c.CreatedAt)), cChannel(t, c))
	}
	got = read(e, func(tx chat.Tx) ([]*chat.Channel, error) { return tx.GetChannels(e.ctx, []string{"missing"}) })
	require.Empty(t, got)
	got = read(e, func(tx chat.Tx) ([]*chat.Channel, error) { return tx.GetChannels(e.ctx, nil) })
	require.Empty(t, got)
}

func testChannelUpdate(t *testing.T, e *env) {
	e.createChannels(fullChannel())
	e.putMembers(member("chan-1", "u", chat.MembershipMember))
	e.update(func(tx chat.Tx) error { return tx.SetMemberCount(e.ctx, "chan-1", 1) })
	write(e, func(tx chat.Tx) (*chat.Channel, error) { return tx.NextSegment(e.ctx, "chan-1", at(4000).Time) })

	upd := fullChannel()
	upd.DisplayName = "renamed"
	upd.Metadata = map[string]any{"only": "this"}
	upd.Tags = []string{"t3"}
	upd.MuteTimeout = &chat.Forever
	upd.LastActivity = at(9000)
	upd.UpdatedAt = at(9500)
	upd.IsClosed = true
	upd.RateLimitWindow = 5000 // fullChannel: IsRateLimited, window 60
	// Not mutable: must not be written.
	upd.Type = "other"
	upd.IsDistinct = false
	upd.CreatedAt = at(7)
	upd.MemberCount = 99
	upd.MessageCount = 99
	e.update(func(tx chat.Tx) error { return tx.UpdateChannel(e.ctx, upd) })

	want := fullChannel()
	want.DisplayName = "renamed"
	want.Metadata = map[string]any{"only": "this"}
	want.Tags = []string{"t3"}
	want.MuteTimeout = &chat.Forever
	want.LastActivity = at(9000)
	want.UpdatedAt = at(9500)
	want.IsClosed = true
	want.RateLimitWindow = 5000
	want.MemberCount = 1
	want.MessageCount = 1
	got := e.channel("chan-1")
	require.Equal(t, chat.ChannelTypeStandard, got.Type, "type is not mutable")
	require.True(t, got.IsDistinct, "isDistinct is not mutable")
	require.True(t, at(1000).Equal(got.CreatedAt.Time), "createdAt is not mutable")
	require.Equal(t, 1, got.MemberCount, "UpdateChannel must not write memberCount")
	require.EqualValues(t, 1, got.MessageCount, "UpdateChannel must not write messageCount")
	require.Equal(t, cChannel(t, want), cChannel(t, got))

	// Unmuting sets muteTimeout back to null; empty tags and metadata.
	upd.MuteTimeout = nil
	upd.Tags = nil
	upd.Metadata = nil
	upd.IsRateLimited, upd.RateLimitWindow = false, 0
	e.update(func(tx chat.Tx) error { return tx.UpdateChannel(e.ctx, upd) })
	got = e.channel("chan-1")
	require.False(t, got.IsRateLimited, "slow mode off")
	require.Zero(t, got.RateLimitWindow)
	require.Nil(t, got.MuteTimeout)
	require.Empty(t, got.Tags)
	require.Empty(t, got.Metadata)
}

func testNextSegment(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)), newChannel("other", at(0)))
	for i := int64(1); i <= 3; i++ {
		now := at(i * 1000)
		c := write(e, func(tx chat.Tx) (*chat.Channel, error) {
			return tx.NextSegment(e.ctx, "c", now.Time.Add(400*time.Microsecond))
		})
		require.Equal(t, i, c.MessageCount)
		require.True(t, now.Equal(c.LastActivity.Time), "lastActivity = now (ms): %v", c.LastActivity)
		require.True(t, now.Equal(c.UpdatedAt.Time), "updatedAt = now (ms): %v", c.UpdatedAt)
		require.Equal(t, cChannel(t, c), cChannel(t, e.channel("c")), "NextSegment returns the updated channel")
	}
	require.EqualValues(t, 0, e.channel("other").MessageCount)
}

// channels for the ordering cases: createdAt ties are broken by id.
func orderedChannels(e *env) []string {
	e.createChannels(
		newChannel("a", at(0)), newChannel("b", at(1000)), newChannel("c", at(1000)),
		newChannel("d", at(2000)), newChannel("e", at(500)),
	)
	return []string{"d", "c", "b", "e", "a"}
}

func testChannelQueryOrder(t *testing.T, e *env) {
	want := orderedChannels(e)
	got := read(e, func(tx chat.Tx) ([]*chat.Channel, error) { return tx.QueryChannels(e.ctx, chat.ChannelFilter{}) })
	require.Equal(t, want, channelIDs(got), "newest first, then channelId descending")
	require.Equal(t, cChannel(t, newChannel("d", at(2000))), cChannel(t, got[0]))
}

func testChannelQueryFilters(t *testing.T, e *env) {
	closed := newChannel("closed", at(5), "red")
	closed.IsClosed = true
	e.createChannels(
		newChannel("red1", at(0), "red"),
		newChannel("blue1", at(1), "blue"),
		newChannel("rb", at(2), "red", "blue"),
		newChannel("none", at(3)),
		newChannel("green", at(4), "green"),
		closed,
	)
	e.putMembers(
		member("red1", "u1", chat.MembershipMember),
		member("rb", "u1", chat.MembershipMember),
		member("closed", "u1", chat.MembershipMember),
		member("blue1", "u1", chat.MembershipBanned),
		member("none", "u1", chat.MembershipNone),
		member("blue1", "u2", chat.MembershipMember),
	)
	cases := []struct {
		name string
		f    chat.ChannelFilter
		want []string
	}{
		{"all open", chat.ChannelFilter{}, []string{"green", "none", "rb", "blue1", "red1"}},
		{"includeClosed", chat.ChannelFilter{IncludeClosed: true}, []string{"closed", "green", "none", "rb", "blue1", "red1"}},
		{"tags any-of one", chat.ChannelFilter{Tags: []string{"red"}}, []string{"rb", "red1"}},
		{"tags any-of two", chat.ChannelFilter{Tags: []string{"red", "green"}}, []string{"green", "rb", "red1"}},
		{"tags unknown", chat.ChannelFilter{Tags: []string{"nope"}}, nil},
		{"excludeTags none-of", chat.ChannelFilter{ExcludeTags: []string{"red"}}, []string{"green", "none", "blue1"}},
		{"excludeTags two", chat.ChannelFilter{ExcludeTags: []string{"red", "green"}}, []string{"none", "blue1"}},
		{"tags and excludeTags", chat.ChannelFilter{Tags: []string{"blue"}, ExcludeTags: []string{"red"}}, []string{"blue1"}},
		{"tags includeClosed", chat.ChannelFilter{Tags: []string{"red"}, IncludeClosed: true}, []string{"closed", "rb", "red1"}},
		{"memberOf (banned and none are not members)", chat.ChannelFilter{MemberOf: "u1"}, []string{"rb", "red1"}},
		{"memberOf includeClosed", chat.ChannelFilter{MemberOf: "u1", IncludeClosed: true}, []string{"closed", "rb", "red1"}},
		{"memberOf other user", chat.ChannelFilter{MemberOf: "u2"}, []string{"blue1"}},
		{"memberOf unknown user", chat.ChannelFilter{MemberOf: "nobody"}, nil},
		{"memberOf with tags", chat.ChannelFilter{MemberOf: "u1", Tags: []string{"blue"}}, []string{"rb"}},
		{"notMemberOf", chat.ChannelFilter{NotMemberOf: "u1"}, []string{"green", "none", "blue1"}},
		{"notMemberOf unknown user", chat.ChannelFilter{NotMemberOf: "nobody"}, []string{"green", "none", "rb", "blue1", "red1"}},
		{"notMemberOf with excludeTags", chat.ChannelFilter{NotMemberOf: "u2", ExcludeTags: []string{"green"}}, []string{"none", "rb", "red1"}},
		{"limit", chat.ChannelFilter{Limit: 2}, []string{"green", "none"}},
		{"offset", chat.ChannelFilter{Offset: 3}, []string{"blue1", "red1"}},
		{"offset and limit", chat.ChannelFilter{Offset: 1, Limit: 2}, []string{"none", "rb"}},
		{"offset past the end", chat.ChannelFilter{Offset: 10}, nil},
		{"offset after filter", chat.ChannelFilter{Tags: []string{"red", "blue"}, Offset: 1, Limit: 1}, []string{"blue1"}},
		{"memberOf offset", chat.ChannelFilter{MemberOf: "u1", Offset: 1}, []string{"red1"}},
	}
	e.view(func(tx chat.Tx) error {
		for _, c := range cases {
			got, err := tx.QueryChannels(e.ctx, c.f)
			require.NoError(t, err, c.name)
			require.Equal(t, c.want, nilIfEmpty(channelIDs(got)), c.name)
		}
		return nil
	})
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func cursorOf(c *chat.Channel) *chat.ChannelCursor {
	return &chat.ChannelCursor{CreatedAt: c.CreatedAt.Time, ChannelID: c.ChannelID}
}

func testChannelQueryPaging(t *testing.T, e *env) {
	// Ten channels, some sharing a createdAt.
	for i := 0; i < 10; i++ {
		e.createChannels(newChannel(fmt.Sprintf("ch%02d", i), at(int64(i/3)*1000)))
	}
	all := read(e, func(tx chat.Tx) ([]*chat.Channel, error) { return tx.QueryChannels(e.ctx, chat.ChannelFilter{}) })
	ids := channelIDs(all)
	require.Len(t, ids, 10)
	require.Equal(t, []string{"ch09", "ch08", "ch07", "ch06", "ch05", "ch04", "ch03", "ch02", "ch01", "ch00"}, ids)

	e.view(func(tx chat.Tx) error {
		// After: the rows strictly after the cursor, newest first.
		got, err := tx.QueryChannels(e.ctx, chat.ChannelFilter{After: cursorOf(all[2]), Limit: 3})
		require.NoError(t, err)
		require.Equal(t, ids[3:6], channelIDs(got))
		// Before: the rows strictly before the cursor, nearest first
		// (oldest first), so a caller reverses them.
		got, err = tx.QueryChannels(e.ctx, chat.ChannelFilter{Before: cursorOf(all[6]), Limit: 2})
		require.NoError(t, err)
		require.Equal(t, []string{ids[5], ids[4]}, channelIDs(got))
		got, err = tx.QueryChannels(e.ctx, chat.ChannelFilter{Before: cursorOf(all[2])})
		require.NoError(t, err)
		require.Equal(t, []string{ids[1], ids[0]}, channelIDs(got))
		got, err = tx.QueryChannels(e.ctx, chat.ChannelFilter{Before: cursorOf(all[0])})
		require.NoError(t, err)
		require.Empty(t, got)
		got, err = tx.QueryChannels(e.ctx, chat.ChannelFilter{After: cursorOf(all[9])})
		require.NoError(t, err)
		require.Empty(t, got)
		// Offset applies after the cursor.
		got, err = tx.QueryChannels(e.ctx, chat.ChannelFilter{After: cursorOf(all[2]), Offset: 1, Limit: 2})
		require.NoError(t, err)
		require.Equal(t, ids[4:6], channelIDs(got))

		// Page forward through everything.
		var fwd []string
		var cur *chat.ChannelCursor
		for pages := 0; ; pages++ {
			boundPages(t, pages)
			page, err := tx.QueryChannels(e.ctx, chat.ChannelFilter{After: cur, Limit: 3})
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			fwd = append(fwd, channelIDs(page)...)
			cur = cursorOf(page[len(page)-1])
		}
		require.Equal(t, ids, fwd)

		// Page backward from the oldest.
		bwd := []string{ids[9]}
		cur = cursorOf(all[9])
		for pages := 0; ; pages++ {
			boundPages(t, pages)
			page, err := tx.QueryChannels(e.ctx, chat.ChannelFilter{Before: cur, Limit: 3})
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			bwd = append(bwd, channelIDs(page)...)
			cur = cursorOf(page[len(page)-1])
		}
		require.Equal(t, reversed(ids), bwd)
		return nil
	})
}

// Keyset paging neither skips nor repeats rows while other goroutines
// insert newer channels.
func testChannelPagingConcurrent(t *testing.T, e *env) {
	const initial, extra = 30, 30
	var start []string
	for i := 0; i < initial; i++ {
		id := fmt.Sprintf("old%02d", i)
		start = append(start, id)
		e.createChannels(newChannel(id, at(int64(i/2)*1000)))
	}
	var wg sync.WaitGroup
	wg.Add(1)
	var insertErr error
	go func() {
		defer wg.Done()
		for i := 0; i < extra; i++ {
			id := fmt.Sprintf("new%02d", i)
			if err := e.s.Update(e.ctx, func(tx chat.Tx) error {
				return tx.CreateChannel(e.ctx, newChannel(id, at(int64(100+i/2)*1000)))
			}); err != nil {
				insertErr = err
				return
			}
		}
	}()
	// Forward (older and older) with After.
	var fwd []string
	var cur *chat.ChannelCursor
	for pages := 0; ; pages++ {
		boundPages(t, pages)
		page := read(e, func(tx chat.Tx) ([]*chat.Channel, error) {
			return tx.QueryChannels(e.ctx, chat.ChannelFilter{After: cur, Limit: 4})
		})
		if len(page) == 0 {
			break
		}
		fwd = append(fwd, channelIDs(page)...)
		cur = cursorOf(page[len(page)-1])
	}
	seenOnce(t, start, fwd, "paging with After")
	// Backward (newer and newer) with Before, starting past the oldest.
	var bwd []string
	cur = &chat.ChannelCursor{CreatedAt: at(-1).Time, ChannelID: ""}
	for pages := 0; ; pages++ {
		boundPages(t, pages)
		page := read(e, func(tx chat.Tx) ([]*chat.Channel, error) {
			return tx.QueryChannels(e.ctx, chat.ChannelFilter{Before: cur, Limit: 4})
		})
		if len(page) == 0 {
			break
		}
		bwd = append(bwd, channelIDs(page)...)
		cur = cursorOf(page[len(page)-1])
	}
	seenOnce(t, start, bwd, "paging with Before")
	wg.Wait()
	require.NoError(t, insertErr)
}

func testChannelIsolation(t *testing.T, e *env) {
	c := fullChannel()
	e.createChannels(c)
	// Mutating what was passed to Create does not reach the store.
	c.Metadata["s"] = "changed"
	c.Metadata["nested"].(map[string]any)["list"].([]any)[0] = "changed"
	c.Metadata["nested"].(map[string]any)["list"].([]any)[3].(map[string]any)["deep"] = "changed"
	c.Tags[0] = "changed"
	*c.MuteTimeout = at(1)
	want := cChannel(t, fullChannel())
	require.Equal(t, want, cChannel(t, e.channel("chan-1")))

	// Mutating what was returned does not either.
	for _, got := range []*chat.Channel{
		e.channel("chan-1"),
		read(e, func(tx chat.Tx) ([]*chat.Channel, error) { return tx.QueryChannels(e.ctx, chat.ChannelFilter{}) })[0],
		read(e, func(tx chat.Tx) ([]*chat.Channel, error) { return tx.GetChannels(e.ctx, []string{"chan-1"}) })[0],
		write(e, func(tx chat.Tx) (*chat.Channel, error) {
			c, err := tx.GetChannel(e.ctx, "chan-1")
			require.NoError(t, err)
			return c, nil
		}),
	} {
		got.Metadata["s"] = "changed"
		got.Metadata["added"] = 1.0
		got.Metadata["nested"].(map[string]any)["list"].([]any)[0] = "changed"
		got.Metadata["nested"].(map[string]any)["list"].([]any)[3].(map[string]any)["deep"] = "changed"
		got.Tags[0] = "changed"
		*got.MuteTimeout = at(1)
		require.Equal(t, want, cChannel(t, e.channel("chan-1")))
	}
	// Nor does mutating what was passed to UpdateChannel.
	upd := fullChannel()
	e.update(func(tx chat.Tx) error { return tx.UpdateChannel(e.ctx, upd) })
	upd.Metadata["s"] = "changed"
	upd.Tags[1] = "changed"
	require.Equal(t, want, cChannel(t, e.channel("chan-1")))
}

func testChannelTimes(t *testing.T, e *env) {
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	local := chat.NewTime(time.Date(2031, 2, 3, 4, 5, 6, 789_999_999, zone))
	forever := newChannel("forever", local)
	forever.MuteTimeout = &chat.Forever
	forever.LastActivity = chat.NewTime(time.Date(1999, 12, 31, 23, 59, 59, 999e6, time.UTC))
	unmuted := newChannel("unmuted", at(1))
	unmuted.MuteTimeout = nil
	e.createChannels(forever, unmuted)

	got := e.channel("forever")
	require.NotNil(t, got.MuteTimeout)
	require.True(t, chat.Forever.Equal(got.MuteTimeout.Time), "Forever round-trips: %v", got.MuteTimeout.Time)
	require.Equal(t, time.UTC, got.MuteTimeout.Location())
	require.True(t, local.Equal(got.CreatedAt.Time), "createdAt: %v != %v", got.CreatedAt.Time, local.Time)
	require.Equal(t, time.UTC, got.CreatedAt.Location())
	require.Equal(t, 789_000_000, got.CreatedAt.Nanosecond(), "millisecond precision")
	require.True(t, forever.LastActivity.Equal(got.LastActivity.Time))
	require.Nil(t, e.channel("unmuted").MuteTimeout, "a nil *Time stays nil")
	// The cursor of a round-tripped channel finds it exactly.
	page := read(e, func(tx chat.Tx) ([]*chat.Channel, error) {
		return tx.QueryChannels(e.ctx, chat.ChannelFilter{Before: &chat.ChannelCursor{CreatedAt: at(1).Time, ChannelID: "unmuted"}})
	})
	require.Equal(t, []string{"forever"}, channelIDs(page))
}

// ---- members ----

func testMemberPutGet(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	cu := &chat.ChannelUser{ChannelID: "c", UserID: "u", Membership: chat.MembershipMember, MuteTimeout: &chat.Forever, CreatedAt: at(1), UpdatedAt: at(2)}
	e.putMembers(cu)
	got := read(e, func(tx chat.Tx) (*chat.ChannelUser, error) { return tx.GetChannelUser(e.ctx, "c", "u") })
	require.Equal(t, cChannelUser(t, cu), cChannelUser(t, got))

	// Replace.
	cu2 := &chat.ChannelUser{ChannelID: "c", UserID: "u", Membership: chat.MembershipBanned, CreatedAt: at(1), UpdatedAt: at(5)}
	e.putMembers(cu2)
	got = read(e, func(tx chat.Tx) (*chat.ChannelUser, error) { return tx.GetChannelUser(e.ctx, "c", "u") })
	require.Equal(t, cChannelUser(t, cu2), cChannelUser(t, got))
	require.Nil(t, got.MuteTimeout)

	_, err := readErr(e, func(tx chat.Tx) (*chat.ChannelUser, error) { return tx.GetChannelUser(e.ctx, "c", "other") })
	requireNotFound(t, err, "unknown user")
	_, err = readErr(e, func(tx chat.Tx) (*chat.ChannelUser, error) { return tx.GetChannelUser(e.ctx, "missing", "u") })
	requireNotFound(t, err, "unknown channel")
}

// memberCount is the Service's to compute: the store writes the value it
// is given and relation writes leave it alone.
func testMemberCount(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)), newChannel("d", at(0)))
	count := func() int { t.Helper(); return e.channel("c").MemberCount }
	e.update(func(tx chat.Tx) error { return tx.SetMemberCount(e.ctx, "c", 7) })
	require.Equal(t, 7, count())
	require.Equal(t, 0, e.channel("d").MemberCount, "SetMemberCount is per channel")
	e.update(func(tx chat.Tx) error {
		if err := tx.PutChannelUser(e.ctx, member("c", "u1", chat.MembershipMember)); err != nil {
			return err
		}
		if err := tx.PutChannelUser(e.ctx, member("c", "u2", chat.MembershipBanned)); err != nil {
			return err
		}
		return tx.DeleteChannelUser(e.ctx, "c", "u1")
	})
	require.Equal(t, 7, count(), "relation writes do not write memberCount")
	e.update(func(tx chat.Tx) error {
		if err := tx.SetMemberCount(e.ctx, "c", 3); err != nil {
			return err
		}
		c, err := tx.GetChannel(e.ctx, "c")
		require.NoError(t, err)
		require.Equal(t, 3, c.MemberCount, "read your write")
		return tx.DeleteChannelUsers(e.ctx, "c")
	})
	require.Equal(t, 3, count())
	e.update(func(tx chat.Tx) error { return tx.SetMemberCount(e.ctx, "missing", 1) })
	_, err := readErr(e, func(tx chat.Tx) (*chat.Channel, error) { return tx.GetChannel(e.ctx, "missing") })
	requireNotFound(t, err, "SetMemberCount does not create a channel")
	rels := read(e, func(tx chat.Tx) ([]*chat.ChannelUser, error) { return tx.GetChannelUsers(e.ctx, "c", nil) })
	require.Empty(t, rels, "DeleteChannelUsers removed every relation, banned ones too")
}

func testGetChannelUsers(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)), newChannel("d", at(0)))
	e.putMembers(
		member("c", "u3", chat.MembershipMember),
		member("c", "u1", chat.MembershipBanned),
		member("c", "u2", chat.MembershipNone),
		member("d", "u4", chat.MembershipMember),
	)
	e.view(func(tx chat.Tx) error {
		all, err := tx.GetChannelUsers(e.ctx, "c", nil)
		require.NoError(t, err)
		require.Equal(t, []string{"u1", "u2", "u3"}, relUserIDs(all), "nil ids: every relation, ordered by user id")
		require.Equal(t, cChannelUser(t, member("c", "u1", chat.MembershipBanned)), cChannelUser(t, all[0]))
		some, err := tx.GetChannelUsers(e.ctx, "c", []string{"u3", "nobody", "u1", "u4"})
		require.NoError(t, err)
		require.Equal(t, []string{"u1", "u3"}, relUserIDs(some), "given ids: those with a relation, ordered by user id")
		none, err := tx.GetChannelUsers(e.ctx, "c", []string{})
		require.NoError(t, err)
		require.Empty(t, none, "an empty (non-nil) id list selects nothing")
		none, err = tx.GetChannelUsers(e.ctx, "missing", nil)
		require.NoError(t, err)
		require.Empty(t, none)
		return nil
	})
}

func testListMemberships(t *testing.T, e *env) {
	e.createChannels(newChannel("c1", at(0)), newChannel("c2", at(0)), newChannel("c3", at(0)), newChannel("c4", at(0)))
	e.putMembers(
		member("c1", "u", chat.MembershipMember),
		member("c2", "u", chat.MembershipBanned),
		member("c3", "u", chat.MembershipMember),
		member("c4", "other", chat.MembershipMember),
	)
	got := read(e, func(tx chat.Tx) ([]*chat.ChannelUser, error) {
		return tx.ListMemberships(e.ctx, "u", []string{"c1", "c2", "c4", "missing"})
	})
	byChannel := map[string]chat.Membership{}
	for _, cu := range got {
		require.Equal(t, "u", cu.UserID)
		byChannel[cu.ChannelID] = cu.Membership
	}
	require.Equal(t, map[string]chat.Membership{"c1": chat.MembershipMember, "c2": chat.MembershipBanned}, byChannel)
	got = read(e, func(tx chat.Tx) ([]*chat.ChannelUser, error) {
		return tx.ListMemberships(e.ctx, "nobody", []string{"c1"})
	})
	require.Empty(t, got)
}

func testMemberIsolation(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	cu := member("c", "u", chat.MembershipMember)
	cu.MuteTimeout = atp(100)
	e.putMembers(cu)
	cu.Membership = chat.MembershipBanned
	*cu.MuteTimeout = at(5)
	got := read(e, func(tx chat.Tx) (*chat.ChannelUser, error) { return tx.GetChannelUser(e.ctx, "c", "u") })
	require.Equal(t, chat.MembershipMember, got.Membership)
	require.True(t, at(100).Equal(got.MuteTimeout.Time))
	*got.MuteTimeout = at(5)
	got.Membership = chat.MembershipNone
	again := read(e, func(tx chat.Tx) ([]*chat.ChannelUser, error) { return tx.GetChannelUsers(e.ctx, "c", nil) })
	require.Len(t, again, 1)
	require.Equal(t, chat.MembershipMember, again[0].Membership)
	require.True(t, at(100).Equal(again[0].MuteTimeout.Time))
}

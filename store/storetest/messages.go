package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

var messageCases = []tcase{
	{"CreateGet", testMessageCreateGet},
	{"CreateConflict", testMessageConflict},
	{"NotFound", testMessageNotFound},
	{"GetMessages", testGetMessages},
	{"Update", testMessageUpdate},
	{"SetChildrenNumber", testChildrenNumber},
	{"QueryOrderAndBounds", testMessageQueryOrder},
	{"QueryFilters", testMessageQueryFilters},
	{"QueryByAuthor", testMessageQueryByAuthor},
	{"QueryPagingConcurrentInserts", testMessagePagingConcurrent},
	{"SoftDelete", testSoftDelete},
	{"Isolation", testMessageIsolation},
	{"TimeRoundTrip", testMessageTimes},
}

func fullMessage() *chat.Message {
	return &chat.Message{
		MessageID: "msg-1", ChannelID: "c", UserID: "author", Type: chat.MessageTypeCustom,
		Data: map[string]any{
			"text": "héllo 👋", "n": 42.0, "f": 0.25, "b": false, "null": nil,
			"obj": map[string]any{"list": []any{"a", 1.0, map[string]any{"deep": true}}},
		},
		Tags:      []string{"x", "y"},
		CreatedAt: at(1000), EditedAt: atp(1500), UpdatedAt: at(2000),
		ChannelSegment: 7, FlagCount: 2,
		Hashflag: chat.Hashflag{Bits: 64, Hashes: 3, Hash: []uint32{1, 4294967295}},
	}
}

func testMessageCreateGet(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	e.createMessages(fullMessage())
	require.Equal(t, cMessage(t, fullMessage()), cMessage(t, e.message("msg-1")))
	plain := newMessage("plain", "c", "u", 8)
	plain.Data = nil
	e.createMessages(plain)
	got := e.message("plain")
	require.Equal(t, cMessage(t, plain), cMessage(t, got))
	require.Empty(t, got.ParentID)
	require.Zero(t, got.ChildrenNumber)
	require.Zero(t, got.ReactionsCount)
	require.Empty(t, got.Reactions)
}

func testMessageConflict(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)), newChannel("d", at(0)))
	e.createMessages(newMessage("m1", "c", "u", 1))
	err := e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.CreateMessage(e.ctx, newMessage("m1", "c", "u", 2)) })
	requireConflict(t, err, "duplicate message id")
	err = e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.CreateMessage(e.ctx, newMessage("m1", "d", "u", 1)) })
	requireConflict(t, err, "duplicate message id in another channel")
	err = e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.CreateMessage(e.ctx, newMessage("m2", "c", "u", 1)) })
	requireConflict(t, err, "duplicate (channelId, channelSegment)")
	require.Equal(t, cMessage(t, newMessage("m1", "c", "u", 1)), cMessage(t, e.message("m1")))
	// The same segment in another channel is fine.
	e.createMessages(newMessage("m2", "d", "u", 1))
	ms := read(e, func(tx chat.Tx) ([]*chat.Message, error) {
		return tx.QueryMessages(e.ctx, chat.MessageFilter{ChannelID: "c"})
	})
	require.Equal(t, []string{"m1"}, messageIDs(ms))
}

func testMessageNotFound(t *testing.T, e *env) {
	_, err := readErr(e, func(tx chat.Tx) (*chat.Message, error) { return tx.GetMessage(e.ctx, "missing") })
	requireNotFound(t, err, "GetMessage")
	err = e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.UpdateMessage(e.ctx, newMessage("missing", "c", "u", 1)) })
	requireNotFound(t, err, "UpdateMessage")
}

func testGetMessages(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	e.createMessages(newMessage("m1", "c", "u", 1), newMessage("m2", "c", "u", 2), newMessage("m3", "c", "u", 3))
	got := read(e, func(tx chat.Tx) ([]*chat.Message, error) {
		return tx.GetMessages(e.ctx, []string{"m3", "missing", "m1"})
	})
	require.ElementsMatch(t, []string{"m1", "m3"}, messageIDs(got))
	for _, m := range got {
		require.Equal(t, cMessage(t, newMessage(m.MessageID, "c", "u", m.ChannelSegment)), cMessage(t, m))
	}
	got = read(e, func(tx chat.Tx) ([]*chat.Message, error) { return tx.GetMessages(e.ctx, nil) })
	require.Empty(t, got)
}

func testMessageUpdate(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	parent := fullMessage()
	comment := newMessage("comment", "c", "u", 8)
	comment.ParentID = "msg-1"
	e.createMessages(parent, comment)
	e.update(func(tx chat.Tx) error { return tx.SetChildrenNumber(e.ctx, "msg-1", 1) })
	write(e, func(tx chat.Tx) (bool, error) {
		_, ok, err := react(e.ctx, tx, &chat.Reaction{ReactionID: "r1", ReferenceID: "msg-1", ReferenceType: chat.ReferenceTypeMessage, ReactionName: "like", UserID: "u", CreatedAt: at(3)})
		return ok, err
	})

	upd := fullMessage()
	upd.Data = map[string]any{"text": "edited"}
	upd.Tags = []string{"z"}
	upd.IsDeleted = true
	upd.EditedAt = atp(5000)
	upd.UpdatedAt = at(6000)
	upd.FlagCount = 5
	upd.Hashflag = chat.Hashflag{Bits: 128, Hashes: 4, Hash: []uint32{9, 8, 7, 6}}
	// Not written by UpdateMessage.
	upd.ChannelID = "elsewhere"
	upd.UserID = "someone"
	upd.Type = chat.MessageTypeText
	upd.ParentID = "other"
	upd.CreatedAt = at(1)
	upd.ChannelSegment = 99
	upd.ChildrenNumber = 42
	upd.Reactions = map[string]int{"fake": 9}
	upd.ReactionsCount = 9
	e.update(func(tx chat.Tx) error { return tx.UpdateMessage(e.ctx, upd) })

	want := fullMessage()
	want.Data = map[string]any{"text": "edited"}
	want.Tags = []string{"z"}
	want.IsDeleted = true
	want.EditedAt = atp(5000)
	want.UpdatedAt = at(6000)
	want.FlagCount = 5
	want.Hashflag = chat.Hashflag{Bits: 128, Hashes: 4, Hash: []uint32{9, 8, 7, 6}}
	want.ChildrenNumber = 1
	want.Reactions = map[string]int{"like": 1}
	want.ReactionsCount = 1
	require.Equal(t, cMessage(t, want), cMessage(t, e.message("msg-1")))
	ms := read(e, func(tx chat.Tx) ([]*chat.Message, error) {
		return tx.QueryMessages(e.ctx, chat.MessageFilter{ChannelID: "c", IncludeDeleted: true})
	})
	require.Equal(t, []string{"msg-1", "comment"}, messageIDs(ms), "segment and channel unchanged")

	// Clearing editedAt and the hashflag.
	upd.EditedAt = nil
	upd.Hashflag = chat.Hashflag{}
	upd.FlagCount = 0
	e.update(func(tx chat.Tx) error { return tx.UpdateMessage(e.ctx, upd) })
	got := e.message("msg-1")
	require.Nil(t, got.EditedAt)
	require.Equal(t, chat.Hashflag{}, chash(got.Hashflag))
}

func testChildrenNumber(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	e.createMessages(newMessage("p", "c", "u", 1), newMessage("q", "c", "u", 2))
	// CreateMessage stores a comment as given and leaves its parent alone.
	c := newMessage("c0", "c", "u", 3)
	c.ParentID, c.ChildrenNumber = "p", 7
	e.createMessages(c)
	require.Zero(t, e.message("p").ChildrenNumber)
	require.Equal(t, "p", e.message("c0").ParentID)
	require.Equal(t, 7, e.message("c0").ChildrenNumber)
	// SetChildrenNumber writes the one message named.
	e.update(func(tx chat.Tx) error { return tx.SetChildrenNumber(e.ctx, "p", 3) })
	require.Equal(t, 3, e.message("p").ChildrenNumber)
	require.Zero(t, e.message("q").ChildrenNumber)
	// A message that does not exist is no error, and nothing is created.
	e.update(func(tx chat.Tx) error { return tx.SetChildrenNumber(e.ctx, "missing", 1) })
	e.view(func(tx chat.Tx) error {
		_, err := tx.GetMessage(e.ctx, "missing")
		requireNotFound(t, err, "message")
		return nil
	})
	// A rolled-back write leaves the count as it was.
	undone := errors.New("undone")
	require.ErrorIs(t, e.s.Update(e.ctx, func(tx chat.Tx) error {
		require.NoError(t, tx.SetChildrenNumber(e.ctx, "p", 9))
		return undone
	}), undone)
	require.Equal(t, 3, e.message("p").ChildrenNumber)
}

func testMessageQueryOrder(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)), newChannel("d", at(0)), newChannel("e", at(0)))
	var all []string
	for i := int64(1); i <= 10; i++ {
		id := fmt.Sprintf("m%02d", i)
		all = append(all, id)
		e.createMessages(newMessage(id, "c", "u", i))
	}
	e.createMessages(newMessage("d1", "d", "u", 1), newMessage("d2", "d", "u", 2))
	// Created out of segment order.
	e.createMessages(newMessage("e3", "e", "u", 30), newMessage("e1", "e", "u", 10), newMessage("e2", "e", "u", 20))
	cases := []struct {
		name string
		f    chat.MessageFilter
		want []string
	}{
		{"ascending", chat.MessageFilter{ChannelID: "c"}, all},
		{"descending", chat.MessageFilter{ChannelID: "c", Descending: true}, reversed(all)},
		{"after", chat.MessageFilter{ChannelID: "c", AfterSegment: 3}, all[3:]},
		{"before", chat.MessageFilter{ChannelID: "c", BeforeSegment: 5}, all[:4]},
		{"after and before", chat.MessageFilter{ChannelID: "c", AfterSegment: 3, BeforeSegment: 7}, all[3:6]},
		{"after and before descending", chat.MessageFilter{ChannelID: "c", AfterSegment: 3, BeforeSegment: 7, Descending: true}, reversed(all[3:6])},
		{"limit", chat.MessageFilter{ChannelID: "c", Limit: 3}, all[:3]},
		{"descending limit", chat.MessageFilter{ChannelID: "c", Descending: true, Limit: 3}, []string{"m10", "m09", "m08"}},
		{"after limit", chat.MessageFilter{ChannelID: "c", AfterSegment: 3, Limit: 2}, []string{"m04", "m05"}},
		{"before descending limit", chat.MessageFilter{ChannelID: "c", BeforeSegment: 8, Descending: true, Limit: 2}, []string{"m07", "m06"}},
		{"after the last", chat.MessageFilter{ChannelID: "c", AfterSegment: 10}, nil},
		{"before the first", chat.MessageFilter{ChannelID: "c", BeforeSegment: 1}, nil},
		{"empty range", chat.MessageFilter{ChannelID: "c", AfterSegment: 5, BeforeSegment: 6}, nil},
		{"other channel", chat.MessageFilter{ChannelID: "d"}, []string{"d1", "d2"}},
		{"unknown channel", chat.MessageFilter{ChannelID: "missing"}, nil},
		{"created out of order", chat.MessageFilter{ChannelID: "e"}, []string{"e1", "e2", "e3"}},
		{"created out of order, bounds", chat.MessageFilter{ChannelID: "e", AfterSegment: 10, BeforeSegment: 30}, []string{"e2"}},
		{"created out of order, descending", chat.MessageFilter{ChannelID: "e", Descending: true, Limit: 2}, []string{"e3", "e2"}},
	}
	e.view(func(tx chat.Tx) error {
		for _, c := range cases {
			got, err := tx.QueryMessages(e.ctx, c.f)
			require.NoError(t, err, c.name)
			require.Equal(t, c.want, nilIfEmpty(messageIDs(got)), c.name)
		}
		return nil
	})
	got := read(e, func(tx chat.Tx) ([]*chat.Message, error) {
		return tx.QueryMessages(e.ctx, chat.MessageFilter{ChannelID: "c", Limit: 1})
	})
	require.Equal(t, cMessage(t, newMessage("m01", "c", "u", 1)), cMessage(t, got[0]))
}

func testMessageQueryFilters(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)), newChannel("d", at(0)))
	mk := func(id string, seg int64, parent string, deleted bool, tags ...string) *chat.Message {
		m := newMessage(id, "c", "u", seg)
		m.ParentID = parent
		m.IsDeleted = deleted
		if deleted {
			m.Data = map[string]any{}
		}
		m.Tags = tags
		return m
	}
	e.createMessages(
		mk("m1", 1, "", false, "a"),
		mk("m2", 2, "", false, "b"),
		mk("m3", 3, "m1", false, "a", "b"),
		mk("m4", 4, "", true),
		mk("m5", 5, "m1", true),
		mk("m6", 6, "m2", false),
		newMessage("other", "d", "u", 1),
	)
	cases := []struct {
		name string
		f    chat.MessageFilter
		want []string
	}{
		{"live", chat.MessageFilter{ChannelID: "c"}, []string{"m1", "m2", "m3", "m6"}},
		{"includeDeleted", chat.MessageFilter{ChannelID: "c", IncludeDeleted: true}, []string{"m1", "m2", "m3", "m4", "m5", "m6"}},
		{"topLevel", chat.MessageFilter{ChannelID: "c", TopLevel: true}, []string{"m1", "m2"}},
		{"topLevel includeDeleted", chat.MessageFilter{ChannelID: "c", TopLevel: true, IncludeDeleted: true}, []string{"m1", "m2", "m4"}},
		{"topLevel descending limit", chat.MessageFilter{ChannelID: "c", TopLevel: true, IncludeDeleted: true, Descending: true, Limit: 2}, []string{"m4", "m2"}},
		{"parentId", chat.MessageFilter{ChannelID: "c", ParentID: "m1"}, []string{"m3"}},
		{"parentId includeDeleted", chat.MessageFilter{ChannelID: "c", ParentID: "m1", IncludeDeleted: true}, []string{"m3", "m5"}},
		{"parentId descending", chat.MessageFilter{ChannelID: "c", ParentID: "m1", IncludeDeleted: true, Descending: true}, []string{"m5", "m3"}},
		{"parentId after", chat.MessageFilter{ChannelID: "c", ParentID: "m1", IncludeDeleted: true, AfterSegment: 3}, []string{"m5"}},
		{"parentId before", chat.MessageFilter{ChannelID: "c", ParentID: "m1", IncludeDeleted: true, BeforeSegment: 5}, []string{"m3"}},
		{"parentId other", chat.MessageFilter{ChannelID: "c", ParentID: "m2"}, []string{"m6"}},
		{"parentId without comments", chat.MessageFilter{ChannelID: "c", ParentID: "m6"}, nil},
		{"tags any-of", chat.MessageFilter{ChannelID: "c", Tags: []string{"a"}}, []string{"m1", "m3"}},
		{"tags any-of two", chat.MessageFilter{ChannelID: "c", Tags: []string{"a", "b"}}, []string{"m1", "m2", "m3"}},
		{"excludeTags", chat.MessageFilter{ChannelID: "c", ExcludeTags: []string{"a"}}, []string{"m2", "m6"}},
		{"tags and excludeTags", chat.MessageFilter{ChannelID: "c", Tags: []string{"b"}, ExcludeTags: []string{"a"}}, []string{"m2"}},
		{"topLevel tags", chat.MessageFilter{ChannelID: "c", TopLevel: true, Tags: []string{"b"}}, []string{"m2"}},
		{"parentId tags", chat.MessageFilter{ChannelID: "c", ParentID: "m1", ExcludeTags: []string{"b"}, IncludeDeleted: true}, []string{"m5"}},
		{"limit after filters", chat.MessageFilter{ChannelID: "c", ExcludeTags: []string{"b"}, Limit: 2}, []string{"m1", "m6"}},
	}
	e.view(func(tx chat.Tx) error {
		for _, c := range cases {
			got, err := tx.QueryMessages(e.ctx, c.f)
			require.NoError(t, err, c.name)
			require.Equal(t, c.want, nilIfEmpty(messageIDs(got)), c.name)
		}
		return nil
	})
}

// Paging by segment neither skips nor repeats while messages are posted.
func testMessagePagingConcurrent(t *testing.T, e *env) {
	const initial, extra = 40, 40
	e.createChannels(newChannel("c", at(0)))
	post := func(tx chat.Tx, id string) error {
		c, err := tx.NextSegment(e.ctx, "c", base)
		if err != nil {
			return err
		}
		return tx.CreateMessage(e.ctx, newMessage(id, "c", "u", c.MessageCount))
	}
	var start []string
	for i := 0; i < initial; i++ {
		start = append(start, fmt.Sprintf("old%02d", i))
	}
	e.update(func(tx chat.Tx) error { // fn may be retried: it writes nothing outside the store
		for _, id := range start {
			if err := post(tx, id); err != nil {
				return err
			}
		}
		return nil
	})
	var wg sync.WaitGroup
	var insertErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < extra; i++ {
			id := fmt.Sprintf("new%02d", i)
			if err := e.s.Update(e.ctx, func(tx chat.Tx) error { return post(tx, id) }); err != nil {
				insertErr = err
				return
			}
		}
	}()
	var fwd []string
	var after int64
	var segs []int64
	for pages := 0; ; pages++ {
		boundPages(t, pages)
		page := read(e, func(tx chat.Tx) ([]*chat.Message, error) {
			return tx.QueryMessages(e.ctx, chat.MessageFilter{ChannelID: "c", AfterSegment: after, Limit: 7})
		})
		if len(page) == 0 {
			break
		}
		for _, m := range page {
			segs = append(segs, m.ChannelSegment)
		}
		fwd = append(fwd, messageIDs(page)...)
		after = page[len(page)-1].ChannelSegment
	}
	seenOnce(t, start, fwd, "paging with AfterSegment")
	require.True(t, slices.IsSorted(segs), "ascending segments across pages")

	var bwd []string
	var before int64 = initial + 1
	for pages := 0; ; pages++ {
		boundPages(t, pages)
		page := read(e, func(tx chat.Tx) ([]*chat.Message, error) {
			return tx.QueryMessages(e.ctx, chat.MessageFilter{ChannelID: "c", BeforeSegment: before, Descending: true, Limit: 7})
		})
		if len(page) == 0 {
			break
		}
		bwd = append(bwd, messageIDs(page)...)
		before = page[len(page)-1].ChannelSegment
	}
	require.Equal(t, reversed(start), bwd, "paging with BeforeSegment")
	wg.Wait()
	require.NoError(t, insertErr)
	require.EqualValues(t, initial+extra, e.channel("c").MessageCount)
}

func testSoftDelete(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)), newChannel("d", at(0)))
	gone := newMessage("gone", "c", "u1", 4)
	gone.IsDeleted = true
	gone.Data = map[string]any{}
	e.createMessages(
		newMessage("m1", "c", "u1", 1), newMessage("m2", "c", "u1", 2), newMessage("m3", "c", "u2", 3), gone,
		newMessage("m5", "d", "u1", 1), newMessage("m6", "d", "u2", 2),
	)
	now := at(50_000)
	ids := write(e, func(tx chat.Tx) ([]string, error) { return tx.SoftDeleteMessages(e.ctx, "c", "u1", now.Time) })
	require.ElementsMatch(t, []string{"m1", "m2"}, ids, "by channel and author: live messages only")
	for _, id := range []string{"m1", "m2"} {
		m := e.message(id)
		require.True(t, m.IsDeleted, id)
		require.NotNil(t, m.Data, "data is {} (not null)")
		require.Empty(t, m.Data, "data is {}")
		require.True(t, now.Equal(m.UpdatedAt.Time), "updatedAt = now")
		want := newMessage(id, "c", "u1", m.ChannelSegment)
		want.IsDeleted, want.Data, want.UpdatedAt = true, map[string]any{}, now
		require.Equal(t, cMessage(t, want), cMessage(t, m), "only isDeleted, data and updatedAt change")
	}
	require.False(t, e.message("m3").IsDeleted, "other author untouched")
	require.False(t, e.message("m5").IsDeleted, "other channel untouched")
	require.True(t, at(4000).Equal(e.message("gone").UpdatedAt.Time), "already deleted: untouched")

	ids = write(e, func(tx chat.Tx) ([]string, error) { return tx.SoftDeleteMessages(e.ctx, "c", "u1", now.Time) })
	require.Empty(t, ids, "idempotent")

	now2 := at(60_000)
	ids = write(e, func(tx chat.Tx) ([]string, error) { return tx.SoftDeleteUserMessages(e.ctx, "u2", now2.Time) })
	require.ElementsMatch(t, []string{"m3", "m6"}, ids, "one author in every channel")
	require.True(t, e.message("m6").IsDeleted)
	require.True(t, now2.Equal(e.message("m6").UpdatedAt.Time))
	require.False(t, e.message("m5").IsDeleted)

	ids = write(e, func(tx chat.Tx) ([]string, error) { return tx.SoftDeleteMessages(e.ctx, "d", "", now2.Time) })
	require.ElementsMatch(t, []string{"m5"}, ids, "whole channel")
	ids = write(e, func(tx chat.Tx) ([]string, error) { return tx.SoftDeleteMessages(e.ctx, "d", "", now2.Time) })
	require.Empty(t, ids)
	ids = write(e, func(tx chat.Tx) ([]string, error) { return tx.SoftDeleteUserMessages(e.ctx, "nobody", now2.Time) })
	require.Empty(t, ids)

	live := read(e, func(tx chat.Tx) ([]*chat.Message, error) {
		return tx.QueryMessages(e.ctx, chat.MessageFilter{ChannelID: "c"})
	})
	require.Empty(t, live)
	all := read(e, func(tx chat.Tx) ([]*chat.Message, error) {
		return tx.QueryMessages(e.ctx, chat.MessageFilter{ChannelID: "c", IncludeDeleted: true})
	})
	require.Equal(t, []string{"m1", "m2", "m3", "gone"}, messageIDs(all), "segments kept")
}

func testMessageIsolation(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	m := fullMessage()
	e.createMessages(m)
	e.update(func(tx chat.Tx) error {
		_, _, err := react(e.ctx, tx, &chat.Reaction{ReactionID: "r", ReferenceID: "msg-1", ReferenceType: chat.ReferenceTypeMessage, ReactionName: "like", UserID: "u", CreatedAt: at(1)})
		return err
	})
	want := fullMessage()
	want.Reactions, want.ReactionsCount = map[string]int{"like": 1}, 1
	wantC := cMessage(t, want)

	m.Data["text"] = "changed"
	m.Data["obj"].(map[string]any)["list"].([]any)[0] = "changed"
	m.Data["obj"].(map[string]any)["list"].([]any)[2].(map[string]any)["deep"] = "changed"
	m.Tags[0] = "changed"
	m.Hashflag.Hash[0] = 77
	*m.EditedAt = at(1)
	require.Equal(t, wantC, cMessage(t, e.message("msg-1")), "mutating the created struct")

	for _, got := range []*chat.Message{
		e.message("msg-1"),
		read(e, func(tx chat.Tx) ([]*chat.Message, error) {
			return tx.QueryMessages(e.ctx, chat.MessageFilter{ChannelID: "c"})
		})[0],
		read(e, func(tx chat.Tx) ([]*chat.Message, error) { return tx.GetMessages(e.ctx, []string{"msg-1"}) })[0],
		read(e, func(tx chat.Tx) ([]*chat.Message, error) { return tx.MostReacted(e.ctx, "like", "", 1) })[0],
	} {
		got.Data["text"] = "changed"
		got.Data["new"] = "added"
		got.Data["obj"].(map[string]any)["list"].([]any)[0] = "changed"
		got.Data["obj"].(map[string]any)["list"].([]any)[2].(map[string]any)["deep"] = "changed"
		got.Tags[0] = "changed"
		got.Hashflag.Hash[0] = 77
		*got.EditedAt = at(1)
		got.Reactions["like"] = 50
		got.Reactions["other"] = 1
		require.Equal(t, wantC, cMessage(t, e.message("msg-1")), "mutating a returned struct")
	}

	upd := fullMessage()
	e.update(func(tx chat.Tx) error { return tx.UpdateMessage(e.ctx, upd) })
	upd.Data["text"] = "changed"
	upd.Tags[0] = "changed"
	upd.Hashflag.Hash[1] = 5
	require.Equal(t, wantC, cMessage(t, e.message("msg-1")), "mutating the updated struct")
}

func testMessageTimes(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	edited := newMessage("edited", "c", "u", 1)
	edited.EditedAt = chat.TimePtr(time.Date(2030, 1, 1, 0, 0, 0, 1_999_999, time.FixedZone("X", -7*3600)))
	plain := newMessage("plain", "c", "u", 2)
	e.createMessages(edited, plain)
	got := e.message("edited")
	require.NotNil(t, got.EditedAt)
	require.True(t, edited.EditedAt.Equal(got.EditedAt.Time), "%v != %v", got.EditedAt.Time, edited.EditedAt.Time)
	require.Equal(t, time.UTC, got.EditedAt.Location())
	require.Equal(t, 1_000_000, got.EditedAt.Nanosecond())
	require.True(t, edited.CreatedAt.Equal(got.CreatedAt.Time))
	require.Equal(t, time.UTC, got.CreatedAt.Location())
	require.Nil(t, e.message("plain").EditedAt, "nil *Time stays nil")
}

// testMessageQueryByAuthor checks MessageFilter.UserID: one author's
// messages of one channel in segment order, with every other filter, even
// when they were stored out of segment order.
func testMessageQueryByAuthor(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)), newChannel("d", at(0)))
	gone := newMessage("m3", "c", "u1", 3)
	gone.IsDeleted = true
	gone.Data = map[string]any{}
	comment := newMessage("m4", "c", "u1", 4)
	comment.ParentID = "m1"
	tagged := newMessage("m5", "c", "u1", 5)
	tagged.Tags = []string{"t"}
	e.createMessages(newMessage("m1", "c", "u1", 1), newMessage("n1", "d", "u1", 1))
	e.createMessages(tagged, newMessage("m2", "c", "u2", 2))
	e.createMessages(gone, comment, newMessage("m6", "c", "u2", 6))
	q := func(f chat.MessageFilter) []string {
		return messageIDs(read(e, func(tx chat.Tx) ([]*chat.Message, error) { return tx.QueryMessages(e.ctx, f) }))
	}
	require.Equal(t, []string{"m1", "m4", "m5"}, q(chat.MessageFilter{ChannelID: "c", UserID: "u1"}))
	require.Equal(t, []string{"m1", "m3", "m4", "m5"}, q(chat.MessageFilter{ChannelID: "c", UserID: "u1", IncludeDeleted: true}))
	require.Equal(t, []string{"m5", "m4"}, q(chat.MessageFilter{ChannelID: "c", UserID: "u1", IncludeDeleted: true, Descending: true, Limit: 2}))
	require.Equal(t, []string{"m5"}, q(chat.MessageFilter{ChannelID: "c", UserID: "u1", Descending: true, Limit: 1}), "the author's newest")
	require.Equal(t, []string{"m1"}, q(chat.MessageFilter{ChannelID: "c", UserID: "u1", BeforeSegment: 4, Descending: true}))
	require.Equal(t, []string{"m4", "m5"}, q(chat.MessageFilter{ChannelID: "c", UserID: "u1", AfterSegment: 1}))
	require.Equal(t, []string{"m1", "m5"}, q(chat.MessageFilter{ChannelID: "c", UserID: "u1", TopLevel: true}))
	require.Equal(t, []string{"m4"}, q(chat.MessageFilter{ChannelID: "c", UserID: "u1", ParentID: "m1"}))
	require.Empty(t, q(chat.MessageFilter{ChannelID: "c", UserID: "u2", ParentID: "m1"}))
	require.Equal(t, []string{"m5"}, q(chat.MessageFilter{ChannelID: "c", UserID: "u1", Tags: []string{"t"}}))
	require.Equal(t, []string{"m1", "m4"}, q(chat.MessageFilter{ChannelID: "c", UserID: "u1", ExcludeTags: []string{"t"}}))
	require.Equal(t, []string{"m2", "m6"}, q(chat.MessageFilter{ChannelID: "c", UserID: "u2"}))
	require.Equal(t, []string{"n1"}, q(chat.MessageFilter{ChannelID: "d", UserID: "u1"}))
	require.Empty(t, q(chat.MessageFilter{ChannelID: "d", UserID: "u2"}))
	require.Empty(t, q(chat.MessageFilter{ChannelID: "c", UserID: "nobody"}))
}

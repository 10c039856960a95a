package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

var reactionCases = []tcase{
	{"AddIdempotent", testAddReactionIdempotent},
	{"Counters", testReactionCounters},
	{"SetCounts", testSetReactionCounts},
	{"RemoveNotFound", testRemoveReactionNotFound},
	{"Query", testQueryReactions},
	{"QueryPagingConcurrentInserts", testReactionPagingConcurrent},
	{"MostReacted", testMostReacted},
}

func reaction(id, messageID, name, userID string, ms int64) *chat.Reaction {
	return &chat.Reaction{ReactionID: id, ReferenceID: messageID, ReferenceType: chat.ReferenceTypeMessage, ReactionName: name, UserID: userID, CreatedAt: at(ms)}
}

func (e *env) react(rs ...*chat.Reaction) {
	e.t.Helper()
	e.update(func(tx chat.Tx) error {
		for _, r := range rs {
			if _, _, err := react(e.ctx, tx, r); err != nil {
				return err
			}
		}
		return nil
	})
}

func testAddReactionIdempotent(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	e.createMessages(newMessage("m1", "c", "u", 1))
	type res struct {
		r  *chat.Reaction
		ok bool
	}
	add := func(r *chat.Reaction) res {
		t.Helper()
		return write(e, func(tx chat.Tx) (res, error) {
			got, ok, err := react(e.ctx, tx, r)
			return res{got, ok}, err
		})
	}
	first := add(reaction("r1", "m1", "like", "u1", 1))
	require.True(t, first.ok, "inserted")
	require.Equal(t, cReaction(t, reaction("r1", "m1", "like", "u1", 1)), cReaction(t, first.r))

	second := add(reaction("r2", "m1", "like", "u1", 5))
	require.False(t, second.ok, "the same (user, message, name) is not inserted twice")
	require.Equal(t, cReaction(t, reaction("r1", "m1", "like", "u1", 1)), cReaction(t, second.r), "returns the stored reaction")

	m := e.message("m1")
	require.Equal(t, map[string]int{"like": 1}, creacts(m.Reactions))
	require.Equal(t, 1, m.ReactionsCount)
	rs := read(e, func(tx chat.Tx) ([]*chat.Reaction, error) {
		return tx.QueryReactions(e.ctx, chat.ReactionFilter{MessageID: "m1"})
	})
	require.Equal(t, []string{"r1"}, reactionIDs(rs))

	// Another name or another user is another reaction.
	require.True(t, add(reaction("r3", "m1", "love", "u1", 2)).ok)
	require.True(t, add(reaction("r4", "m1", "like", "u2", 3)).ok)
	// Twice in one transaction.
	both := write(e, func(tx chat.Tx) ([2]bool, error) {
		_, a, err := react(e.ctx, tx, reaction("r5", "m1", "wow", "u1", 4))
		if err != nil {
			return [2]bool{}, err
		}
		_, b, err := react(e.ctx, tx, reaction("r6", "m1", "wow", "u1", 4))
		return [2]bool{a, b}, err
	})
	require.Equal(t, [2]bool{true, false}, both)
	m = e.message("m1")
	require.Equal(t, map[string]int{"like": 2, "love": 1, "wow": 1}, creacts(m.Reactions))
	require.Equal(t, 4, m.ReactionsCount)
}

func testReactionCounters(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	e.createMessages(newMessage("m1", "c", "u", 1), newMessage("m2", "c", "u", 2))
	e.react(
		reaction("a", "m1", "like", "u1", 1),
		reaction("b", "m1", "like", "u2", 2),
		reaction("c", "m1", "love", "u1", 3),
		reaction("d", "m2", "like", "u1", 4),
	)
	counts := func(id string) (map[string]int, int) {
		t.Helper()
		m := e.message(id)
		return creacts(m.Reactions), m.ReactionsCount
	}
	r, n := counts("m1")
	require.Equal(t, map[string]int{"like": 2, "love": 1}, r)
	require.Equal(t, 3, n)

	removed := write(e, func(tx chat.Tx) (*chat.Reaction, error) { return unreact(e.ctx, tx, "u1", "m1", "like") })
	require.Equal(t, cReaction(t, reaction("a", "m1", "like", "u1", 1)), cReaction(t, removed), "returns the removed reaction")
	r, n = counts("m1")
	require.Equal(t, map[string]int{"like": 1, "love": 1}, r)
	require.Equal(t, 2, n)

	write(e, func(tx chat.Tx) (*chat.Reaction, error) { return unreact(e.ctx, tx, "u2", "m1", "like") })
	r, n = counts("m1")
	require.Equal(t, map[string]int{"love": 1}, r, "a name whose count reaches 0 is gone (or 0)")
	require.Equal(t, 1, n)
	rs := read(e, func(tx chat.Tx) ([]*chat.Reaction, error) {
		return tx.QueryReactions(e.ctx, chat.ReactionFilter{MessageID: "m1"})
	})
	require.Equal(t, []string{"c"}, reactionIDs(rs))

	r, n = counts("m2")
	require.Equal(t, map[string]int{"like": 1}, r, "other messages untouched")
	require.Equal(t, 1, n)

	// Re-adding after removal inserts again.
	e.react(reaction("e", "m1", "like", "u1", 9))
	r, n = counts("m1")
	require.Equal(t, map[string]int{"like": 1, "love": 1}, r)
	require.Equal(t, 2, n)

	// Add and remove in one transaction.
	e.update(func(tx chat.Tx) error {
		if _, _, err := react(e.ctx, tx, reaction("f", "m2", "wow", "u5", 10)); err != nil {
			return err
		}
		_, err := unreact(e.ctx, tx, "u1", "m2", "like")
		return err
	})
	r, n = counts("m2")
	require.Equal(t, map[string]int{"wow": 1}, r)
	require.Equal(t, 1, n)
}

func testRemoveReactionNotFound(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	e.createMessages(newMessage("m1", "c", "u", 1))
	e.react(reaction("a", "m1", "like", "u1", 1))
	remove := func(user, msg, name string) error {
		return e.s.Update(e.ctx, func(tx chat.Tx) error { _, err := unreact(e.ctx, tx, user, msg, name); return err })
	}
	requireNotFound(t, remove("u2", "m1", "like"), "other user")
	requireNotFound(t, remove("u1", "m1", "love"), "other name")
	requireNotFound(t, remove("u1", "missing", "like"), "unknown message")
	require.NoError(t, remove("u1", "m1", "like"))
	requireNotFound(t, remove("u1", "m1", "like"), "removed already")
	m := e.message("m1")
	require.Zero(t, m.ReactionsCount)
	require.Empty(t, creacts(m.Reactions))
}

func testQueryReactions(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	e.createMessages(newMessage("m1", "c", "u", 1), newMessage("m2", "c", "u", 2))
	e.react(
		reaction("r01", "m1", "like", "u1", 1),
		reaction("r02", "m1", "love", "u2", 2),
		reaction("r03", "m1", "like", "u3", 2),
		reaction("r04", "m1", "like", "u4", 3),
		reaction("r05", "m1", "love", "u5", 4),
		reaction("r06", "m1", "like", "u6", 4),
		reaction("r07", "m1", "like", "u7", 4),
		reaction("r08", "m1", "love", "u8", 5),
		reaction("r09", "m2", "like", "u1", 9),
	)
	all := []string{"r08", "r07", "r06", "r05", "r04", "r03", "r02", "r01"}
	likes := []string{"r07", "r06", "r04", "r03", "r01"}
	cur := func(id string, ms int64) *chat.ReactionCursor {
		return &chat.ReactionCursor{CreatedAt: at(ms).Time, ReactionID: id}
	}
	cases := []struct {
		name string
		f    chat.ReactionFilter
		want []string
	}{
		{"newest first, then id descending", chat.ReactionFilter{MessageID: "m1"}, all},
		{"by name", chat.ReactionFilter{MessageID: "m1", ReactionName: "like"}, likes},
		{"by other name", chat.ReactionFilter{MessageID: "m1", ReactionName: "love"}, []string{"r08", "r05", "r02"}},
		{"unknown name", chat.ReactionFilter{MessageID: "m1", ReactionName: "nope"}, nil},
		{"other message", chat.ReactionFilter{MessageID: "m2"}, []string{"r09"}},
		{"unknown message", chat.ReactionFilter{MessageID: "missing"}, nil},
		{"limit", chat.ReactionFilter{MessageID: "m1", Limit: 3}, all[:3]},
		{"offset", chat.ReactionFilter{MessageID: "m1", Offset: 6}, all[6:]},
		{"offset and limit", chat.ReactionFilter{MessageID: "m1", Offset: 2, Limit: 3}, all[2:5]},
		{"name, offset and limit", chat.ReactionFilter{MessageID: "m1", ReactionName: "like", Offset: 1, Limit: 2}, likes[1:3]},
		{"after", chat.ReactionFilter{MessageID: "m1", After: cur("r06", 4)}, all[3:]},
		{"after limit", chat.ReactionFilter{MessageID: "m1", After: cur("r06", 4), Limit: 2}, all[3:5]},
		{"after with name", chat.ReactionFilter{MessageID: "m1", ReactionName: "like", After: cur("r06", 4)}, likes[2:]},
		{"before: nearest first", chat.ReactionFilter{MessageID: "m1", Before: cur("r03", 2)}, []string{"r04", "r05", "r06", "r07", "r08"}},
		{"before limit", chat.ReactionFilter{MessageID: "m1", Before: cur("r03", 2), Limit: 2}, []string{"r04", "r05"}},
		{"before the newest", chat.ReactionFilter{MessageID: "m1", Before: cur("r08", 5)}, nil},
		{"after the oldest", chat.ReactionFilter{MessageID: "m1", After: cur("r01", 1)}, nil},
	}
	e.view(func(tx chat.Tx) error {
		for _, c := range cases {
			got, err := tx.QueryReactions(e.ctx, c.f)
			require.NoError(t, err, c.name)
			require.Equal(t, c.want, nilIfEmpty(reactionIDs(got)), c.name)
		}
		got, err := tx.QueryReactions(e.ctx, chat.ReactionFilter{MessageID: "m1", Limit: 1})
		require.NoError(t, err)
		require.Equal(t, cReaction(t, reaction("r08", "m1", "love", "u8", 5)), cReaction(t, got[0]))

		// Page through both ways.
		var fwd []string
		var c *chat.ReactionCursor
		for pages := 0; ; pages++ {
			boundPages(t, pages)
			page, err := tx.QueryReactions(e.ctx, chat.ReactionFilter{MessageID: "m1", After: c, Limit: 3})
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			fwd = append(fwd, reactionIDs(page)...)
			last := page[len(page)-1]
			c = &chat.ReactionCursor{CreatedAt: last.CreatedAt.Time, ReactionID: last.ReactionID}
		}
		require.Equal(t, all, fwd)
		bwd := []string{"r01"}
		c = cur("r01", 1)
		for pages := 0; ; pages++ {
			boundPages(t, pages)
			page, err := tx.QueryReactions(e.ctx, chat.ReactionFilter{MessageID: "m1", Before: c, Limit: 3})
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			bwd = append(bwd, reactionIDs(page)...)
			last := page[len(page)-1]
			c = &chat.ReactionCursor{CreatedAt: last.CreatedAt.Time, ReactionID: last.ReactionID}
		}
		require.Equal(t, reversed(all), bwd)
		return nil
	})
}

// Reactors paging (newest first, After) neither skips nor repeats while
// newer reactions are added.
func testReactionPagingConcurrent(t *testing.T, e *env) {
	const n = 30
	e.createChannels(newChannel("c", at(0)))
	e.createMessages(newMessage("m", "c", "u", 1))
	var start []string
	var rs []*chat.Reaction
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("old%02d", i)
		start = append(start, id)
		rs = append(rs, reaction(id, "m", "like", "u"+id, int64(i/3)))
	}
	e.react(rs...)
	var wg sync.WaitGroup
	var insertErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("new%02d", i)
			if err := e.s.Update(e.ctx, func(tx chat.Tx) error {
				_, _, err := react(e.ctx, tx, reaction(id, "m", "like", "u"+id, int64(1000+i)))
				return err
			}); err != nil {
				insertErr = err
				return
			}
		}
	}()
	var seen []string
	var c *chat.ReactionCursor
	for pages := 0; ; pages++ {
		boundPages(t, pages)
		page := read(e, func(tx chat.Tx) ([]*chat.Reaction, error) {
			return tx.QueryReactions(e.ctx, chat.ReactionFilter{MessageID: "m", After: c, Limit: 4})
		})
		if len(page) == 0 {
			break
		}
		seen = append(seen, reactionIDs(page)...)
		last := page[len(page)-1]
		c = &chat.ReactionCursor{CreatedAt: last.CreatedAt.Time, ReactionID: last.ReactionID}
	}
	seenOnce(t, start, seen, "paging with After")
	wg.Wait()
	require.NoError(t, insertErr)
	m := e.message("m")
	require.Equal(t, 2*n, m.ReactionsCount)
	require.Equal(t, map[string]int{"like": 2 * n}, creacts(m.Reactions))
}

func testMostReacted(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)), newChannel("d", at(0)))
	mk := func(id, ch string, seg, createdMs int64) *chat.Message {
		m := newMessage(id, ch, "u", seg)
		m.CreatedAt = at(createdMs)
		return m
	}
	e.createMessages(
		mk("m1", "c", 1, 1), mk("m2", "c", 2, 2), mk("m3", "c", 3, 3), mk("m4", "c", 4, 3),
		mk("m5", "c", 5, 5), mk("m6", "c", 6, 6), mk("m8", "c", 8, 8), mk("m9", "c", 9, 9),
		mk("m7", "d", 1, 7),
	)
	var rs []*chat.Reaction
	n := 0
	like := func(msg, name string, count int) {
		for i := 0; i < count; i++ {
			n++
			rs = append(rs, reaction(fmt.Sprintf("r%03d", n), msg, name, fmt.Sprintf("u%d", i), int64(n)))
		}
	}
	like("m1", "like", 3)
	like("m2", "like", 2)
	like("m3", "like", 2) // ties m2 on count, newer
	like("m4", "like", 2) // ties m3 on count and createdAt, larger id
	like("m5", "love", 5) // another name only
	like("m6", "like", 4) // deleted below
	like("m7", "like", 1) // other channel
	like("m8", "like", 1) // removed below
	like("m9", "like", 1)
	like("m9", "love", 9) // other names do not count
	e.react(rs...)
	e.update(func(tx chat.Tx) error {
		if _, err := unreact(e.ctx, tx, "u0", "m8", "like"); err != nil {
			return err
		}
		m, err := tx.GetMessage(e.ctx, "m6")
		if err != nil {
			return err
		}
		m.IsDeleted = true
		m.Data = map[string]any{}
		return tx.UpdateMessage(e.ctx, m)
	})
	most := func(name, channel string, limit int) []string {
		t.Helper()
		return nilIfEmpty(messageIDs(read(e, func(tx chat.Tx) ([]*chat.Message, error) {
			return tx.MostReacted(e.ctx, name, channel, limit)
		})))
	}
	require.Equal(t, []string{"m1", "m4", "m3", "m2", "m9", "m7"}, most("like", "", 10), "count desc, createdAt desc, messageId desc; deleted and unreacted left out")
	require.Equal(t, []string{"m1", "m4", "m3", "m2", "m9"}, most("like", "c", 10), "channel scope")
	require.Equal(t, []string{"m7"}, most("like", "d", 10))
	require.Equal(t, []string{"m1", "m4"}, most("like", "c", 2), "limit")
	require.Equal(t, []string{"m9", "m5"}, most("love", "", 10))
	require.Nil(t, most("nothing", "", 10))
	require.Nil(t, most("like", "missing", 10))
	got := read(e, func(tx chat.Tx) ([]*chat.Message, error) { return tx.MostReacted(e.ctx, "like", "c", 1) })
	require.Len(t, got, 1)
	require.Equal(t, map[string]int{"like": 3}, creacts(got[0].Reactions), "messages carry their counters")
	require.Equal(t, 3, got[0].ReactionsCount)
}

// react and unreact change reactions as the Service does: the message
// held with LockMessage, its counters computed by AddMessageReaction and
// RemoveMessageReaction.
func react(ctx context.Context, tx chat.Tx, r *chat.Reaction) (*chat.Reaction, bool, error) {
	m, err := tx.LockMessage(ctx, r.ReferenceID)
	if err != nil {
		return nil, false, err
	}
	return chat.AddMessageReaction(ctx, tx, m, r)
}

func unreact(ctx context.Context, tx chat.Tx, userID, messageID, name string) (*chat.Reaction, error) {
	m, err := tx.LockMessage(ctx, messageID)
	if err != nil {
		return nil, err
	}
	return chat.RemoveMessageReaction(ctx, tx, m, userID, name)
}

// The counters are the caller's to compute: AddReaction and RemoveReaction
// leave them alone, SetReactionCounts writes what it is given, and
// MostReacted orders by the written count.
func testSetReactionCounts(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	e.createMessages(newMessage("m1", "c", "u", 1), newMessage("m2", "c", "u", 2))
	e.update(func(tx chat.Tx) error {
		_, ok, err := tx.AddReaction(e.ctx, reaction("a", "m1", "like", "u1", 1))
		require.True(t, ok)
		return err
	})
	m := e.message("m1")
	require.Empty(t, creacts(m.Reactions), "AddReaction does not count")
	require.Zero(t, m.ReactionsCount)
	most := func() []string {
		t.Helper()
		return messageIDs(read(e, func(tx chat.Tx) ([]*chat.Message, error) { return tx.MostReacted(e.ctx, "like", "", 10) }))
	}
	require.Empty(t, most())

	set := func(id string, counts map[string]int, total int, name string) {
		t.Helper()
		e.update(func(tx chat.Tx) error {
			m, err := tx.LockMessage(e.ctx, id)
			if err != nil {
				return err
			}
			m.Reactions, m.ReactionsCount = counts, total
			return tx.SetReactionCounts(e.ctx, m, name)
		})
	}
	set("m1", map[string]int{"like": 5, "wow": 2}, 9, "like")
	set("m2", map[string]int{"like": 7}, 7, "like")
	m = e.message("m1")
	require.Equal(t, map[string]int{"like": 5, "wow": 2}, creacts(m.Reactions))
	require.Equal(t, 9, m.ReactionsCount, "the total is written as given")
	require.Equal(t, []string{"m2", "m1"}, most())
	set("m2", map[string]int{}, 0, "like")
	require.Equal(t, []string{"m1"}, most(), "a count of 0 leaves MostReacted")
	require.Empty(t, creacts(e.message("m2").Reactions))

	e.update(func(tx chat.Tx) error {
		_, err := tx.RemoveReaction(e.ctx, "u1", "m1", "like")
		return err
	})
	require.Equal(t, 9, e.message("m1").ReactionsCount, "RemoveReaction does not count")
}

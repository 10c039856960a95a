package storetest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// mentionCases are the mentions of messages (MentionedUserIDs) and the
// MentionStore that answers from them.
var mentionCases = []tcase{
	{"RoundTrip", testMentionsRoundTrip},
	{"UnreadCounts", testMentionUnreadCounts},
	{"Query", testMentionQuery},
	{"Rollback", testMentionRollback},
}

// postMention stores a message of author in channelID at createdAt ms
// mentioning users, through chat.AppendMessage (CreateMessage when seg
// is not 0).
func (e *env) postMention(id, channelID, author string, created int64, users ...string) *chat.Message {
	e.t.Helper()
	m := newMessage(id, channelID, author, 0)
	m.CreatedAt, m.UpdatedAt = at(created), at(created)
	m.MentionedUserIDs = users
	e.update(func(tx chat.Tx) error {
		c, err := chat.AppendMessage(e.ctx, tx, m, at(created).Time)
		if err == nil && c.IsClosed {
			err = errors.New("closed")
		}
		return err
	})
	return m
}

func (e *env) mentionCounts(cus ...*chat.ChannelUser) []int64 {
	e.t.Helper()
	return read(e, func(tx chat.Tx) ([]int64, error) { return tx.UnreadMentionCounts(e.ctx, cus) })
}

func (e *env) mentionIDs(f chat.MentionFilter) []string {
	e.t.Helper()
	ms := read(e, func(tx chat.Tx) ([]*chat.Message, error) { return tx.QueryMentions(e.ctx, f) })
	ids := []string{}
	for _, m := range ms {
		ids = append(ids, m.MessageID)
	}
	return ids
}

func (e *env) editMentions(id string, users ...string) {
	e.t.Helper()
	e.update(func(tx chat.Tx) error {
		m, err := tx.GetMessage(e.ctx, id)
		if err != nil {
			return err
		}
		m.MentionedUserIDs = users
		return tx.UpdateMessage(e.ctx, m)
	})
}

func testMentionsRoundTrip(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	e.postMention("m1", "c", "a", 1, "u", "v")
	e.postMention("m2", "c", "a", 2)
	direct := newMessage("m3", "c", "a", 100)
	direct.MentionedUserIDs = []string{"w"}
	e.update(func(tx chat.Tx) error { return tx.CreateMessage(e.ctx, direct) })

	require.Equal(t, []string{"u", "v"}, e.message("m1").MentionedUserIDs, "in order, as written")
	require.Empty(t, e.message("m2").MentionedUserIDs)
	require.Equal(t, []string{"w"}, e.message("m3").MentionedUserIDs, "CreateMessage stores them too")
	ms := read(e, func(tx chat.Tx) ([]*chat.Message, error) {
		return tx.QueryMessages(e.ctx, chat.MessageFilter{ChannelID: "c"})
	})
	require.Len(t, ms, 3)
	require.Equal(t, []string{"u", "v"}, ms[0].MentionedUserIDs, "QueryMessages carries them")
	require.Empty(t, ms[1].MentionedUserIDs)
	got := read(e, func(tx chat.Tx) ([]*chat.Message, error) { return tx.GetMessages(e.ctx, []string{"m1"}) })
	require.Equal(t, []string{"u", "v"}, got[0].MentionedUserIDs, "GetMessages carries them")

	// UpdateMessage replaces them, and other updates keep them.
	e.editMentions("m1", "v")
	require.Equal(t, []string{"v"}, e.message("m1").MentionedUserIDs)
	e.update(func(tx chat.Tx) error {
		m, err := tx.GetMessage(e.ctx, "m1")
		if err != nil {
			return err
		}
		m.FlagCount = 1
		return tx.UpdateMessage(e.ctx, m)
	})
	require.Equal(t, []string{"v"}, e.message("m1").MentionedUserIDs, "a flag keeps the mentions")
	e.editMentions("m1")
	require.Empty(t, e.message("m1").MentionedUserIDs)
}

func testMentionUnreadCounts(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)), newChannel("d", at(0)))
	e.putMembers(member("c", "u", chat.MembershipMember), member("c", "v", chat.MembershipMember),
		member("d", "u", chat.MembershipMember))
	e.postMention("c1", "c", "a", 1, "u")      // segment 1
	e.postMention("c2", "c", "a", 2, "u", "v") // 2
	e.postMention("c3", "c", "a", 3)           // 3
	e.postMention("c4", "c", "v", 4, "u")      // 4
	e.postMention("d1", "d", "a", 5, "u")      // d: 1
	counts := func(r int64) []int64 {
		return e.mentionCounts(
			&chat.ChannelUser{ChannelID: "c", UserID: "u", ReadToSegment: r},
			&chat.ChannelUser{ChannelID: "c", UserID: "v", ReadToSegment: r},
			&chat.ChannelUser{ChannelID: "d", UserID: "u", ReadToSegment: r},
			&chat.ChannelUser{ChannelID: "missing", UserID: "u", ReadToSegment: r},
		)
	}
	require.Equal(t, []int64{3, 1, 1, 0}, counts(0))
	require.Equal(t, []int64{2, 1, 0, 0}, counts(1))
	require.Equal(t, []int64{1, 0, 0, 0}, counts(2), "above the marker only")
	require.Equal(t, []int64{0, 0, 0, 0}, counts(4))
	require.Empty(t, e.mentionCounts(), "no relations, no counts")

	// An edit that drops a mention drops its count; one that adds counts.
	e.editMentions("c2", "v")
	e.editMentions("c3", "u")
	require.Equal(t, []int64{3, 1, 1, 0}, counts(0))
	require.Equal(t, []int64{2, 0, 0, 0}, counts(2))
	// Deleted messages do not count: one deleted by UpdateMessage, the
	// others by SoftDeleteMessages (their stored mentions stay).
	e.update(func(tx chat.Tx) error {
		m, err := tx.GetMessage(e.ctx, "c1")
		if err != nil {
			return err
		}
		m.IsDeleted, m.Data = true, map[string]any{}
		return tx.UpdateMessage(e.ctx, m)
	})
	require.Equal(t, []int64{2, 1, 1, 0}, counts(0))
	e.update(func(tx chat.Tx) error {
		_, err := tx.SoftDeleteMessages(e.ctx, "c", "v", at(9).Time)
		return err
	})
	require.Equal(t, []int64{1, 1, 1, 0}, counts(0))
}

func testMentionQuery(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)), newChannel("d", at(0)), newChannel("gone", at(0)))
	e.putMembers(member("c", "u", chat.MembershipMember), member("d", "u", chat.MembershipMember),
		member("gone", "u", chat.MembershipBanned))
	e.postMention("m1", "c", "a", 10, "u")
	e.postMention("m2", "d", "a", 20, "u", "v")
	e.postMention("m3b", "c", "a", 30, "u") // m3a and m3b share createdAt: id descending
	e.postMention("m3a", "d", "a", 30, "u")
	e.postMention("m4", "c", "a", 40, "v")
	e.postMention("g1", "gone", "a", 50, "u") // banned there now: not listed
	e.postMention("m5", "c", "a", 60, "u")
	e.postMention("x1", "c", "a", 70, "u")

	all := chat.MentionFilter{UserID: "u"}
	require.Equal(t, []string{"x1", "m5", "m3b", "m3a", "m2", "m1"}, e.mentionIDs(all), "newest first, live, member channels")
	require.Equal(t, []string{"x1", "m5", "m3b", "m1"}, e.mentionIDs(chat.MentionFilter{UserID: "u", ChannelID: "c"}))
	require.Empty(t, e.mentionIDs(chat.MentionFilter{UserID: "v"}), "v is a member nowhere")
	require.Empty(t, e.mentionIDs(chat.MentionFilter{UserID: "nobody"}))

	// Keyset pages both ways.
	page := chat.MentionFilter{UserID: "u", Limit: 2}
	require.Equal(t, []string{"x1", "m5"}, e.mentionIDs(page))
	page.After = &chat.MessageSearchCursor{CreatedAt: at(60).Time, MessageID: "m5"}
	require.Equal(t, []string{"m3b", "m3a"}, e.mentionIDs(page))
	page.After = &chat.MessageSearchCursor{CreatedAt: at(30).Time, MessageID: "m3a"}
	require.Equal(t, []string{"m2", "m1"}, e.mentionIDs(page))
	page.After = nil
	page.Before = &chat.MessageSearchCursor{CreatedAt: at(30).Time, MessageID: "m3a"}
	require.Equal(t, []string{"m3b", "m5"}, e.mentionIDs(page), "before: nearest first (reversed)")

	// A deleted message, an edited-away mention and a left channel drop out.
	e.update(func(tx chat.Tx) error {
		_, err := tx.SoftDeleteMessages(e.ctx, "c", "a", at(80).Time)
		return err
	})
	require.Equal(t, []string{"m3a", "m2"}, e.mentionIDs(all))
	e.editMentions("m3a", "v")
	require.Equal(t, []string{"m2"}, e.mentionIDs(all))
	e.editMentions("m3a", "v", "u")
	require.Equal(t, []string{"m3a", "m2"}, e.mentionIDs(all), "mentioned again by an edit")
	e.update(func(tx chat.Tx) error { return tx.DeleteChannelUser(e.ctx, "d", "u") })
	require.Empty(t, e.mentionIDs(all), "left d")
	e.putMembers(member("d", "u", chat.MembershipMember))
	require.Equal(t, []string{"m3a", "m2"}, e.mentionIDs(all), "a member again")
	ms := read(e, func(tx chat.Tx) ([]*chat.Message, error) { return tx.QueryMentions(e.ctx, all) })
	require.Equal(t, []string{"u", "v"}, ms[1].MentionedUserIDs, "whole messages")
	require.Equal(t, "d", ms[1].ChannelID)
}

func testMentionRollback(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	e.putMembers(member("c", "u", chat.MembershipMember))
	e.postMention("keep", "c", "a", 1, "u")
	boom := errors.New("boom")
	err := e.s.Update(e.ctx, func(tx chat.Tx) error {
		m := newMessage("lost", "c", "a", 0)
		m.MentionedUserIDs = []string{"u"}
		if _, err := chat.AppendMessage(e.ctx, tx, m, at(2).Time); err != nil {
			return err
		}
		old, err := tx.GetMessage(e.ctx, "keep")
		if err != nil {
			return err
		}
		old.MentionedUserIDs = nil
		if err := tx.UpdateMessage(e.ctx, old); err != nil {
			return err
		}
		ms, err := tx.QueryMentions(e.ctx, chat.MentionFilter{UserID: "u"})
		if err != nil {
			return err
		}
		if len(ms) != 1 || ms[0].MessageID != "lost" {
			return errors.New("inside the transaction the mentions are the written ones")
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.Equal(t, []string{"keep"}, e.mentionIDs(chat.MentionFilter{UserID: "u"}))
	require.Equal(t, []int64{1}, e.mentionCounts(&chat.ChannelUser{ChannelID: "c", UserID: "u"}))
}

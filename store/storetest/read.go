package storetest

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// readCases are the read markers (MarkRead, ReadToSegment) and the unread
// counts (UnreadCounts).
var readCases = []tcase{
	{"MarkerForwardOnly", testMarkReadForward},
	{"MarkerKeptByPutChannelUser", testMarkReadKept},
	{"MarkerRollback", testMarkReadRollback},
	{"MarkerConcurrent", testMarkReadConcurrent},
	{"UnreadCountsModel", testUnreadModel},
	{"UnreadCountsDeletes", testUnreadDeletes},
	{"UnreadCountsEdges", testUnreadEdges},
}

// msgSeq numbers the messages of appendMsgs.
var msgSeq atomic.Int64

func (e *env) relation(channelID, userID string) *chat.ChannelUser {
	e.t.Helper()
	return read(e, func(tx chat.Tx) (*chat.ChannelUser, error) { return tx.GetChannelUser(e.ctx, channelID, userID) })
}

func (e *env) markRead(channelID, userID string, seg int64) *chat.ChannelUser {
	e.t.Helper()
	return write(e, func(tx chat.Tx) (*chat.ChannelUser, error) { return tx.MarkRead(e.ctx, channelID, userID, seg) })
}

func (e *env) unread(cus ...*chat.ChannelUser) []int64 {
	e.t.Helper()
	return read(e, func(tx chat.Tx) ([]int64, error) { return chat.UnreadCounts(e.ctx, tx, cus) })
}

// appendMsgs posts messages through chat.AppendMessage (the Service's way,
// which keeps every segment up to messageCount one message): author i
// of authors writes the i-th, a comment of parent when parent is set.
func (e *env) appendMsgs(channelID, parent string, authors ...string) []*chat.Message {
	e.t.Helper()
	out := make([]*chat.Message, len(authors))
	e.update(func(tx chat.Tx) error {
		for i, a := range authors {
			m := newMessage(fmt.Sprintf("%s-%s-%d", channelID, a, msgSeq.Add(1)), channelID, a, 0)
			m.ParentID = parent
			c, err := chat.AppendMessage(e.ctx, tx, m, base)
			if err != nil {
				return err
			}
			if c.IsClosed {
				return errors.New("closed")
			}
			out[i] = m
		}
		return nil
	})
	return out
}

func testMarkReadForward(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)), newChannel("d", at(0)))
	e.putMembers(member("c", "u", chat.MembershipMember), member("c", "v", chat.MembershipMember),
		member("d", "u", chat.MembershipMember))
	require.EqualValues(t, 0, e.relation("c", "u").ReadToSegment, "a new relation has read nothing")

	steps := []struct{ seg, want int64 }{{3, 3}, {2, 3}, {3, 3}, {0, 3}, {7, 7}, {-1, 7}}
	for _, s := range steps {
		got := e.markRead("c", "u", s.seg)
		require.Equal(t, s.want, got.ReadToSegment, "MarkRead(%d) returns the marker", s.seg)
		require.Equal(t, "c", got.ChannelID)
		require.Equal(t, "u", got.UserID)
		require.Equal(t, chat.MembershipMember, got.Membership)
		require.Equal(t, cChannelUser(t, got), cChannelUser(t, e.relation("c", "u")), "stored as returned")
	}
	before := e.relation("c", "u")
	require.True(t, at(0).Equal(before.UpdatedAt.Time), "updatedAt is the membership's, unchanged")

	// Every read of relations carries it; other relations keep theirs.
	cus := read(e, func(tx chat.Tx) ([]*chat.ChannelUser, error) { return tx.GetChannelUsers(e.ctx, "c", nil) })
	require.Equal(t, []string{"u", "v"}, relUserIDs(cus))
	require.EqualValues(t, 7, cus[0].ReadToSegment)
	require.EqualValues(t, 0, cus[1].ReadToSegment, "another user's marker")
	cus = read(e, func(tx chat.Tx) ([]*chat.ChannelUser, error) { return tx.GetChannelUsers(e.ctx, "c", []string{"u"}) })
	require.EqualValues(t, 7, cus[0].ReadToSegment)
	cus = read(e, func(tx chat.Tx) ([]*chat.ChannelUser, error) {
		return tx.ListMemberships(e.ctx, "u", []string{"c", "d"})
	})
	require.Equal(t, []int64{7, 0}, []int64{cus[0].ReadToSegment, cus[1].ReadToSegment}, "the same user in another channel")
	cus = read(e, func(tx chat.Tx) ([]*chat.ChannelUser, error) { return tx.ListMemberships(e.ctx, "u", nil) })
	require.EqualValues(t, 7, cus[0].ReadToSegment)

	_, err := writeErr(e, func(tx chat.Tx) (*chat.ChannelUser, error) { return tx.MarkRead(e.ctx, "c", "nobody", 1) })
	requireNotFound(t, err, "no relation")
	_, err = writeErr(e, func(tx chat.Tx) (*chat.ChannelUser, error) { return tx.MarkRead(e.ctx, "missing", "u", 1) })
	requireNotFound(t, err, "no channel")
	_, err = readErr(e, func(tx chat.Tx) (*chat.ChannelUser, error) { return tx.GetChannelUser(e.ctx, "c", "nobody") })
	requireNotFound(t, err, "MarkRead created no relation")
}

func testMarkReadKept(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	e.putMembers(member("c", "u", chat.MembershipMember))
	e.markRead("c", "u", 5)

	// A read-modify-write of the relation (mute) keeps the marker even
	// when the written value carries another one.
	cu := e.relation("c", "u")
	cu.MuteTimeout, cu.UpdatedAt, cu.ReadToSegment = &chat.Forever, at(9), 1
	e.putMembers(cu)
	got := e.relation("c", "u")
	require.EqualValues(t, 5, got.ReadToSegment, "PutChannelUser does not write the marker")
	require.True(t, chat.Forever.Equal(got.MuteTimeout.Time), "the rest is written")
	require.True(t, at(9).Equal(got.UpdatedAt.Time))

	// A new relation starts at 0 whatever it carries: removed, re-added.
	require.NoError(t, e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.DeleteChannelUser(e.ctx, "c", "u") }))
	again := member("c", "u", chat.MembershipMember)
	again.ReadToSegment = 4
	e.putMembers(again)
	require.EqualValues(t, 0, e.relation("c", "u").ReadToSegment, "a re-added member has read nothing")
}

func testMarkReadRollback(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	e.putMembers(member("c", "u", chat.MembershipMember))
	e.markRead("c", "u", 2)
	boom := errors.New("boom")
	err := e.s.Update(e.ctx, func(tx chat.Tx) error {
		cu, err := tx.MarkRead(e.ctx, "c", "u", 9)
		if err != nil {
			return err
		}
		if cu.ReadToSegment != 9 {
			return fmt.Errorf("inside the transaction: marker %d, want 9", cu.ReadToSegment)
		}
		got, err := tx.GetChannelUser(e.ctx, "c", "u")
		if err != nil {
			return err
		}
		if got.ReadToSegment != 9 {
			return fmt.Errorf("read back inside the transaction: marker %d, want 9", got.ReadToSegment)
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.EqualValues(t, 2, e.relation("c", "u").ReadToSegment, "a failed Update leaves the marker")
}

// wantUnread counts what UnreadCounts must return by reading every message.
func wantUnread(e *env, channelID, userID string, marker int64) int64 {
	e.t.Helper()
	ms := read(e, func(tx chat.Tx) ([]*chat.Message, error) {
		return tx.QueryMessages(e.ctx, chat.MessageFilter{ChannelID: channelID, IncludeDeleted: true})
	})
	var n int64
	for _, m := range ms {
		if !m.IsDeleted && m.UserID != userID && m.ChannelSegment > marker {
			n++
		}
	}
	return n
}

// requireUnreadModel checks UnreadCounts of users at every marker of the
// channel against wantUnread, all relations in one call.
func requireUnreadModel(t *testing.T, e *env, channelID string, users ...string) {
	t.Helper()
	last := e.channel(channelID).MessageCount
	var cus []*chat.ChannelUser
	var want []int64
	for _, u := range users {
		for r := int64(0); r <= last; r++ {
			cus = append(cus, &chat.ChannelUser{ChannelID: channelID, UserID: u, ReadToSegment: r})
			want = append(want, wantUnread(e, channelID, u, r))
		}
	}
	require.Equal(t, want, e.unread(cus...), "unread counts of %v at markers 0..%d", users, last)
}

func testUnreadModel(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)), newChannel("other", at(0)))
	e.putMembers(member("c", "me", chat.MembershipMember), member("c", "you", chat.MembershipMember))
	ms := e.appendMsgs("c", "", "you", "me", "you", "them", "me", "you")
	// Comments take segments of the channel and count as messages.
	e.appendMsgs("c", ms[0].MessageID, "me", "them")
	e.appendMsgs("c", "", "you")
	e.appendMsgs("other", "", "you", "you", "you") // another channel's messages never count
	require.EqualValues(t, 9, e.channel("c").MessageCount)

	// Me: others' messages are segments 1, 3, 4, 6, 8, 9.
	got := e.unread(
		&chat.ChannelUser{ChannelID: "c", UserID: "me"},
		&chat.ChannelUser{ChannelID: "c", UserID: "me", ReadToSegment: 3},
		&chat.ChannelUser{ChannelID: "c", UserID: "me", ReadToSegment: 9},
		&chat.ChannelUser{ChannelID: "c", UserID: "you", ReadToSegment: 5},
		&chat.ChannelUser{ChannelID: "c", UserID: "stranger"},
		&chat.ChannelUser{ChannelID: "other", UserID: "me", ReadToSegment: 1},
	)
	require.Equal(t, []int64{6, 4, 0, 2, 9, 2}, got, "in the order asked")
	requireUnreadModel(t, e, "c", "me", "you", "them", "stranger")

	// The relation as stored serves as input.
	e.markRead("c", "me", 4)
	require.Equal(t, []int64{3}, e.unread(e.relation("c", "me")))
}

func testUnreadDeletes(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	ms := e.appendMsgs("c", "", "you", "me", "you", "them", "me", "you", "them", "you")
	requireUnreadModel(t, e, "c", "me", "you")

	// A message stored already deleted is one.
	e.update(func(tx chat.Tx) error {
		m := newMessage("born-deleted", "c", "you", 0)
		m.IsDeleted, m.Data = true, map[string]any{}
		_, err := chat.AppendMessage(e.ctx, tx, m, base)
		return err
	})
	requireUnreadModel(t, e, "c", "me", "you", "them")

	// UpdateMessage with isDeleted, SoftDeleteMessages of one author,
	// SoftDeleteUserMessages: each is seen by the counts.
	gone := *e.message(ms[2].MessageID)
	gone.IsDeleted, gone.Data = true, map[string]any{}
	e.update(func(tx chat.Tx) error { return tx.UpdateMessage(e.ctx, &gone) })
	requireUnreadModel(t, e, "c", "me", "you", "them")
	ownGone := *e.message(ms[1].MessageID)
	ownGone.IsDeleted, ownGone.Data = true, map[string]any{}
	e.update(func(tx chat.Tx) error { return tx.UpdateMessage(e.ctx, &ownGone) })
	requireUnreadModel(t, e, "c", "me", "you", "them")
	e.update(func(tx chat.Tx) error {
		_, err := tx.SoftDeleteMessages(e.ctx, "c", "them", base)
		return err
	})
	requireUnreadModel(t, e, "c", "me", "you", "them")
	require.Equal(t, []int64{3}, e.unread(&chat.ChannelUser{ChannelID: "c", UserID: "me"}), "segments 1, 6, 8")

	// A delete that rolls back is not seen.
	boom := errors.New("boom")
	err := e.s.Update(e.ctx, func(tx chat.Tx) error {
		if _, err := tx.SoftDeleteUserMessages(e.ctx, "you", base); err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.Equal(t, []int64{3}, e.unread(&chat.ChannelUser{ChannelID: "c", UserID: "me"}), "rolled back")

	// Undeleting through UpdateMessage counts the message again.
	back := *e.message(ms[2].MessageID)
	back.IsDeleted = false
	e.update(func(tx chat.Tx) error { return tx.UpdateMessage(e.ctx, &back) })
	require.Equal(t, []int64{4}, e.unread(&chat.ChannelUser{ChannelID: "c", UserID: "me"}))

	e.update(func(tx chat.Tx) error {
		_, err := tx.SoftDeleteUserMessages(e.ctx, "you", base)
		return err
	})
	requireUnreadModel(t, e, "c", "me", "you", "them")
	e.update(func(tx chat.Tx) error {
		_, err := tx.SoftDeleteMessages(e.ctx, "c", "", base)
		return err
	})
	requireUnreadModel(t, e, "c", "me", "you", "them")
	require.Equal(t, []int64{0}, e.unread(&chat.ChannelUser{ChannelID: "c", UserID: "me"}), "a closed channel's messages are all deleted")
}

func testUnreadEdges(t *testing.T, e *env) {
	e.createChannels(newChannel("empty", at(0)), newChannel("c", at(0)))
	e.appendMsgs("c", "", "you", "you")
	require.Empty(t, e.unread(), "no relations")
	got := e.unread(
		&chat.ChannelUser{ChannelID: "empty", UserID: "me"},
		&chat.ChannelUser{ChannelID: "missing", UserID: "me"},
		&chat.ChannelUser{ChannelID: "c", UserID: "me"},
		&chat.ChannelUser{ChannelID: "c", UserID: "me"},
		&chat.ChannelUser{ChannelID: "c", UserID: "me", ReadToSegment: 2},
	)
	require.Equal(t, []int64{0, 0, 2, 2, 0}, got, "empty and missing channels, the same relation twice, caught up")
	// Counts read inside a write transaction see its own messages.
	e.update(func(tx chat.Tx) error {
		m := newMessage("in-tx", "c", "you", 0)
		if _, err := chat.AppendMessage(e.ctx, tx, m, base); err != nil {
			return err
		}
		n, err := chat.UnreadCounts(e.ctx, tx, []*chat.ChannelUser{{ChannelID: "c", UserID: "me"}})
		if err != nil {
			return err
		}
		if len(n) != 1 || n[0] != 3 {
			return fmt.Errorf("unread inside the transaction: %v, want [3]", n)
		}
		return nil
	})
}

// Concurrent MarkRead calls never move a marker back, whatever order they
// commit in, and concurrent read-modify-writes of the relation (a mute)
// neither lose the marker nor lose their own change.
func testMarkReadConcurrent(t *testing.T, e *env) {
	const workers, each = 6, 15
	e.createChannels(newChannel("c", at(0)))
	e.putMembers(member("c", "u", chat.MembershipMember))
	var highest atomic.Int64
	err := group(workers+1, func(w int) error {
		if w == workers { // the muter
			for i := 1; i <= each; i++ {
				if err := e.s.Update(e.ctx, func(tx chat.Tx) error {
					cu, err := tx.GetChannelUser(e.ctx, "c", "u")
					if err != nil {
						return err
					}
					cu.MuteTimeout, cu.UpdatedAt = atp(int64(i)*1000), at(int64(i))
					return tx.PutChannelUser(e.ctx, cu)
				}); err != nil {
					return err
				}
			}
			return nil
		}
		var seen int64
		for i := range each {
			seg := int64((w*37+i*13)%100 + 1)
			for {
				old := highest.Load()
				if seg <= old || highest.CompareAndSwap(old, seg) {
					break
				}
			}
			cu, err := writeErr(e, func(tx chat.Tx) (*chat.ChannelUser, error) { return tx.MarkRead(e.ctx, "c", "u", seg) })
			if err != nil {
				return err
			}
			if cu.ReadToSegment < seg {
				return fmt.Errorf("MarkRead(%d) returned marker %d, below the segment asked", seg, cu.ReadToSegment)
			}
			if cu.ReadToSegment < seen {
				return fmt.Errorf("worker %d saw the marker move back from %d to %d", w, seen, cu.ReadToSegment)
			}
			seen = cu.ReadToSegment
		}
		return nil
	})
	require.NoError(t, err)
	got := e.relation("c", "u")
	require.Equal(t, highest.Load(), got.ReadToSegment, "the highest segment asked")
	require.True(t, atp(each*1000).Equal(got.MuteTimeout.Time), "the muter's last write is kept: %v", got.MuteTimeout)
}

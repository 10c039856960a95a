package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

var t0 = time.Date(2024, 5, 6, 7, 8, 9, 123_000_000, time.UTC)

func at(ms int64) chat.Time { return chat.NewTime(t0.Add(time.Duration(ms) * time.Millisecond)) }

func atp(ms int64) *chat.Time { v := at(ms); return &v }

func update(t *testing.T, s chat.Store, fn func(tx chat.Tx) error) {
	t.Helper()
	require.NoError(t, s.Update(context.Background(), fn))
}

func view(t *testing.T, s chat.Store, fn func(tx chat.Tx) error) {
	t.Helper()
	require.NoError(t, s.View(context.Background(), fn))
}

func channel(id string, created chat.Time, tags ...string) *chat.Channel {
	return &chat.Channel{ChannelID: id, Type: chat.ChannelTypeStandard, DisplayName: "C " + id,
		Metadata: map[string]any{"n": 1.5, "s": "x", "nested": map[string]any{"a": []any{"b", true}}},
		Tags:     tags, LastActivity: created, CreatedAt: created, UpdatedAt: created}
}

func message(id, channelID, userID string, seg int64) *chat.Message {
	return &chat.Message{MessageID: id, ChannelID: channelID, UserID: userID, Type: chat.MessageTypeText,
		Data: map[string]any{"text": "hello " + id}, Tags: []string{}, ChannelSegment: seg,
		CreatedAt: at(seg * 1000), UpdatedAt: at(seg * 1000)}
}

func ids[T any](xs []T, id func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = id(x)
	}
	return out
}

func msgIDs(ms []*chat.Message) []string {
	return ids(ms, func(m *chat.Message) string { return m.MessageID })
}
func chanIDs(cs []*chat.Channel) []string {
	return ids(cs, func(c *chat.Channel) string { return c.ChannelID })
}
func userIDs(us []*chat.User) []string { return ids(us, func(u *chat.User) string { return u.UserID }) }
func delIDs(ds []*chat.Delivery) []string {
	return ids(ds, func(d *chat.Delivery) string { return d.RequestID })
}
func reactIDs(rs []*chat.Reaction) []string {
	return ids(rs, func(r *chat.Reaction) string { return r.ReactionID })
}

func TestChannelRoundTrip(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := channel("c1", at(0), "a", "b")
	c.MuteTimeout = &chat.Forever
	update(t, s, func(tx chat.Tx) error { return tx.CreateChannel(ctx, c) })
	view(t, s, func(tx chat.Tx) error {
		got, err := tx.GetChannel(ctx, "c1")
		require.NoError(t, err)
		require.Equal(t, time.UTC, got.CreatedAt.Location())
		require.Equal(t, c, got)
		_, err = tx.GetChannel(ctx, "nope")
		require.True(t, errors.Is(err, chat.ErrNotFound), "%v", err)
		return nil
	})
	// A conflict does not abort the transaction: later statements work.
	update(t, s, func(tx chat.Tx) error {
		err := tx.CreateChannel(ctx, channel("c1", at(5)))
		require.Equal(t, chat.CodeConflict, chat.ErrorCode(err), "%v", err)
		require.NoError(t, tx.CreateChannel(ctx, channel("c2", at(5))))
		return nil
	})
	view(t, s, func(tx chat.Tx) error {
		cs, err := tx.GetChannels(ctx, []string{"c2", "x", "c1", "c2"})
		require.NoError(t, err)
		require.Equal(t, []string{"c2", "c1"}, chanIDs(cs))
		return nil
	})
	// Zero and far times round-trip.
	z := channel("zero", chat.Time{})
	update(t, s, func(tx chat.Tx) error { return tx.CreateChannel(ctx, z) })
	view(t, s, func(tx chat.Tx) error {
		got, err := tx.GetChannel(ctx, "zero")
		require.NoError(t, err)
		require.True(t, got.CreatedAt.Equal(time.Time{}), "%v", got.CreatedAt)
		return nil
	})
}

func TestQueryChannels(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	update(t, s, func(tx chat.Tx) error {
		for i := 0; i < 10; i++ {
			tags := []string{"even"}
			if i%2 == 1 {
				tags = []string{"odd"}
			}
			c := channel(fmt.Sprintf("c%d", i), at(int64(i/2)*1000), tags...)
			c.IsClosed = i == 9
			require.NoError(t, tx.CreateChannel(ctx, c))
		}
		require.NoError(t, tx.PutChannelUser(ctx, &chat.ChannelUser{ChannelID: "c3", UserID: "u", Membership: chat.MembershipMember, CreatedAt: at(0), UpdatedAt: at(0)}))
		require.NoError(t, tx.PutChannelUser(ctx, &chat.ChannelUser{ChannelID: "c4", UserID: "u", Membership: chat.MembershipBanned, CreatedAt: at(0), UpdatedAt: at(0)}))
		return nil
	})
	view(t, s, func(tx chat.Tx) error {
		cs, err := tx.QueryChannels(ctx, chat.ChannelFilter{})
		require.NoError(t, err)
		require.Equal(t, []string{"c8", "c7", "c6", "c5", "c4", "c3", "c2", "c1", "c0"}, chanIDs(cs))
		cs, err = tx.QueryChannels(ctx, chat.ChannelFilter{IncludeClosed: true, Limit: 3})
		require.NoError(t, err)
		require.Equal(t, []string{"c9", "c8", "c7"}, chanIDs(cs))
		cur := &chat.ChannelCursor{CreatedAt: cs[2].CreatedAt.Time, ChannelID: cs[2].ChannelID}
		cs, err = tx.QueryChannels(ctx, chat.ChannelFilter{After: cur, Limit: 2})
		require.NoError(t, err)
		require.Equal(t, []string{"c6", "c5"}, chanIDs(cs))
		cs, err = tx.QueryChannels(ctx, chat.ChannelFilter{Before: &chat.ChannelCursor{CreatedAt: at(2000).Time, ChannelID: "c4"}, Limit: 2})
		require.NoError(t, err)
		require.Equal(t, []string{"c5", "c6"}, chanIDs(cs))
		cs, err = tx.QueryChannels(ctx, chat.ChannelFilter{Tags: []string{"odd", "zz"}, Offset: 1})
		require.NoError(t, err)
		require.Equal(t, []string{"c5", "c3", "c1"}, chanIDs(cs))
		cs, err = tx.QueryChannels(ctx, chat.ChannelFilter{ExcludeTags: []string{"odd"}})
		require.NoError(t, err)
		require.Equal(t, []string{"c8", "c6", "c4", "c2", "c0"}, chanIDs(cs))
		cs, err = tx.QueryChannels(ctx, chat.ChannelFilter{MemberOf: "u"})
		require.NoError(t, err)
		require.Equal(t, []string{"c3"}, chanIDs(cs))
		cs, err = tx.QueryChannels(ctx, chat.ChannelFilter{NotMemberOf: "u", Tags: []string{"odd"}})
		require.NoError(t, err)
		require.Equal(t, []string{"c7", "c5", "c1"}, chanIDs(cs))
		return nil
	})
}

func TestMembersAndSegments(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	update(t, s, func(tx chat.Tx) error { return tx.CreateChannel(ctx, channel("c", at(0))) })
	put := func(user string, membership chat.Membership) {
		update(t, s, func(tx chat.Tx) error {
			return tx.PutChannelUser(ctx, &chat.ChannelUser{ChannelID: "c", UserID: user, Membership: membership, MuteTimeout: atp(5), CreatedAt: at(0), UpdatedAt: at(1)})
		})
	}
	count := func() int {
		var n int
		view(t, s, func(tx chat.Tx) error {
			c, err := tx.GetChannel(ctx, "c")
			n = c.MemberCount
			return err
		})
		return n
	}
	put("a", chat.MembershipMember)
	put("b", chat.MembershipMember)
	put("b", chat.MembershipMember)
	put("x", chat.MembershipBanned)
	put("a", chat.MembershipBanned)
	update(t, s, func(tx chat.Tx) error { return tx.DeleteChannelUser(ctx, "c", "b") })
	update(t, s, func(tx chat.Tx) error { return tx.DeleteChannelUser(ctx, "c", "nobody") })
	put("b", chat.MembershipMember)
	view(t, s, func(tx chat.Tx) error {
		cus, err := tx.GetChannelUsers(ctx, "c", nil)
		require.NoError(t, err)
		require.Equal(t, []string{"a", "b", "x"}, ids(cus, func(cu *chat.ChannelUser) string { return cu.UserID }))
		require.Equal(t, atp(5), cus[0].MuteTimeout)
		cus, err = tx.GetChannelUsers(ctx, "c", []string{})
		require.NoError(t, err)
		require.Empty(t, cus)
		ms, err := tx.ListMemberships(ctx, "b", nil)
		require.NoError(t, err)
		require.Len(t, ms, 1)
		return nil
	})
	update(t, s, func(tx chat.Tx) error { return tx.DeleteChannelUsers(ctx, "c") })
	require.Equal(t, 0, count(), "relation writes leave memberCount alone")

	// Concurrent joins, each writing the count it read from the channel's
	// row held by LockChannel (as the Service does), keep memberCount exact.
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		go func() {
			errs <- s.Update(ctx, func(tx chat.Tx) error {
				c, err := tx.LockChannel(ctx, "c")
				if err != nil {
					return err
				}
				if err := tx.PutChannelUser(ctx, &chat.ChannelUser{ChannelID: "c", UserID: fmt.Sprintf("u%02d", i), Membership: chat.MembershipMember, CreatedAt: at(0), UpdatedAt: at(0)}); err != nil {
					return err
				}
				return tx.SetMemberCount(ctx, "c", c.MemberCount+1)
			})
		}()
	}
	for i := 0; i < 20; i++ {
		require.NoError(t, <-errs)
	}
	require.Equal(t, 20, count())

	update(t, s, func(tx chat.Tx) error {
		c, err := tx.NextSegment(ctx, "c", t0.Add(time.Hour))
		require.NoError(t, err)
		require.EqualValues(t, 1, c.MessageCount)
		require.Equal(t, chat.NewTime(t0.Add(time.Hour)), c.LastActivity)
		_, err = tx.NextSegment(ctx, "missing", t0)
		require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err))
		return nil
	})
}

func TestMessages(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	update(t, s, func(tx chat.Tx) error {
		for i := int64(1); i <= 10; i++ {
			m := message(fmt.Sprintf("m%02d", i), "c", "u", i)
			if i > 5 {
				m.ParentID = "m01"
				m.Tags = []string{"comment"}
			}
			require.NoError(t, tx.CreateMessage(ctx, m))
		}
		err := tx.CreateMessage(ctx, message("dup", "c", "u", 3))
		require.Equal(t, chat.CodeConflict, chat.ErrorCode(err))
		err = tx.CreateMessage(ctx, message("m01", "c", "u", 99))
		require.Equal(t, chat.CodeConflict, chat.ErrorCode(err))
		return nil
	})
	view(t, s, func(tx chat.Tx) error {
		m, err := tx.GetMessage(ctx, "m01")
		require.NoError(t, err)
		require.Zero(t, m.ChildrenNumber, "CreateMessage leaves the parent as it is")
		require.Equal(t, map[string]any{"text": "hello m01"}, m.Data)
		ms, err := tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: "c", Limit: 3})
		require.NoError(t, err)
		require.Equal(t, []string{"m01", "m02", "m03"}, msgIDs(ms))
		ms, err = tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: "c", Descending: true, Limit: 3, BeforeSegment: 9})
		require.NoError(t, err)
		require.Equal(t, []string{"m08", "m07", "m06"}, msgIDs(ms))
		ms, err = tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: "c", TopLevel: true, AfterSegment: 2})
		require.NoError(t, err)
		require.Equal(t, []string{"m03", "m04", "m05"}, msgIDs(ms))
		ms, err = tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: "c", ParentID: "m01", Descending: true, Limit: 2})
		require.NoError(t, err)
		require.Equal(t, []string{"m10", "m09"}, msgIDs(ms))
		ms, err = tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: "c", ExcludeTags: []string{"comment"}})
		require.NoError(t, err)
		require.Len(t, ms, 5)
		return nil
	})
	var deleted []string
	update(t, s, func(tx chat.Tx) error {
		m := message("m02", "c", "u", 2)
		m.EditedAt = atp(77)
		m.FlagCount = 2
		m.Hashflag = chat.Hashflag{Bits: 64, Hashes: 3, Hash: []uint32{1, 2}}
		require.NoError(t, tx.UpdateMessage(ctx, m))
		var err error
		deleted, err = tx.SoftDeleteMessages(ctx, "c", "u", t0)
		return err
	})
	require.Len(t, deleted, 10)
	view(t, s, func(tx chat.Tx) error {
		m, err := tx.GetMessage(ctx, "m02")
		require.NoError(t, err)
		require.True(t, m.IsDeleted)
		require.Empty(t, m.Data)
		require.Equal(t, chat.Hashflag{Bits: 64, Hashes: 3, Hash: []uint32{1, 2}}, m.Hashflag)
		require.Equal(t, atp(77), m.EditedAt)
		ms, err := tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: "c"})
		require.NoError(t, err)
		require.Empty(t, ms)
		ms, err = tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: "c", IncludeDeleted: true})
		require.NoError(t, err)
		require.Len(t, ms, 10)
		return nil
	})
}

func TestUsersSearch(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	update(t, s, func(tx chat.Tx) error {
		for _, u := range [][2]string{{"u1", "Émile"}, {"u2", "emma"}, {"u3", "Zoë"}, {"EMx", "nobody"}, {"u5", "Ünal"}} {
			require.NoError(t, tx.CreateUser(ctx, &chat.User{UserID: u[0], DisplayName: u[1], CreatedAt: at(0), UpdatedAt: at(0)}))
		}
		us, err := tx.EnsureUsers(ctx, []string{"u2", "new", "u2"}, t0)
		require.NoError(t, err)
		require.Equal(t, []string{"u2", "new", "u2"}, userIDs(us))
		require.Equal(t, "new", us[1].DisplayName)
		return nil
	})
	view(t, s, func(tx chat.Tx) error {
		us, err := tx.QueryUsers(ctx, chat.UserFilter{Search: chat.SearchKey("ém")})
		require.NoError(t, err)
		require.Equal(t, []string{"u1"}, userIDs(us))
		us, err = tx.QueryUsers(ctx, chat.UserFilter{Search: chat.SearchKey("EM")})
		require.NoError(t, err)
		require.Equal(t, []string{"EMx", "u2"}, userIDs(us))
		us, err = tx.QueryUsers(ctx, chat.UserFilter{Search: chat.SearchKey("zoË")})
		require.NoError(t, err)
		require.Equal(t, []string{"u3"}, userIDs(us))
		us, err = tx.QueryUsers(ctx, chat.UserFilter{Search: chat.SearchKey("ü")})
		require.NoError(t, err)
		require.Equal(t, []string{"u5"}, userIDs(us))
		us, err = tx.QueryUsers(ctx, chat.UserFilter{After: &chat.UserCursor{UserID: "u1"}, Limit: 2})
		require.NoError(t, err)
		require.Equal(t, []string{"u2", "u3"}, userIDs(us))
		us, err = tx.QueryUsers(ctx, chat.UserFilter{Before: &chat.UserCursor{UserID: "u2"}})
		require.NoError(t, err)
		require.Equal(t, []string{"u1", "new", "EMx"}, userIDs(us))
		return nil
	})
}

func TestReactions(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	update(t, s, func(tx chat.Tx) error {
		for i := int64(1); i <= 3; i++ {
			require.NoError(t, tx.CreateMessage(ctx, message(fmt.Sprintf("m%d", i), "c", "u", i)))
		}
		add := func(id, msg, user, name string, ms int64) bool {
			r, ok, err := react(ctx, tx, &chat.Reaction{ReactionID: id, ReferenceID: msg, ReferenceType: "message", ReactionName: name, UserID: user, CreatedAt: at(ms)})
			require.NoError(t, err)
			require.NotNil(t, r)
			return ok
		}
		require.True(t, add("r1", "m1", "a", "like", 1))
		require.True(t, add("r2", "m1", "b", "like", 2))
		require.True(t, add("r3", "m2", "a", "like", 3))
		require.True(t, add("r4", "m1", "a", "love", 4))
		require.True(t, add("r5", "m3", "a", "like", 5))
		require.True(t, add("r6", "m3", "b", "like", 6))
		require.False(t, add("r7", "m1", "a", "like", 7))
		_, _, err := react(ctx, tx, &chat.Reaction{ReactionID: "r8", ReferenceID: "missing", ReactionName: "x", UserID: "a"})
		require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err))
		return nil
	})
	view(t, s, func(tx chat.Tx) error {
		m, err := tx.GetMessage(ctx, "m1")
		require.NoError(t, err)
		require.Equal(t, map[string]int{"like": 2, "love": 1}, m.Reactions)
		require.Equal(t, 3, m.ReactionsCount)
		top, err := tx.MostReacted(ctx, "like", "", 10)
		require.NoError(t, err)
		require.Equal(t, []string{"m3", "m1", "m2"}, msgIDs(top))
		rs, err := tx.QueryReactions(ctx, chat.ReactionFilter{MessageID: "m1"})
		require.NoError(t, err)
		require.Equal(t, []string{"r4", "r2", "r1"}, reactIDs(rs))
		rs, err = tx.QueryReactions(ctx, chat.ReactionFilter{MessageID: "m1", ReactionName: "like", Limit: 1})
		require.NoError(t, err)
		require.Equal(t, []string{"r2"}, reactIDs(rs))
		return nil
	})
	update(t, s, func(tx chat.Tx) error {
		r, err := unreact(ctx, tx, "a", "m1", "love")
		require.NoError(t, err)
		require.Equal(t, "r4", r.ReactionID)
		_, err = unreact(ctx, tx, "a", "m1", "love")
		require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err))
		_, err = unreact(ctx, tx, "a", "m3", "like")
		require.NoError(t, err)
		_, err = unreact(ctx, tx, "b", "m3", "like")
		return err
	})
	view(t, s, func(tx chat.Tx) error {
		m, err := tx.GetMessage(ctx, "m1")
		require.NoError(t, err)
		require.Equal(t, map[string]int{"like": 2}, m.Reactions)
		top, err := tx.MostReacted(ctx, "like", "c", 0)
		require.NoError(t, err)
		require.Equal(t, []string{"m1", "m2"}, msgIDs(top))
		return nil
	})
}

func TestRulesWebhooksAdminsMetaBlobs(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	var v0, h0 int64
	view(t, s, func(tx chat.Tx) error {
		var err error
		v0, err = tx.RulesVersion(ctx)
		require.NoError(t, err)
		h0, err = tx.WebhooksVersion(ctx)
		return err
	})
	update(t, s, func(tx chat.Tx) error {
		require.NoError(t, tx.PutRule(ctx, &chat.Rule{List: chat.Blacklist, RuleID: "bad", CreatedAt: at(0), UpdatedAt: at(0)}))
		require.NoError(t, tx.PutRule(ctx, &chat.Rule{List: chat.Blacklist, RuleID: "bad", IsMatchExactWord: true, CreatedAt: at(9), UpdatedAt: at(9)}))
		require.NoError(t, tx.PutRule(ctx, &chat.Rule{List: chat.Blacklist, RuleID: "worse", CreatedAt: at(0), UpdatedAt: at(0)}))
		err := tx.RenameRule(ctx, chat.Blacklist, "bad", &chat.Rule{RuleID: "worse"})
		require.Equal(t, chat.CodeConflict, chat.ErrorCode(err))
		err = tx.RenameRule(ctx, chat.Blacklist, "nope", &chat.Rule{RuleID: "x"})
		require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err))
		require.NoError(t, tx.RenameRule(ctx, chat.Blacklist, "bad", &chat.Rule{RuleID: "awful", IsMatchExactWord: true, UpdatedAt: at(20)}))
		rs, err := tx.ListRules(ctx, chat.Blacklist, nil)
		require.NoError(t, err)
		require.Len(t, rs, 2)
		require.Equal(t, "awful", rs[0].RuleID)
		require.True(t, rs[0].IsMatchExactWord)
		require.Equal(t, at(0), rs[0].CreatedAt)
		require.Equal(t, at(20), rs[0].UpdatedAt)
		n, err := tx.DeleteRules(ctx, chat.Blacklist, []string{"awful", "nope"})
		require.NoError(t, err)
		require.Equal(t, 1, n)

		require.NoError(t, tx.CreateWebhook(ctx, &chat.Webhook{WebhookID: "w", URL: "https://x", Events: []string{"a"}, Secret: "s", CreatedAt: at(0), UpdatedAt: at(0)}))
		err = tx.CreateWebhook(ctx, &chat.Webhook{WebhookID: "w", URL: "https://y", CreatedAt: at(0), UpdatedAt: at(0)})
		require.Equal(t, chat.CodeConflict, chat.ErrorCode(err))

		require.NoError(t, tx.CreateAdmin(ctx, &chat.Admin{Name: "root", UserID: "u", TokenHash: []byte{1, 2, 3}, CreatedAt: at(0)}))
		err = tx.CreateAdmin(ctx, &chat.Admin{Name: "other", UserID: "u", TokenHash: []byte{1, 2, 3}, CreatedAt: at(0)})
		require.Equal(t, chat.CodeConflict, chat.ErrorCode(err))
		require.NoError(t, tx.RevokeAdmin(ctx, "root", at(5).Time))
		require.NoError(t, tx.RevokeAdmin(ctx, "root", at(9).Time))
		a, err := tx.GetAdminByTokenHash(ctx, []byte{1, 2, 3})
		require.NoError(t, err)
		require.Equal(t, atp(5), a.RevokedAt)

		v, err := tx.PutMetaIfAbsent(ctx, "k", "one")
		require.NoError(t, err)
		require.Equal(t, "one", v)
		v, err = tx.PutMetaIfAbsent(ctx, "k", "two")
		require.NoError(t, err)
		require.Equal(t, "one", v)

		require.NoError(t, tx.PutBlob(ctx, &chat.Blob{MessageID: "m", ChannelID: "c", Name: "file", ContentType: "text/plain", Data: []byte{0, 1, 2, 255}, CreatedAt: at(0)}))
		require.NoError(t, tx.PutBlob(ctx, &chat.Blob{MessageID: "m", ChannelID: "c", Name: "empty", ContentType: "text/plain", CreatedAt: at(0)}))
		b, err := tx.GetBlob(ctx, "m", "file")
		require.NoError(t, err)
		require.Equal(t, []byte{0, 1, 2, 255}, b.Data)
		b, err = tx.GetBlob(ctx, "m", "empty")
		require.NoError(t, err)
		require.Equal(t, []byte{}, b.Data)
		require.NoError(t, tx.DeleteChannelBlobs(ctx, "c"))
		_, err = tx.GetBlob(ctx, "m", "file")
		require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err))
		return nil
	})
	view(t, s, func(tx chat.Tx) error {
		v, err := tx.RulesVersion(ctx)
		require.NoError(t, err)
		require.Greater(t, v, v0)
		h, err := tx.WebhooksVersion(ctx)
		require.NoError(t, err)
		require.Greater(t, h, h0)
		w, err := tx.GetWebhook(ctx, "w")
		require.NoError(t, err)
		require.Equal(t, []string{"a"}, w.Events)
		return nil
	})
}

func delivery(id, hook string, next chat.Time) *chat.Delivery {
	return &chat.Delivery{RequestID: id, WebhookID: hook, Event: chat.EventMessageDidCreate,
		Body: []byte(`{"requestId":"` + id + `"}`), State: chat.DeliveryPending,
		NextAttemptAt: next, CreatedAt: next, UpdatedAt: next}
}

func TestOutbox(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	update(t, s, func(tx chat.Tx) error {
		require.NoError(t, tx.EnqueueDeliveries(ctx, []*chat.Delivery{delivery("d1", "w", at(0)), delivery("d2", "w", at(10)), delivery("d3", "w", at(5))}))
		err := tx.EnqueueDeliveries(ctx, []*chat.Delivery{delivery("d1", "w", at(0))})
		require.Equal(t, chat.CodeConflict, chat.ErrorCode(err))
		return nil
	})
	var claimed []*chat.Delivery
	update(t, s, func(tx chat.Tx) error {
		next, ok, err := tx.NextDeliveryAt(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, at(0).Time, next)
		claimed, err = tx.ClaimDeliveries(ctx, "A", at(5).Time, time.Minute, 10, chat.DeliveryQuota{})
		return err
	})
	require.Equal(t, []string{"d1", "d3"}, delIDs(claimed))
	require.Equal(t, "A", claimed[0].LeaseOwner)
	require.Equal(t, atp(5+60000), claimed[0].LeaseUntil)
	require.Equal(t, []byte(`{"requestId":"d1"}`), claimed[0].Body)
	update(t, s, func(tx chat.Tx) error {
		again, err := tx.ClaimDeliveries(ctx, "B", at(20).Time, time.Minute, 10, chat.DeliveryQuota{})
		require.NoError(t, err)
		require.Equal(t, []string{"d2"}, delIDs(again))
		err = tx.FinishDelivery(ctx, "B", &chat.DeliveryAttempt{RequestID: "d1", StatusCode: 500, At: at(30)}, chat.DeliveryPending, at(100).Time)
		require.Equal(t, chat.CodeConflict, chat.ErrorCode(err))
		err = tx.FinishDelivery(ctx, "A", &chat.DeliveryAttempt{RequestID: "nope"}, chat.DeliveryDelivered, time.Time{})
		require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err))
		require.NoError(t, tx.FinishDelivery(ctx, "A", &chat.DeliveryAttempt{RequestID: "d1", StatusCode: 500, Error: "boom", LatencyMs: 7, At: at(30)}, chat.DeliveryPending, at(100).Time))
		require.NoError(t, tx.FinishDelivery(ctx, "A", &chat.DeliveryAttempt{RequestID: "d3", StatusCode: 200, At: at(31)}, chat.DeliveryDelivered, time.Time{}))
		return nil
	})
	view(t, s, func(tx chat.Tx) error {
		d, err := tx.GetDelivery(ctx, "d1")
		require.NoError(t, err)
		require.Equal(t, chat.DeliveryPending, d.State)
		require.Equal(t, 1, d.Attempts)
		require.Equal(t, "boom", d.LastError)
		require.Equal(t, 500, d.LastStatus)
		require.Equal(t, at(100), d.NextAttemptAt)
		require.Equal(t, at(30), d.UpdatedAt)
		require.Nil(t, d.LeaseUntil)
		as, err := tx.ListAttempts(ctx, "d1")
		require.NoError(t, err)
		require.Len(t, as, 1)
		require.Equal(t, chat.DeliveryAttempt{RequestID: "d1", WebhookID: "w", Event: chat.EventMessageDidCreate, Attempt: 1, StatusCode: 500, LatencyMs: 7, Error: "boom", At: at(30)}, *as[0])
		ds, err := tx.ListDeliveries(ctx, "w", "", 0)
		require.NoError(t, err)
		require.Equal(t, []string{"d2", "d3", "d1"}, delIDs(ds))
		ds, err = tx.ListDeliveries(ctx, "w", "d3", 10)
		require.NoError(t, err)
		require.Equal(t, []string{"d1"}, delIDs(ds))
		return nil
	})
	update(t, s, func(tx chat.Tx) error {
		require.NoError(t, tx.RescheduleDelivery(ctx, "d3", at(1).Time))
		err := tx.RescheduleDelivery(ctx, "nope", at(1).Time)
		require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err))
		return nil
	})
	view(t, s, func(tx chat.Tx) error {
		next, ok, err := tx.NextDeliveryAt(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, at(1).Time, next)
		return nil
	})
}

func TestTxSemantics(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	boom := errors.New("boom")
	err := s.Update(ctx, func(tx chat.Tx) error {
		require.NoError(t, tx.CreateChannel(ctx, channel("c", at(0))))
		return boom
	})
	require.ErrorIs(t, err, boom)
	view(t, s, func(tx chat.Tx) error {
		_, err := tx.GetChannel(ctx, "c")
		require.ErrorIs(t, err, chat.ErrNotFound)
		// A write in a View fails.
		err = tx.CreateChannel(ctx, channel("v", at(0)))
		require.Error(t, err)
		return nil
	})
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err = s.Update(cctx, func(tx chat.Tx) error { t.Fatal("fn ran"); return nil })
	require.ErrorIs(t, err, context.Canceled)
	err = s.View(cctx, func(tx chat.Tx) error { t.Fatal("fn ran"); return nil })
	require.ErrorIs(t, err, context.Canceled)
}

// TestWatchOutboxAcrossStores checks LISTEN/NOTIFY: a commit made through
// one Store (standing for another process) signals the watchers of another
// Store on the same schema, a rolled-back enqueue does not, and Close
// closes the watcher channels.
func TestWatchOutboxAcrossStores(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	a := openStore(t, schema)
	b := openStore(t, schema)
	ctx := ctxT(t)
	ch, err := a.WatchOutbox(ctx)
	require.NoError(t, err)
	wctx, wcancel := context.WithCancel(ctx)
	ch2, err := a.WatchOutbox(wctx)
	require.NoError(t, err)

	drain := func() {
		for {
			select {
			case <-ch:
			case <-time.After(200 * time.Millisecond):
				return
			}
		}
	}
	expect := func(want bool, what string) {
		t.Helper()
		wait := time.Second // long enough for a NOTIFY that should not come
		if want {
			wait = 15 * time.Second
		}
		select {
		case _, ok := <-ch:
			require.True(t, ok)
			require.True(t, want, "unexpected signal after %s", what)
		case <-time.After(wait):
			require.False(t, want, "no signal after %s", what)
		}
	}

	err = b.Update(ctx, func(tx chat.Tx) error {
		require.NoError(t, tx.EnqueueDeliveries(ctx, []*chat.Delivery{delivery("d1", "w", at(0))}))
		return errors.New("roll back")
	})
	require.Error(t, err)
	expect(false, "a rolled-back enqueue")

	update(t, b, func(tx chat.Tx) error {
		return tx.EnqueueDeliveries(ctx, []*chat.Delivery{delivery("d1", "w", at(0))})
	})
	expect(true, "an enqueue in another store")
	drain()
	update(t, b, func(tx chat.Tx) error { return tx.RescheduleDelivery(ctx, "d1", at(5).Time) })
	expect(true, "a reschedule in another store")

	wcancel()
	require.Eventually(t, func() bool {
		select {
		case _, ok := <-ch2:
			return !ok
		default:
			return false
		}
	}, 2*time.Second, 10*time.Millisecond, "watcher channel closed when its ctx ends")

	require.NoError(t, a.Close())
	_, ok := <-ch
	for ok {
		_, ok = <-ch
	}
	require.NoError(t, a.Close(), "Close is idempotent")
	_, err = a.WatchOutbox(ctx)
	require.Error(t, err)
}

// react and unreact change reactions as the Service does (see
// chat.AddMessageReaction).
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

package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/postgres"
)

// prefetchFixture stores channel c with member u and returns the store.
func prefetchFixture(t *testing.T) *postgres.Store {
	s := newStore(t)
	ctx := context.Background()
	update(t, s, func(tx chat.Tx) error {
		if _, err := tx.EnsureUsers(ctx, []string{"u"}, t0); err != nil {
			return err
		}
		if err := tx.CreateChannel(ctx, channel("c", at(0))); err != nil {
			return err
		}
		return tx.PutChannelUser(ctx, &chat.ChannelUser{ChannelID: "c", UserID: "u", Membership: chat.MembershipMember,
			CreatedAt: at(0), UpdatedAt: at(0)})
	})
	return s
}

// postReads reads what a post reads, in the order the Service does.
func postReads(ctx context.Context, tx chat.Tx, channelID, userID string) (u *chat.User, cu *chat.ChannelUser, c *chat.Channel, rv, wv int64, errs [3]error) {
	u, errs[0] = tx.GetUser(ctx, userID)
	cu, errs[1] = tx.GetChannelUser(ctx, channelID, userID)
	c, errs[2] = tx.GetChannel(ctx, channelID)
	rv, _ = tx.RulesVersion(ctx)
	wv, _ = tx.WebhooksVersion(ctx)
	return
}

// TestPrefetchPost checks that the reads PrefetchPost answers give what
// the reads themselves give, present or missing, in one statement.
func TestPrefetchPost(t *testing.T) {
	s := prefetchFixture(t)
	ctx := context.Background()
	for _, k := range []struct{ channelID, userID string }{{"c", "u"}, {"c", "nobody"}, {"nowhere", "u"}} {
		var want, got [6]any
		update(t, s, func(tx chat.Tx) error {
			u, cu, c, rv, wv, errs := postReads(ctx, tx, k.channelID, k.userID)
			want = [6]any{u, cu, c, rv, wv, [3]chat.Code{chat.ErrorCode(errs[0]), chat.ErrorCode(errs[1]), chat.ErrorCode(errs[2])}}
			return nil
		})
		update(t, s, func(tx chat.Tx) error {
			n0 := s.StatementCount()
			require.NoError(t, tx.(chat.PostPrefetcher).PrefetchPost(ctx, k.channelID, k.userID))
			u, cu, c, rv, wv, errs := postReads(ctx, tx, k.channelID, k.userID)
			got = [6]any{u, cu, c, rv, wv, [3]chat.Code{chat.ErrorCode(errs[0]), chat.ErrorCode(errs[1]), chat.ErrorCode(errs[2])}}
			if k.userID == "u" && k.channelID == "c" {
				require.Equal(t, int64(1), s.StatementCount()-n0, "one statement")
			}
			return nil
		})
		require.Equal(t, want, got, "%v", k)
	}

	// A write between the prefetch and a read makes the read run.
	update(t, s, func(tx chat.Tx) error {
		require.NoError(t, tx.(chat.PostPrefetcher).PrefetchPost(ctx, "c", "u"))
		c, err := tx.NextSegment(ctx, "c", t0.Add(time.Hour))
		require.NoError(t, err)
		again, err := tx.GetChannel(ctx, "c")
		require.NoError(t, err)
		require.Equal(t, c.MessageCount, again.MessageCount)
		return nil
	})
	// A read of another table leaves the prefetch valid.
	update(t, s, func(tx chat.Tx) error {
		require.NoError(t, tx.(chat.PostPrefetcher).PrefetchPost(ctx, "c", "u"))
		_, err := tx.GetMessage(ctx, "none")
		require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err))
		n0 := s.StatementCount()
		_, err = tx.GetChannel(ctx, "c")
		require.NoError(t, err)
		require.Equal(t, n0, s.StatementCount(), "served from the prefetch")
		return nil
	})
	// A rule write between the prefetch and RulesVersion makes it run.
	update(t, s, func(tx chat.Tx) error {
		require.NoError(t, tx.(chat.PostPrefetcher).PrefetchPost(ctx, "c", "u"))
		v0, err := tx.RulesVersion(ctx)
		require.NoError(t, err)
		require.NoError(t, tx.PutRule(ctx, &chat.Rule{List: chat.Blacklist, RuleID: "bad", CreatedAt: at(0), UpdatedAt: at(0)}))
		v1, err := tx.RulesVersion(ctx)
		require.NoError(t, err)
		require.NotEqual(t, v0, v1)
		return nil
	})
}

// TestDeferredAppend checks an AppendMessage after PrefetchPost, whose
// writes run with the next statement: with AppendEvents, before another
// statement, or before the commit; a duplicate id is reported there and the
// transaction does not commit.
func TestDeferredAppend(t *testing.T) {
	s := prefetchFixture(t)
	ctx := context.Background()
	now := t0.Add(time.Hour)
	post := func(tx chat.Tx, id string) (*chat.Channel, error) {
		require.NoError(t, tx.(chat.PostPrefetcher).PrefetchPost(ctx, "c", "u"))
		m := message(id, "c", "u", 0)
		return chat.AppendMessage(ctx, tx, m, now)
	}
	event := []*chat.Event{{Name: "message.didCreate", ChannelID: "c", UserIDs: []string{}, Data: []byte(`{}`), CreatedAt: chat.NewTime(now)}}

	// With AppendEvents, in one statement.
	n0 := s.StatementCount()
	update(t, s, func(tx chat.Tx) error {
		c, err := post(tx, "m1")
		require.NoError(t, err)
		require.Equal(t, int64(1), c.MessageCount)
		require.Equal(t, chat.NewTime(now), c.LastActivity)
		require.Equal(t, chat.NewTime(now), c.UpdatedAt)
		return tx.AppendEvents(ctx, event)
	})
	require.Equal(t, int64(2), s.StatementCount()-n0)
	// A read of the channel after the deferred append sees the increment.
	undone := errors.New("undone")
	require.ErrorIs(t, s.Update(ctx, func(tx chat.Tx) error {
		c, err := post(tx, "m0")
		require.NoError(t, err)
		again, err := tx.GetChannel(ctx, "c")
		require.NoError(t, err)
		require.Equal(t, c.MessageCount, again.MessageCount)
		return undone
	}), undone)
	// Before another statement, which sees the message.
	update(t, s, func(tx chat.Tx) error {
		_, err := post(tx, "m2")
		require.NoError(t, err)
		m, err := tx.GetMessage(ctx, "m2")
		require.NoError(t, err)
		require.Equal(t, int64(2), m.ChannelSegment)
		return nil
	})
	// Before the commit.
	update(t, s, func(tx chat.Tx) error {
		_, err := post(tx, "m3")
		return err
	})
	view(t, s, func(tx chat.Tx) error {
		c, err := tx.GetChannel(ctx, "c")
		require.NoError(t, err)
		require.Equal(t, int64(3), c.MessageCount)
		require.Equal(t, chat.NewTime(now), c.LastActivity)
		ms, err := tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: "c"})
		require.NoError(t, err)
		require.Equal(t, []string{"m1", "m2", "m3"}, msgIDs(ms))
		return nil
	})

	// A duplicate id, found by AppendEvents, by the next statement, or at
	// the commit even when fn ignores the error: nothing is stored.
	for _, next := range []func(tx chat.Tx) error{
		func(tx chat.Tx) error { return tx.AppendEvents(ctx, event) },
		func(tx chat.Tx) error { _, err := tx.GetMessage(ctx, "m1"); return err },
		func(tx chat.Tx) error { return nil },
		func(tx chat.Tx) error { _ = tx.AppendEvents(ctx, event); return nil },
	} {
		err := s.Update(ctx, func(tx chat.Tx) error {
			_, err := post(tx, "m1")
			require.NoError(t, err)
			return next(tx)
		})
		require.Equal(t, chat.CodeConflict, chat.ErrorCode(err), "%v", err)
	}
	view(t, s, func(tx chat.Tx) error {
		c, err := tx.GetChannel(ctx, "c")
		require.NoError(t, err)
		require.Equal(t, int64(3), c.MessageCount, "no increment stored")
		return nil
	})
	q := pq.QuoteIdentifier(s.Schema())
	var events int
	require.NoError(t, s.DB().QueryRow(`SELECT (SELECT count(*) FROM `+q+`.events) + (SELECT count(*) FROM `+q+`.events_pending)`).Scan(&events))
	require.Equal(t, 1, events, "only the first post's event")
}

// TestDeferredComment checks that SetChildrenNumber after a held-back
// AppendMessage of a comment joins its statement: a comment with its event
// is still the prefetch and one statement.
func TestDeferredComment(t *testing.T) {
	s := prefetchFixture(t)
	ctx := context.Background()
	now := t0.Add(time.Hour)
	event := []*chat.Event{{Name: "message.didCreate", ChannelID: "c", UserIDs: []string{}, Data: []byte(`{}`), CreatedAt: chat.NewTime(now)}}
	for i, id := range []string{"p", "r1", "r2"} {
		n0 := s.StatementCount()
		update(t, s, func(tx chat.Tx) error {
			require.NoError(t, tx.(chat.PostPrefetcher).PrefetchPost(ctx, "c", "u"))
			m := message(id, "c", "u", 0)
			if i > 0 {
				m.ParentID = "p"
			}
			if _, err := chat.AppendMessage(ctx, tx, m, now); err != nil {
				return err
			}
			if i > 0 {
				require.NoError(t, tx.SetChildrenNumber(ctx, "p", 10+i))
			}
			return tx.AppendEvents(ctx, event)
		})
		require.Equal(t, int64(2), s.StatementCount()-n0, "post %s", id)
	}
	view(t, s, func(tx chat.Tx) error {
		p, err := tx.GetMessage(ctx, "p")
		require.NoError(t, err)
		require.Equal(t, 12, p.ChildrenNumber)
		r, err := tx.GetMessage(ctx, "r2")
		require.NoError(t, err)
		require.Equal(t, "p", r.ParentID)
		require.Zero(t, r.ChildrenNumber)
		return nil
	})
}

// TestPrefetchPostRoles checks that GetRoles of the author's roles, after
// PrefetchPost, gives what the read itself gives without a statement, and
// that a role written in the transaction is read again.
func TestPrefetchPostRoles(t *testing.T) {
	s := prefetchFixture(t)
	ctx := context.Background()
	update(t, s, func(tx chat.Tx) error {
		for _, r := range []*chat.Role{
			{RoleID: "mod", Permissions: []string{"a", "b"}, CreatedAt: at(1), UpdatedAt: at(2)},
			{RoleID: "empty", Permissions: []string{}, CreatedAt: at(3), UpdatedAt: at(3)},
		} {
			if err := tx.PutRole(ctx, r); err != nil {
				return err
			}
		}
		u, err := tx.GetUser(ctx, "u")
		if err != nil {
			return err
		}
		u.Roles = []string{"mod", "gone", "empty"}
		return tx.UpdateUser(ctx, u)
	})
	ids := []string{"mod", "gone", "empty"}
	var want []*chat.Role
	update(t, s, func(tx chat.Tx) error {
		var err error
		want, err = tx.GetRoles(ctx, ids)
		return err
	})
	require.Len(t, want, 2)
	update(t, s, func(tx chat.Tx) error {
		require.NoError(t, tx.(chat.PostPrefetcher).PrefetchPost(ctx, "c", "u"))
		n0 := s.StatementCount()
		got, err := tx.GetRoles(ctx, ids)
		require.NoError(t, err)
		require.Equal(t, want, got)
		require.Equal(t, n0, s.StatementCount(), "served by the prefetch")
		// Other ids, or the same ids a second time, are read.
		_, err = tx.GetRoles(ctx, ids[:1])
		require.NoError(t, err)
		require.Equal(t, n0+1, s.StatementCount())
		return nil
	})
	update(t, s, func(tx chat.Tx) error {
		require.NoError(t, tx.(chat.PostPrefetcher).PrefetchPost(ctx, "c", "u"))
		require.NoError(t, tx.PutRole(ctx, &chat.Role{RoleID: "mod", Permissions: []string{"c"}, CreatedAt: at(1), UpdatedAt: at(4)}))
		got, err := tx.GetRoles(ctx, ids)
		require.NoError(t, err)
		require.Equal(t, []string{"c"}, got[0].Permissions, "a role written in the transaction is read again")
		return nil
	})
}

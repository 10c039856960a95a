package storetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

var txCases = []tcase{
	{"ReadYourWrites", testReadYourWrites},
	{"ErrorRollsBackEverything", testErrorRollsBack},
	{"PanicRollsBack", testPanicRollsBack},
	{"FnErrorReturned", testFnErrorReturned},
	{"CanceledContext", testCanceledContext},
}

// A transaction sees its own writes before it commits.
func testReadYourWrites(t *testing.T, e *env) {
	ctx := e.ctx
	e.update(func(tx chat.Tx) error {
		require.NoError(t, tx.CreateChannel(ctx, newChannel("c", at(0))))
		c, err := tx.NextSegment(ctx, "c", base)
		require.NoError(t, err)
		require.NoError(t, tx.CreateMessage(ctx, newMessage("m1", "c", "u", c.MessageCount)))
		require.NoError(t, tx.PutChannelUser(ctx, member("c", "u", chat.MembershipMember)))
		require.NoError(t, tx.SetMemberCount(ctx, "c", 1))
		got, err := tx.GetChannel(ctx, "c")
		require.NoError(t, err)
		require.EqualValues(t, 1, got.MessageCount)
		require.Equal(t, 1, got.MemberCount)
		ms, err := tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: "c"})
		require.NoError(t, err)
		require.Equal(t, []string{"m1"}, messageIDs(ms))
		cs, err := tx.QueryChannels(ctx, chat.ChannelFilter{MemberOf: "u"})
		require.NoError(t, err)
		require.Equal(t, []string{"c"}, channelIDs(cs))
		return nil
	})
}

// An Update whose fn fails after writing leaves nothing of it visible, in
// any area, and the store stays consistent enough to redo the same writes.
func testErrorRollsBack(t *testing.T, e *env) {
	ctx := e.ctx
	// Committed state.
	e.update(func(tx chat.Tx) error {
		require.NoError(t, tx.CreateChannel(ctx, newChannel("c", at(0))))
		require.NoError(t, tx.CreateUser(ctx, newUser("u", "User")))
		c, err := tx.NextSegment(ctx, "c", at(1000).Time)
		require.NoError(t, err)
		require.NoError(t, tx.CreateMessage(ctx, newMessage("m1", "c", "u", c.MessageCount)))
		require.NoError(t, tx.CreateWebhook(ctx, &chat.Webhook{WebhookID: "w", URL: "https://example.com/hook", Secret: "s", CreatedAt: at(0), UpdatedAt: at(0)}))
		return nil
	})
	before := e.channel("c")
	rulesV := read(e, func(tx chat.Tx) (int64, error) { return tx.RulesVersion(ctx) })
	hooksV := read(e, func(tx chat.Tx) (int64, error) { return tx.WebhooksVersion(ctx) })

	writes := func(tx chat.Tx) error {
		if err := tx.CreateChannel(ctx, newChannel("new", at(5))); err != nil {
			return err
		}
		c, err := tx.NextSegment(ctx, "c", at(9000).Time)
		if err != nil {
			return err
		}
		comment := newMessage("m2", "c", "u", c.MessageCount)
		comment.ParentID = "m1"
		if err := tx.CreateMessage(ctx, comment); err != nil {
			return err
		}
		if err := tx.SetChildrenNumber(ctx, "m1", 1); err != nil {
			return err
		}
		if err := tx.PutChannelUser(ctx, member("c", "u", chat.MembershipMember)); err != nil {
			return err
		}
		if err := tx.SetMemberCount(ctx, "c", 1); err != nil {
			return err
		}
		if _, _, err := react(ctx, tx, &chat.Reaction{ReactionID: "r", ReferenceID: "m1", ReferenceType: chat.ReferenceTypeMessage, ReactionName: "like", UserID: "u", CreatedAt: at(9)}); err != nil {
			return err
		}
		u := newUser("u", "Renamed")
		if err := tx.UpdateUser(ctx, u); err != nil {
			return err
		}
		if _, err := tx.EnsureUsers(ctx, []string{"v"}, base); err != nil {
			return err
		}
		if err := tx.EnqueueDeliveries(ctx, []*chat.Delivery{newDelivery("d", "w", at(0), at(0))}); err != nil {
			return err
		}
		if err := tx.PutRule(ctx, &chat.Rule{List: chat.Blacklist, RuleID: "bad", CreatedAt: at(0), UpdatedAt: at(0)}); err != nil {
			return err
		}
		if err := tx.PutBlob(ctx, &chat.Blob{MessageID: "m1", ChannelID: "c", Name: "file", ContentType: "text/plain", Data: []byte("x"), CreatedAt: at(0)}); err != nil {
			return err
		}
		if _, err := tx.PutMetaIfAbsent(ctx, "k", "v"); err != nil {
			return err
		}
		if _, err := tx.AddFlag(ctx, chat.FlagTargetMessage, "m1", "u", base); err != nil {
			return err
		}
		if err := tx.CreateWebhook(ctx, &chat.Webhook{WebhookID: "w2", URL: "https://example.com/2", CreatedAt: at(0), UpdatedAt: at(0)}); err != nil {
			return err
		}
		if err := tx.CreateAdmin(ctx, &chat.Admin{Name: "root", UserID: "u", TokenHash: []byte("hash"), CreatedAt: at(0)}); err != nil {
			return err
		}
		if err := tx.PutRole(ctx, &chat.Role{RoleID: "mod", Permissions: []string{"p"}, CreatedAt: at(0), UpdatedAt: at(0)}); err != nil {
			return err
		}
		if _, err := tx.SoftDeleteMessages(ctx, "c", "", base); err != nil {
			return err
		}
		return nil
	}
	err := e.s.Update(ctx, func(tx chat.Tx) error {
		require.NoError(t, writes(tx))
		return errBoom
	})
	require.ErrorIs(t, err, errBoom)

	e.view(func(tx chat.Tx) error {
		_, err := tx.GetChannel(ctx, "new")
		requireNotFound(t, err, "channel created in a rolled-back tx")
		c, err := tx.GetChannel(ctx, "c")
		require.NoError(t, err)
		require.Equal(t, cChannel(t, before), cChannel(t, c), "counters and lastActivity of a rolled-back tx")
		_, err = tx.GetMessage(ctx, "m2")
		requireNotFound(t, err, "message")
		m1, err := tx.GetMessage(ctx, "m1")
		require.NoError(t, err)
		require.Equal(t, cMessage(t, newMessage("m1", "c", "u", 1)), cMessage(t, m1), "parent counters, reactions and soft delete")
		ms, err := tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: "c", IncludeDeleted: true})
		require.NoError(t, err)
		require.Equal(t, []string{"m1"}, messageIDs(ms))
		_, err = tx.GetChannelUser(ctx, "c", "u")
		requireNotFound(t, err, "relation")
		cs, err := tx.QueryChannels(ctx, chat.ChannelFilter{MemberOf: "u"})
		require.NoError(t, err)
		require.Empty(t, cs)
		rs, err := tx.QueryReactions(ctx, chat.ReactionFilter{MessageID: "m1"})
		require.NoError(t, err)
		require.Empty(t, rs)
		most, err := tx.MostReacted(ctx, "like", "", 10)
		require.NoError(t, err)
		require.Empty(t, most)
		u, err := tx.GetUser(ctx, "u")
		require.NoError(t, err)
		require.Equal(t, "User", u.DisplayName)
		_, err = tx.GetUser(ctx, "v")
		requireNotFound(t, err, "ensured user")
		_, err = tx.GetDelivery(ctx, "d")
		requireNotFound(t, err, "delivery")
		_, ok, err := tx.NextDeliveryAt(ctx)
		require.NoError(t, err)
		require.False(t, ok, "NextDeliveryAt after a rolled-back enqueue")
		rules, err := tx.ListRules(ctx, chat.Blacklist, nil)
		require.NoError(t, err)
		require.Empty(t, rules)
		v, err := tx.RulesVersion(ctx)
		require.NoError(t, err)
		require.Equal(t, rulesV, v, "RulesVersion after a rolled-back PutRule")
		_, err = tx.GetBlob(ctx, "m1", "file")
		requireNotFound(t, err, "blob")
		_, err = tx.GetMeta(ctx, "k")
		requireNotFound(t, err, "meta")
		_, err = tx.GetWebhook(ctx, "w2")
		requireNotFound(t, err, "webhook")
		hv, err := tx.WebhooksVersion(ctx)
		require.NoError(t, err)
		require.Equal(t, hooksV, hv, "WebhooksVersion after a rolled-back CreateWebhook")
		_, err = tx.GetAdminByTokenHash(ctx, []byte("hash"))
		requireNotFound(t, err, "admin")
		roles, err := tx.ListRoles(ctx, "")
		require.NoError(t, err)
		require.Empty(t, roles)
		return nil
	})

	// The same writes succeed afterwards: nothing of the rolled-back tx
	// lingers in any index.
	e.update(writes)
	e.view(func(tx chat.Tx) error {
		c, err := tx.GetChannel(ctx, "c")
		require.NoError(t, err)
		require.EqualValues(t, 2, c.MessageCount)
		require.Equal(t, 1, c.MemberCount)
		m1, err := tx.GetMessage(ctx, "m1")
		require.NoError(t, err)
		require.Equal(t, 1, m1.ChildrenNumber)
		require.Equal(t, 1, m1.ReactionsCount)
		require.True(t, m1.IsDeleted)
		return nil
	})
	isNew := write(e, func(tx chat.Tx) (bool, error) {
		return tx.AddFlag(ctx, chat.FlagTargetMessage, "m1", "u", base)
	})
	require.False(t, isNew, "flag recorded by the committed retry")
}

// A panic in fn rolls back, propagates, and leaves the store usable.
func testPanicRollsBack(t *testing.T, e *env) {
	ctx := e.ctx
	require.PanicsWithValue(t, "storetest panic", func() {
		_ = e.s.Update(ctx, func(tx chat.Tx) error {
			require.NoError(t, tx.CreateChannel(ctx, newChannel("c", at(0))))
			require.NoError(t, tx.CreateUser(ctx, newUser("u", "U")))
			panic("storetest panic")
		})
	})
	_, err := readErr(e, func(tx chat.Tx) (*chat.Channel, error) { return tx.GetChannel(ctx, "c") })
	requireNotFound(t, err, "channel written before the panic")
	_, err = readErr(e, func(tx chat.Tx) (*chat.User, error) { return tx.GetUser(ctx, "u") })
	requireNotFound(t, err, "user written before the panic")
	e.createChannels(newChannel("c", at(0)))
	require.Equal(t, "c", e.channel("c").ChannelID)
}

type customErr struct{ n int }

func (c *customErr) Error() string { return "custom" }

// Update and View return fn's error itself (errors.Is/As still match).
func testFnErrorReturned(t *testing.T, e *env) {
	want := &customErr{n: 7}
	err := e.s.Update(e.ctx, func(tx chat.Tx) error { return want })
	var got *customErr
	require.ErrorAs(t, err, &got)
	require.Equal(t, 7, got.n)
	err = e.s.View(e.ctx, func(tx chat.Tx) error { return want })
	require.ErrorAs(t, err, &got)
	err = e.s.View(e.ctx, func(tx chat.Tx) error {
		_, err := tx.GetChannel(e.ctx, "missing")
		return err
	})
	requireNotFound(t, err, "a store error passed through View")
}

// A done context fails Update and View before fn runs, with an error that
// matches context.Canceled.
func testCanceledContext(t *testing.T, e *env) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	err := e.s.Update(ctx, func(tx chat.Tx) error { called = true; return tx.CreateChannel(ctx, newChannel("c", at(0))) })
	require.Error(t, err)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, called, "fn ran under a canceled context")
	err = e.s.View(ctx, func(tx chat.Tx) error { called = true; return nil })
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, called, "fn ran under a canceled context")
	_, err = readErr(e, func(tx chat.Tx) (*chat.Channel, error) { return tx.GetChannel(e.ctx, "c") })
	requireNotFound(t, err)
}

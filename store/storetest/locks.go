package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

var lockCases = []tcase{
	{"LockReadsAsGet", testLockReadsAsGet},
	{"LockMissing", testLockMissing},
}

// Each Lock method returns what the matching Get method returns, in an
// Update (where it holds the rows) and in a View, and sees the writes of
// its own transaction.
func testLockReadsAsGet(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	e.createUsers(newUser("u", "U"), newUser("v", "V"))
	e.putMembers(member("c", "u", chat.MembershipMember), member("c", "v", chat.MembershipBanned))
	e.createMessages(newMessage("m", "c", "u", 1))
	e.createWebhooks(webhook("w", 0, "message.new"))
	e.createReports(newReport("r", "u", chat.ReportTargetMessage, "m", 0))
	same := func(tx chat.Tx) error {
		ctx := e.ctx
		c, err := tx.GetChannel(ctx, "c")
		require.NoError(t, err)
		lc, err := tx.LockChannel(ctx, "c")
		require.NoError(t, err)
		require.Equal(t, c, lc, "LockChannel")
		cu, err := tx.GetChannelUser(ctx, "c", "u")
		require.NoError(t, err)
		lcu, err := tx.LockChannelUser(ctx, "c", "u")
		require.NoError(t, err)
		require.Equal(t, cu, lcu, "LockChannelUser")
		for _, ids := range [][]string{nil, {"v", "x"}} {
			cus, err := tx.GetChannelUsers(ctx, "c", ids)
			require.NoError(t, err)
			lcus, err := tx.LockChannelUsers(ctx, "c", ids)
			require.NoError(t, err)
			require.Equal(t, cus, lcus, "LockChannelUsers %v", ids)
		}
		m, err := tx.GetMessage(ctx, "m")
		require.NoError(t, err)
		lm, err := tx.LockMessage(ctx, "m")
		require.NoError(t, err)
		require.Equal(t, m, lm, "LockMessage")
		u, err := tx.GetUser(ctx, "u")
		require.NoError(t, err)
		lu, err := tx.LockUser(ctx, "u")
		require.NoError(t, err)
		require.Equal(t, u, lu, "LockUser")
		w, err := tx.GetWebhook(ctx, "w")
		require.NoError(t, err)
		lw, err := tx.LockWebhook(ctx, "w")
		require.NoError(t, err)
		require.Equal(t, w, lw, "LockWebhook")
		r, err := tx.GetReport(ctx, "r")
		require.NoError(t, err)
		lr, err := tx.LockReport(ctx, "r")
		require.NoError(t, err)
		require.Equal(t, r, lr, "LockReport")
		return nil
	}
	e.view(same)
	e.update(same)
	// A row written earlier in the transaction is read as written.
	e.update(func(tx chat.Tx) error {
		c := newChannel("c", at(0))
		c.DisplayName = "Renamed"
		require.NoError(t, tx.UpdateChannel(e.ctx, c))
		lc, err := tx.LockChannel(e.ctx, "c")
		require.NoError(t, err)
		require.Equal(t, "Renamed", lc.DisplayName)
		u := newUser("u", "Renamed")
		require.NoError(t, tx.UpdateUser(e.ctx, u))
		lu, err := tx.LockUser(e.ctx, "u")
		require.NoError(t, err)
		require.Equal(t, "Renamed", lu.DisplayName)
		return nil
	})
}

// The Lock methods report a missing row as CodeNotFound, in an Update
// and in a View; LockChannelUsers returns no relation for unknown users.
func testLockMissing(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	missing := func(tx chat.Tx) error {
		ctx := e.ctx
		_, err := tx.LockChannel(ctx, "x")
		requireNotFound(t, err, "LockChannel")
		_, err = tx.LockChannelUser(ctx, "c", "x")
		requireNotFound(t, err, "LockChannelUser")
		_, err = tx.LockChannelUser(ctx, "x", "x")
		requireNotFound(t, err, "LockChannelUser of a missing channel")
		cus, err := tx.LockChannelUsers(ctx, "c", []string{"x"})
		require.NoError(t, err)
		require.Empty(t, cus)
		_, err = tx.LockMessage(ctx, "x")
		requireNotFound(t, err, "LockMessage")
		_, err = tx.LockUser(ctx, "x")
		requireNotFound(t, err, "LockUser")
		_, err = tx.LockWebhook(ctx, "x")
		requireNotFound(t, err, "LockWebhook")
		_, err = tx.LockReport(ctx, "x")
		requireNotFound(t, err, "LockReport")
		return nil
	}
	e.view(missing)
	e.update(missing)
}

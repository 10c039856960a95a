package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

var concurrencyCases = []tcase{
	{"NextSegment", testConcurrentNextSegment},
	{"ReadModifyWriteUser", testConcurrentReadModifyWrite},
	{"ViewsDuringUpdates", testViewsDuringUpdates},
}

// 8 goroutines x 100 NextSegment calls, each in its own Update, get the
// distinct, gapless values 1..800.
func testConcurrentNextSegment(t *testing.T, e *env) {
	const workers, each = 8, 100
	e.createChannels(newChannel("c", at(0)))
	var mu sync.Mutex
	var got []int64
	err := group(workers, func(int) error {
		mine := make([]int64, 0, each)
		for i := 0; i < each; i++ {
			var seg int64
			if err := e.s.Update(e.ctx, func(tx chat.Tx) error {
				c, err := tx.NextSegment(e.ctx, "c", base)
				if err != nil {
					return err
				}
				seg = c.MessageCount
				return nil
			}); err != nil {
				return err
			}
			mine = append(mine, seg)
		}
		mu.Lock()
		got = append(got, mine...)
		mu.Unlock()
		return nil
	})
	require.NoError(t, err)
	requireGapless(t, e, got, workers*each)
}

// requireGapless checks that the segments handed out are exactly 1..n and
// that channel c counts n messages.
func requireGapless(t *testing.T, e *env, got []int64, n int) {
	t.Helper()
	slices.Sort(got)
	want := make([]int64, n)
	for i := range want {
		want[i] = int64(i + 1)
	}
	require.Equal(t, want, got, "distinct and gapless")
	require.EqualValues(t, n, e.channel("c").MessageCount)
}

// Concurrent Update transactions that read, modify and write one user lose
// no update.
func testConcurrentReadModifyWrite(t *testing.T, e *env) {
	const workers, each = 8, 20
	e.createUsers(newUser("u", "U"))
	err := group(workers, func(int) error {
		for i := 0; i < each; i++ {
			if err := e.s.Update(e.ctx, func(tx chat.Tx) error {
				u, err := tx.GetUser(e.ctx, "u")
				if err != nil {
					return err
				}
				u.FlagCount++
				u.Metadata = map[string]any{"n": float64(u.FlagCount)}
				return tx.UpdateUser(e.ctx, u)
			}); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	u := e.user("u")
	require.Equal(t, workers*each, u.FlagCount, "lost updates")
	require.Equal(t, float64(workers*each), u.Metadata["n"])
}

// Views running while Updates commit see each transaction whole: a message
// and its channel's messageCount move together.
func testViewsDuringUpdates(t *testing.T, e *env) {
	const posts = 60
	e.createChannels(newChannel("c", at(0)))
	var wg sync.WaitGroup
	var werr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < posts; i++ {
			if err := e.s.Update(e.ctx, func(tx chat.Tx) error {
				c, err := tx.NextSegment(e.ctx, "c", base)
				if err != nil {
					return err
				}
				return tx.CreateMessage(e.ctx, newMessage(fmt.Sprintf("m%03d", c.MessageCount), "c", "u", c.MessageCount))
			}); err != nil {
				werr = err
				return
			}
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var count int64
		var n int
		e.view(func(tx chat.Tx) error {
			c, err := tx.GetChannel(e.ctx, "c")
			if err != nil {
				return err
			}
			ms, err := tx.QueryMessages(e.ctx, chat.MessageFilter{ChannelID: "c"})
			count, n = c.MessageCount, len(ms)
			return err
		})
		require.EqualValues(t, count, n, "a View saw a half-committed transaction")
		if count == posts {
			break
		}
		if werr != nil {
			break
		}
	}
	wg.Wait()
	require.NoError(t, werr)
}

// ---- persistence ----

// testPersistence writes one of everything, reopens the store through
// Harness.Reopen and checks that all of it is still there.
func testPersistence(t *testing.T, h Harness) {
	e := newEnv(t, h.New(t))
	ctx := e.ctx
	ch := fullChannel()
	msg := fullMessage()
	msg.ChannelID = ch.ChannelID
	comment := newMessage("comment", ch.ChannelID, "author", 8)
	comment.ParentID = msg.MessageID
	usr := fullUser()
	role := &chat.Role{RoleID: "mod", Permissions: []string{"p"}, CreatedAt: at(1), UpdatedAt: at(2)}
	bl := rule(chat.Blacklist, "bad", true, 3)
	wl := rule(chat.Whitelist, "example.com", false, 4)
	adm := admin("ops", "hash", 5)
	hook := webhook("w", 6, chat.EventMessageDidCreate)
	blob := &chat.Blob{MessageID: msg.MessageID, ChannelID: ch.ChannelID, Name: "file", ContentType: "text/plain", Data: randomBytes(4096, 7), CreatedAt: at(7)}
	e.update(func(tx chat.Tx) error {
		require.NoError(t, tx.CreateChannel(ctx, ch))
		_, err := tx.NextSegment(ctx, ch.ChannelID, at(8).Time)
		require.NoError(t, err)
		require.NoError(t, tx.PutChannelUser(ctx, member(ch.ChannelID, usr.UserID, chat.MembershipMember)))
		require.NoError(t, tx.CreateUser(ctx, usr))
		require.NoError(t, tx.CreateMessage(ctx, msg))
		require.NoError(t, tx.CreateMessage(ctx, comment))
		require.NoError(t, tx.SetChildrenNumber(ctx, msg.MessageID, 1))
		_, _, err = react(ctx, tx, reaction("r", msg.MessageID, "like", usr.UserID, 9))
		require.NoError(t, err)
		_, err = tx.AddFlag(ctx, chat.FlagTargetMessage, msg.MessageID, usr.UserID, base)
		require.NoError(t, err)
		require.NoError(t, tx.PutRole(ctx, role))
		require.NoError(t, tx.PutRule(ctx, bl))
		require.NoError(t, tx.PutRule(ctx, wl))
		require.NoError(t, tx.CreateAdmin(ctx, adm))
		require.NoError(t, tx.CreateWebhook(ctx, hook))
		require.NoError(t, tx.EnqueueDeliveries(ctx, []*chat.Delivery{newDelivery("d1", "w", at(0), at(0)), newDelivery("d2", "w", at(1), at(0))}))
		require.NoError(t, tx.PutBlob(ctx, blob))
		_, err = tx.PutMetaIfAbsent(ctx, "k", "v")
		require.NoError(t, err)
		return nil
	})
	e.claim("o", at(10), lease, 1)
	require.NoError(t, e.finish("o", attempt("d1", 1, 200, "", 11), chat.DeliveryDelivered, chat.Time{}))
	before := struct {
		ch   *chat.Channel
		msg  *chat.Message
		d1   *chat.Delivery
		d2   *chat.Delivery
		user *chat.User
	}{e.channel(ch.ChannelID), e.message(msg.MessageID), e.delivery("d1"), e.delivery("d2"), e.user(usr.UserID)}

	e2 := newEnv(t, h.Reopen(t, e.s))
	require.Equal(t, cChannel(t, before.ch), cChannel(t, e2.channel(ch.ChannelID)))
	require.Equal(t, cMessage(t, before.msg), cMessage(t, e2.message(msg.MessageID)))
	require.Equal(t, 1, before.msg.ChildrenNumber)
	require.Equal(t, cMessage(t, comment), cMessage(t, e2.message("comment")))
	require.Equal(t, cUser(t, before.user), cUser(t, e2.user(usr.UserID)))
	require.Equal(t, cDelivery(t, before.d1), cDelivery(t, e2.delivery("d1")))
	require.Equal(t, cDelivery(t, before.d2), cDelivery(t, e2.delivery("d2")))
	e2.view(func(tx chat.Tx) error {
		cu, err := tx.GetChannelUser(ctx, ch.ChannelID, usr.UserID)
		require.NoError(t, err)
		require.Equal(t, chat.MembershipMember, cu.Membership)
		rs, err := tx.QueryReactions(ctx, chat.ReactionFilter{MessageID: msg.MessageID})
		require.NoError(t, err)
		require.Equal(t, []string{"r"}, reactionIDs(rs))
		roles, err := tx.GetRoles(ctx, []string{"mod"})
		require.NoError(t, err)
		require.Len(t, roles, 1)
		require.Equal(t, cRole(t, role), cRole(t, roles[0]))
		rules, err := tx.ListRules(ctx, chat.Blacklist, nil)
		require.NoError(t, err)
		require.Equal(t, []string{"bad"}, ruleIDs(rules))
		rules, err = tx.ListRules(ctx, chat.Whitelist, nil)
		require.NoError(t, err)
		require.Equal(t, []string{"example.com"}, ruleIDs(rules))
		a, err := tx.GetAdminByTokenHash(ctx, []byte("hash"))
		require.NoError(t, err)
		require.Equal(t, cAdmin(t, adm), cAdmin(t, a))
		w, err := tx.GetWebhook(ctx, "w")
		require.NoError(t, err)
		require.Equal(t, cWebhook(t, hook), cWebhook(t, w))
		attempts, err := tx.ListAttempts(ctx, "d1")
		require.NoError(t, err)
		require.Len(t, attempts, 1)
		b, err := tx.GetBlob(ctx, blob.MessageID, blob.Name)
		require.NoError(t, err)
		requireBlob(t, blob, b)
		v, err := tx.GetMeta(ctx, "k")
		require.NoError(t, err)
		require.Equal(t, "v", v)
		next, ok, err := tx.NextDeliveryAt(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		require.True(t, at(1).Equal(next))
		return nil
	})
	isNew := write(e2, func(tx chat.Tx) (bool, error) {
		return tx.AddFlag(ctx, chat.FlagTargetMessage, msg.MessageID, usr.UserID, base)
	})
	require.False(t, isNew, "flags persist")
	c := write(e2, func(tx chat.Tx) (*chat.Channel, error) { return tx.NextSegment(ctx, ch.ChannelID, base) })
	require.EqualValues(t, 2, c.MessageCount, "segments continue after reopening")
}

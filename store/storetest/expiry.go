package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

var expiryCases = []tcase{
	{"LapsedMutes", testLapsedMutes},
	{"LapsedMutesLimit", testLapsedMutesLimit},
	{"NextMuteEnd", testNextMuteEnd},
	{"ConcurrentClaims", testLapsedMutesConcurrent},
}

// muteFixture writes channels and relations with every kind of mute:
// lapsed, running, none, forever, in a closed channel, on a non-member.
func muteFixture(e *env) {
	e.t.Helper()
	mutedAt := func(c *chat.Channel, ms int64) *chat.Channel { c.MuteTimeout = atp(ms); return c }
	forever := newChannel("forever", at(0))
	f := chat.Forever
	forever.MuteTimeout = &f
	closed := mutedAt(newChannel("closed", at(0)), 50)
	closed.IsClosed = true
	e.createChannels(
		mutedAt(newChannel("b", at(0)), 200),
		mutedAt(newChannel("a", at(0)), 100),
		mutedAt(newChannel("later", at(0)), 300),
		newChannel("plain", at(0)),
		forever, closed,
	)
	rel := func(channelID, userID string, m chat.Membership, ms int64) *chat.ChannelUser {
		cu := member(channelID, userID, m)
		if ms >= 0 {
			cu.MuteTimeout = atp(ms)
		}
		return cu
	}
	e.putMembers(
		rel("plain", "u1", chat.MembershipMember, 150),
		rel("plain", "u2", chat.MembershipMember, 250),
		rel("plain", "u3", chat.MembershipMember, -1),
		rel("plain", "banned", chat.MembershipBanned, 10),
		rel("a", "u5", chat.MembershipMember, 120),
		rel("a", "u6", chat.MembershipMember, 150),
		rel("closed", "u7", chat.MembershipMember, 20),
	)
}

func relationIDs(cus []*chat.ChannelUser) []string {
	out := []string{}
	for _, cu := range cus {
		out = append(out, cu.ChannelID+"/"+cu.UserID)
	}
	return out
}

// LapsedMutes returns the open channels and the member relations whose
// mute ended at or before now, earliest first, whole records; once a mute
// is cleared (MuteTimeout nil) it is not returned again. Works in a View
// too.
func testLapsedMutes(t *testing.T, e *env) {
	muteFixture(e)
	type got struct {
		chans []*chat.Channel
		cus   []*chat.ChannelUser
	}
	lapsed := func(ms int64) got {
		return write(e, func(tx chat.Tx) (got, error) {
			cs, cus, err := tx.LapsedMutes(e.ctx, at(ms).Time, 100)
			return got{cs, cus}, err
		})
	}
	g := lapsed(200)
	require.Equal(t, []string{"a", "b"}, channelIDs(g.chans), "lapsed at or before now, earliest first")
	require.Equal(t, []string{"a/u5", "a/u6", "plain/u1"}, relationIDs(g.cus))
	require.Equal(t, cChannel(t, e.channel("a")), cChannel(t, g.chans[0]), "the whole channel")
	want := member("a", "u5", chat.MembershipMember)
	want.MuteTimeout = atp(120)
	require.Equal(t, cChannelUser(t, want), cChannelUser(t, g.cus[0]), "the whole relation")

	require.Empty(t, relationIDs(lapsed(99).cus), "nothing lapsed yet")
	require.Empty(t, channelIDs(lapsed(99).chans))
	g = lapsed(120)
	require.Equal(t, []string{"a"}, channelIDs(g.chans))
	require.Equal(t, []string{"a/u5"}, relationIDs(g.cus), "a mute ending exactly now has ended")

	// Announcing clears the timeout: the record is not lapsed any more.
	e.update(func(tx chat.Tx) error {
		c := e.channelIn(tx, "a")
		c.MuteTimeout = nil
		if err := tx.UpdateChannel(e.ctx, c); err != nil {
			return err
		}
		cu, err := tx.GetChannelUser(e.ctx, "a", "u5")
		if err != nil {
			return err
		}
		cu.MuteTimeout = nil
		return tx.PutChannelUser(e.ctx, cu)
	})
	g = lapsed(1000)
	require.Equal(t, []string{"b", "later"}, channelIDs(g.chans))
	require.Equal(t, []string{"a/u6", "plain/u1", "plain/u2"}, relationIDs(g.cus))

	v := read(e, func(tx chat.Tx) (got, error) {
		cs, cus, err := tx.LapsedMutes(e.ctx, at(200).Time, 100)
		return got{cs, cus}, err
	})
	require.Equal(t, []string{"b"}, channelIDs(v.chans), "in a View too")
	require.Equal(t, []string{"a/u6", "plain/u1"}, relationIDs(v.cus))
}

// channelIn reads a channel in tx.
func (e *env) channelIn(tx chat.Tx, id string) *chat.Channel {
	e.t.Helper()
	c, err := tx.GetChannel(e.ctx, id)
	require.NoError(e.t, err)
	return c
}

// LapsedMutes returns at most limit channels and at most limit relations.
func testLapsedMutesLimit(t *testing.T, e *env) {
	muteFixture(e)
	var cs []*chat.Channel
	var cus []*chat.ChannelUser
	e.update(func(tx chat.Tx) (err error) {
		cs, cus, err = tx.LapsedMutes(e.ctx, at(1000).Time, 1)
		return err
	})
	require.Equal(t, []string{"a"}, channelIDs(cs))
	require.Equal(t, []string{"a/u5"}, relationIDs(cus))
	e.update(func(tx chat.Tx) (err error) {
		cs, cus, err = tx.LapsedMutes(e.ctx, at(1000).Time, 2)
		return err
	})
	require.Equal(t, []string{"a", "b"}, channelIDs(cs))
	require.Equal(t, []string{"a/u5", "a/u6"}, relationIDs(cus))
}

// NextMuteEnd is the earliest mute end of an open channel or a member,
// lapsed or not; none on an empty store.
func testNextMuteEnd(t *testing.T, e *env) {
	type next struct {
		t  time.Time
		ok bool
	}
	get := func() next {
		return read(e, func(tx chat.Tx) (next, error) {
			t, ok, err := tx.NextMuteEnd(e.ctx)
			return next{t, ok}, err
		})
	}
	require.False(t, get().ok, "nothing muted")
	muteFixture(e)
	n := get()
	require.True(t, n.ok)
	require.Equal(t, time.UTC, n.t.Location())
	require.True(t, at(100).Equal(n.t), "channel a at 100; the banned relation (10) and the closed channel (20, 50) do not count: %v", n.t)

	// Clearing a's mute makes u5's (120) the next; clearing b and later and
	// removing a's relations leaves u1's (150); then only forever.
	e.update(func(tx chat.Tx) error {
		c := e.channelIn(tx, "a")
		c.MuteTimeout = nil
		return tx.UpdateChannel(e.ctx, c)
	})
	require.True(t, at(120).Equal(get().t), "u5 in a")
	f := chat.Forever
	e.update(func(tx chat.Tx) error {
		for _, id := range []string{"b", "later"} {
			c := e.channelIn(tx, id)
			c.MuteTimeout = nil
			if err := tx.UpdateChannel(e.ctx, c); err != nil {
				return err
			}
		}
		return tx.DeleteChannelUsers(e.ctx, "a")
	})
	require.True(t, at(150).Equal(get().t), "u1 in plain")
	e.update(func(tx chat.Tx) error { return tx.DeleteChannelUsers(e.ctx, "plain") })
	require.True(t, f.Equal(get().t), "only the channel muted forever is left")
}

// Concurrent transactions that each take lapsed mutes and clear them, as
// expirers in several processes do, announce every mute exactly once.
func testLapsedMutesConcurrent(t *testing.T, e *env) {
	const chans, perChan, workers = 12, 5, 4
	var cs []*chat.Channel
	var cus []*chat.ChannelUser
	for i := range chans {
		c := newChannel(fmt.Sprintf("c%02d", i), at(0))
		c.MuteTimeout = atp(int64(i))
		cs = append(cs, c)
		for j := range perChan {
			cu := member(c.ChannelID, fmt.Sprintf("u%d", j), chat.MembershipMember)
			cu.MuteTimeout = atp(int64(10 + i + j))
			cus = append(cus, cu)
		}
	}
	e.createChannels(cs...)
	e.putMembers(cus...)

	var mu sync.Mutex
	seen := map[string]int{}
	err := group(workers, func(int) error {
		for {
			var mine []string
			err := e.s.Update(e.ctx, func(tx chat.Tx) error {
				mine = mine[:0]
				lc, lcu, err := tx.LapsedMutes(e.ctx, at(1000).Time, 3)
				if err != nil {
					return err
				}
				for _, c := range lc {
					c.MuteTimeout = nil
					if err := tx.UpdateChannel(e.ctx, c); err != nil {
						return err
					}
					mine = append(mine, c.ChannelID)
				}
				for _, cu := range lcu {
					cu.MuteTimeout = nil
					if err := tx.PutChannelUser(e.ctx, cu); err != nil {
						return err
					}
					mine = append(mine, cu.ChannelID+"/"+cu.UserID)
				}
				return nil
			})
			if err != nil {
				return err
			}
			if len(mine) == 0 {
				return nil
			}
			mu.Lock()
			for _, k := range mine {
				seen[k]++
			}
			mu.Unlock()
		}
	})
	require.NoError(t, err)
	require.Len(t, seen, chans+chans*perChan, "every lapsed mute was taken")
	for k, n := range seen {
		require.Equal(t, 1, n, "%s taken %d times", k, n)
	}
	var left []*chat.Channel
	var leftU []*chat.ChannelUser
	e.view(func(tx chat.Tx) (err error) {
		left, leftU, err = tx.LapsedMutes(e.ctx, at(1000).Time, 100)
		return err
	})
	require.Empty(t, left)
	require.Empty(t, leftU)
	for _, c := range cs {
		require.Nil(t, e.channel(c.ChannelID).MuteTimeout)
	}
}

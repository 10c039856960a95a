package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

var pushCases = []tcase{
	{"Targets", testPushTargets},
	{"EnqueueClaimFinish", testPushEnqueueClaimFinish},
	{"OneSuccessPerMessageAndDevice", testPushOneSuccess},
	{"LeaseExpires", testPushLeaseExpires},
	{"RetryAndBacklog", testPushRetry},
	{"DeviceDeletedWithItsPushes", testPushDeviceDeleted},
	{"RolledBack", testPushRollback},
	{"ConcurrentClaims", testPushConcurrentClaims},
	{"BatchesExpand", testPushBatches},
	{"ConcurrentExpansions", testPushConcurrentExpansions},
	{"DeleteFinished", testPushDeleteFinished},
}

func newPush(id, message, device string, next chat.Time) *chat.PushDelivery {
	return &chat.PushDelivery{PushID: id, MessageID: message, ChannelID: "c", UserID: "u-" + device, DeviceID: device,
		Title: "Channel c", Body: "Ann: hello", State: chat.DeliveryPending, NextAttemptAt: next, CreatedAt: at(0), UpdatedAt: at(0)}
}

func (e *env) enqueuePushes(ps ...*chat.PushDelivery) {
	e.t.Helper()
	e.update(func(tx chat.Tx) error { return tx.EnqueuePushes(e.ctx, ps) })
}

func (e *env) claimPushes(owner string, now chat.Time, lease time.Duration, limit int) []*chat.PushDelivery {
	e.t.Helper()
	return write(e, func(tx chat.Tx) ([]*chat.PushDelivery, error) {
		return tx.ClaimPushes(e.ctx, owner, now.Time, lease, limit)
	})
}

func (e *env) finishPush(owner, id, state string, next, now chat.Time) error {
	return e.s.Update(e.ctx, func(tx chat.Tx) error {
		return tx.FinishPush(e.ctx, owner, id, state, "err", next.Time, now.Time)
	})
}

func (e *env) pushes(message string) []*chat.PushDelivery {
	e.t.Helper()
	return read(e, func(tx chat.Tx) ([]*chat.PushDelivery, error) { return tx.ListPushes(e.ctx, message) })
}

func pushIDs(ps []*chat.PushDelivery) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.PushID)
	}
	return out
}

// pushDevices makes one device per id (user "u-<id>", Firebase token
// "tok-<id>").
func (e *env) pushDevices(ids ...string) {
	e.t.Helper()
	var ds []*chat.Device
	for _, id := range ids {
		ds = append(ds, newDevice(id, "u-"+id, chat.ProviderFirebase, "tok-"+id, 0))
	}
	e.createDevices(ds...)
}

func testPushTargets(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)), newChannel("other", at(0)))
	e.putMembers(member("c", "ann", chat.MembershipMember), member("c", "bob", chat.MembershipMember),
		member("c", "cat", chat.MembershipMember), member("c", "dan", chat.MembershipBanned),
		member("c", "eve", chat.MembershipNone), member("c", "fay", chat.MembershipMember),
		member("other", "gus", chat.MembershipMember))
	e.createDevices(newDevice("a1", "ann", chat.ProviderAPN, "aa", 0),
		newDevice("b2", "bob", chat.ProviderFirebase, "b2", 0), newDevice("b1", "bob", chat.ProviderAPN, "bb", 0),
		newDevice("c1", "cat", chat.ProviderWebPush, "cc", 0), newDevice("d1", "dan", chat.ProviderAPN, "dd", 0),
		newDevice("e1", "eve", chat.ProviderAPN, "ee", 0), newDevice("g1", "gus", chat.ProviderAPN, "gg", 0))
	e.update(func(tx chat.Tx) error {
		if err := tx.PutNotificationLevel(e.ctx, "bob", "", chat.NotifyMentions, at(1).Time); err != nil {
			return err
		}
		if err := tx.PutNotificationLevel(e.ctx, "cat", "c", chat.NotifyNone, at(1).Time); err != nil {
			return err
		}
		return tx.PutNotificationLevel(e.ctx, "cat", "other", chat.NotifyAll, at(1).Time)
	})
	ts := read(e, func(tx chat.Tx) ([]*chat.PushTarget, error) { return tx.ListPushTargets(e.ctx, "c", "ann") })
	want := []*chat.PushTarget{
		{UserID: "bob", DeviceID: "b1", UserLevel: chat.NotifyMentions},
		{UserID: "bob", DeviceID: "b2", UserLevel: chat.NotifyMentions},
		{UserID: "cat", DeviceID: "c1", ChannelLevel: chat.NotifyNone},
	}
	require.Equal(t, want, ts, "members other than the author with devices (fay has none; dan is banned, eve not a member)")
	ts = read(e, func(tx chat.Tx) ([]*chat.PushTarget, error) { return tx.ListPushTargets(e.ctx, "c", "") })
	require.Len(t, ts, 4)
	require.Equal(t, "ann", ts[0].UserID)
	ts = read(e, func(tx chat.Tx) ([]*chat.PushTarget, error) { return tx.ListPushTargets(e.ctx, "none", "") })
	require.Empty(t, ts)
	ts = read(e, func(tx chat.Tx) ([]*chat.PushTarget, error) { return tx.ListPushTargets(e.ctx, "other", "gus") })
	require.Empty(t, ts, "the only member with a device is the author")
}

func testPushEnqueueClaimFinish(t *testing.T, e *env) {
	e.pushDevices("d1", "d2")
	e.enqueuePushes(newPush("p2", "m1", "d2", at(10)), newPush("p1", "m1", "d1", at(10)),
		newPush("p3", "m2", "d1", at(20)), newPush("px", "m2", "gone", at(0)))
	require.Equal(t, []string{"p1", "p2"}, pushIDs(e.pushes("m1")))
	require.Equal(t, []string{"p3"}, pushIDs(e.pushes("m2")), "a push of a device that does not exist is left out")
	got := e.claimPushes("w1", at(10), time.Minute, 0)
	require.Equal(t, []string{"p1", "p2"}, pushIDs(got), "due ones, by nextAttemptAt then id")
	p := got[0]
	require.Equal(t, chat.ProviderFirebase, p.Provider)
	require.Equal(t, "tok-d1", p.Token)
	require.Equal(t, "w1", p.LeaseOwner)
	require.NotNil(t, p.LeaseUntil)
	require.True(t, p.LeaseUntil.Equal(at(10).Add(time.Minute)))
	require.Equal(t, "Channel c", p.Title)
	require.Equal(t, "Ann: hello", p.Body)
	require.Equal(t, "u-d1", p.UserID)
	require.Equal(t, "m1", p.MessageID)
	checkUTC(t, p.NextAttemptAt, p.CreatedAt, p.UpdatedAt)
	require.Equal(t, []string{"p3"}, pushIDs(e.claimPushes("w2", at(30), time.Minute, 0)), "leased ones are not claimed again")
	requireConflict(t, e.finishPush("w2", "p1", chat.DeliveryDelivered, at(0), at(40)), "another owner's lease")
	requireNotFound(t, e.finishPush("w1", "nope", chat.DeliveryDelivered, at(0), at(40)))
	require.NoError(t, e.finishPush("w1", "p1", chat.DeliveryDelivered, at(0), at(40)))
	ps := e.pushes("m1")
	require.Equal(t, chat.DeliveryDelivered, ps[0].State)
	require.Equal(t, 1, ps[0].Attempts)
	require.Equal(t, "err", ps[0].LastError)
	require.Empty(t, ps[0].LeaseOwner)
	require.Nil(t, ps[0].LeaseUntil)
	require.True(t, ps[0].UpdatedAt.Equal(at(40).Time))
	require.Empty(t, ps[0].Token, "the token is not part of the log")
	require.Equal(t, chat.DeliveryPending, ps[1].State)
}

func testPushOneSuccess(t *testing.T, e *env) {
	e.pushDevices("d1")
	e.enqueuePushes(newPush("p1", "m1", "d1", at(0)))
	e.enqueuePushes(newPush("p2", "m1", "d1", at(0)), newPush("p1", "m9", "d1", at(0)))
	require.Equal(t, []string{"p1"}, pushIDs(e.pushes("m1")), "a second push for (message, device) is left out")
	require.Empty(t, e.pushes("m9"), "and one with an existing id")
	got := e.claimPushes("w1", at(0), time.Minute, 10)
	require.Len(t, got, 1)
	require.NoError(t, e.finishPush("w1", "p1", chat.DeliveryDelivered, at(0), at(1)))
	requireConflict(t, e.finishPush("w1", "p1", chat.DeliveryDelivered, at(0), at(2)), "a delivered push takes no second success")
	require.Empty(t, e.claimPushes("w1", at(100000), time.Minute, 10))
	require.Equal(t, 1, e.pushes("m1")[0].Attempts)
}

func testPushLeaseExpires(t *testing.T, e *env) {
	e.pushDevices("d1")
	e.enqueuePushes(newPush("p1", "m1", "d1", at(0)))
	require.Len(t, e.claimPushes("w1", at(0), time.Second, 10), 1)
	require.Empty(t, e.claimPushes("w2", at(999), time.Second, 10))
	got := e.claimPushes("w2", at(1000), time.Second, 10)
	require.Len(t, got, 1, "claimed again once the lease expired")
	require.Equal(t, "w2", got[0].LeaseOwner)
	requireConflict(t, e.finishPush("w1", "p1", chat.DeliveryDelivered, at(0), at(1001)), "the first owner lost its lease")
	require.NoError(t, e.finishPush("w2", "p1", chat.DeliveryDelivered, at(0), at(1001)))
}

func testPushRetry(t *testing.T, e *env) {
	e.pushDevices("d1", "d2")
	e.enqueuePushes(newPush("p1", "m1", "d1", at(0)), newPush("p2", "m1", "d2", at(500)))
	require.Equal(t, chat.OutboxBacklog{Pending: 2, Due: 1}, read(e, func(tx chat.Tx) (chat.OutboxBacklog, error) {
		return tx.CountPushes(e.ctx, at(0).Time)
	}))
	require.Len(t, e.claimPushes("w1", at(0), time.Minute, 10), 1)
	require.NoError(t, e.finishPush("w1", "p1", chat.DeliveryPending, at(5000), at(1)))
	require.Equal(t, []string{"p2"}, pushIDs(e.claimPushes("w1", at(4999), time.Minute, 10)), "not before its next attempt")
	require.NoError(t, e.finishPush("w1", "p2", chat.DeliveryFailed, at(0), at(4999)))
	got := e.claimPushes("w1", at(5000), time.Minute, 10)
	require.Equal(t, []string{"p1"}, pushIDs(got))
	require.Equal(t, 1, got[0].Attempts)
	require.True(t, got[0].NextAttemptAt.Equal(at(5000).Time))
	require.Equal(t, chat.OutboxBacklog{Pending: 1, Due: 1}, read(e, func(tx chat.Tx) (chat.OutboxBacklog, error) {
		return tx.CountPushes(e.ctx, at(5000).Time)
	}))
	require.NoError(t, e.finishPush("w1", "p1", chat.DeliveryDelivered, at(0), at(5001)))
	require.Equal(t, chat.OutboxBacklog{}, read(e, func(tx chat.Tx) (chat.OutboxBacklog, error) {
		return tx.CountPushes(e.ctx, at(5000).Time)
	}))
	ps := e.pushes("m1")
	require.Equal(t, 2, ps[0].Attempts)
	require.Equal(t, chat.DeliveryFailed, ps[1].State)
}

func testPushDeviceDeleted(t *testing.T, e *env) {
	e.pushDevices("d1", "d2")
	e.enqueuePushes(newPush("p1", "m1", "d1", at(0)), newPush("p2", "m1", "d2", at(0)))
	require.Len(t, e.claimPushes("w1", at(0), time.Minute, 10), 2)
	e.update(func(tx chat.Tx) error { return tx.DeleteDevice(e.ctx, "u-d1", "d1") })
	require.Equal(t, []string{"p2"}, pushIDs(e.pushes("m1")), "a deleted device's pushes go with it")
	requireNotFound(t, e.finishPush("w1", "p1", chat.DeliveryDelivered, at(0), at(1)))
	e.update(func(tx chat.Tx) error {
		_, err := tx.DeleteDevices(e.ctx, "u-d2")
		return err
	})
	require.Empty(t, e.pushes("m1"))
	e.pushDevices("d1")
	e.enqueuePushes(newPush("p1", "m1", "d1", at(0)))
	require.Equal(t, []string{"p1"}, pushIDs(e.pushes("m1")), "the pair can be pushed to again")
}

func testPushRollback(t *testing.T, e *env) {
	e.pushDevices("d1")
	err := e.s.Update(e.ctx, func(tx chat.Tx) error {
		if err := tx.EnqueuePushes(e.ctx, []*chat.PushDelivery{newPush("p1", "m1", "d1", at(0))}); err != nil {
			return err
		}
		return fmt.Errorf("abort")
	})
	require.EqualError(t, err, "abort")
	require.Empty(t, e.pushes("m1"))
	e.enqueuePushes(newPush("p1", "m1", "d1", at(0)))
	err = e.s.Update(e.ctx, func(tx chat.Tx) error {
		if _, err := tx.ClaimPushes(e.ctx, "w1", at(0).Time, time.Minute, 10); err != nil {
			return err
		}
		if err := tx.DeleteDevice(e.ctx, "u-d1", "d1"); err != nil {
			return err
		}
		return fmt.Errorf("abort")
	})
	require.EqualError(t, err, "abort")
	ps := e.pushes("m1")
	require.Len(t, ps, 1)
	require.Empty(t, ps[0].LeaseOwner, "the claim was rolled back")
	require.Len(t, e.claimPushes("w2", at(0), time.Minute, 10), 1)
}

func testPushConcurrentClaims(t *testing.T, e *env) {
	const total, owners, batch = 120, 4, 7
	var ids []string
	for i := range total / 4 {
		ids = append(ids, fmt.Sprintf("d%02d", i))
	}
	e.pushDevices(ids...)
	var ps []*chat.PushDelivery
	for i := range total {
		ps = append(ps, newPush(fmt.Sprintf("p%03d", i), fmt.Sprintf("m%d", i/len(ids)), ids[i%len(ids)], at(int64(i%5))))
	}
	e.enqueuePushes(ps...)
	var mu sync.Mutex
	claimedBy := map[string][]string{}
	err := group(owners, func(i int) error {
		owner := fmt.Sprintf("owner-%d", i)
		for rounds := 0; ; rounds++ {
			if rounds > total {
				return fmt.Errorf("%s: claims do not run dry", owner)
			}
			var got []*chat.PushDelivery
			err := e.s.Update(e.ctx, func(tx chat.Tx) error {
				var err error
				got, err = tx.ClaimPushes(e.ctx, owner, at(1000).Time, time.Hour, batch)
				return err
			})
			if err != nil {
				return err
			}
			if len(got) == 0 {
				return nil
			}
			mu.Lock()
			for _, p := range got {
				claimedBy[p.PushID] = append(claimedBy[p.PushID], owner)
			}
			mu.Unlock()
			err = e.s.Update(e.ctx, func(tx chat.Tx) error {
				for _, p := range got {
					if err := tx.FinishPush(e.ctx, owner, p.PushID, chat.DeliveryDelivered, "", time.Time{}, at(1001).Time); err != nil {
						return fmt.Errorf("finish %s by %s: %w", p.PushID, owner, err)
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
	})
	require.NoError(t, err)
	require.Len(t, claimedBy, total)
	for id, by := range claimedBy {
		require.Len(t, by, 1, "push %s claimed by %v", id, by)
	}
}

func newBatch(message string, ms int64, devices ...string) *chat.PushBatch {
	b := &chat.PushBatch{MessageID: message, ChannelID: "c", Title: "Lobby", Body: "Ann: hi", CreatedAt: at(ms)}
	for _, d := range devices {
		b.UserIDs, b.DeviceIDs = append(b.UserIDs, "u-"+d), append(b.DeviceIDs, d)
	}
	return b
}

func (e *env) expandBatches(limit int) int {
	e.t.Helper()
	return write(e, func(tx chat.Tx) (int, error) { return tx.ExpandPushBatches(e.ctx, limit) })
}

func testPushBatches(t *testing.T, e *env) {
	e.pushDevices("d1", "d2", "d3")
	e.update(func(tx chat.Tx) error {
		for _, b := range []*chat.PushBatch{newBatch("m2", 20, "d1"), newBatch("m1", 10, "d2", "gone", "d1"), newBatch("m3", 30, "d3")} {
			if err := tx.EnqueuePushBatch(e.ctx, b); err != nil {
				return err
			}
		}
		return nil
	})
	err := e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.EnqueuePushBatch(e.ctx, newBatch("m1", 40, "d3")) })
	requireConflict(t, err, "one batch per message")
	require.Empty(t, e.pushes("m1"), "a batch is not yet pushes")
	e.enqueuePushes(newPush("m2/d1", "m2", "d1", at(0)))
	require.Equal(t, 2, e.expandBatches(2), "the two oldest")
	ps := e.pushes("m1")
	require.Equal(t, []string{"m1/d1", "m1/d2"}, pushIDs(ps), "one per device that exists")
	p := ps[1]
	require.Equal(t, "u-d2", p.UserID)
	require.Equal(t, "d2", p.DeviceID)
	require.Equal(t, "c", p.ChannelID)
	require.Equal(t, "Lobby", p.Title)
	require.Equal(t, "Ann: hi", p.Body)
	require.Equal(t, chat.DeliveryPending, p.State)
	require.Zero(t, p.Attempts)
	require.True(t, p.NextAttemptAt.Equal(at(10).Time), "due at the batch's creation")
	require.True(t, p.CreatedAt.Equal(at(10).Time))
	require.Len(t, e.pushes("m2"), 1, "a pair already in the outbox is left as it is")
	require.True(t, e.pushes("m2")[0].NextAttemptAt.Equal(at(0).Time))
	require.Empty(t, e.pushes("m3"))
	require.Equal(t, 1, e.expandBatches(0))
	require.Equal(t, []string{"m3/d3"}, pushIDs(e.pushes("m3")))
	require.Zero(t, e.expandBatches(0), "expanded batches are gone")
	got := e.claimPushes("w", at(100), time.Minute, 0)
	require.Equal(t, []string{"m2/d1", "m1/d1", "m1/d2", "m3/d3"}, pushIDs(got))
	require.Equal(t, "tok-d2", got[2].Token)

	err = e.s.Update(e.ctx, func(tx chat.Tx) error {
		if err := tx.EnqueuePushBatch(e.ctx, newBatch("m9", 50, "d1")); err != nil {
			return err
		}
		return fmt.Errorf("abort")
	})
	require.EqualError(t, err, "abort")
	require.Zero(t, e.expandBatches(0), "a rolled-back batch is not there")
}

func testPushConcurrentExpansions(t *testing.T, e *env) {
	const batches, workers = 40, 4
	e.pushDevices("d1", "d2")
	e.update(func(tx chat.Tx) error {
		for i := range batches {
			if err := tx.EnqueuePushBatch(e.ctx, newBatch(fmt.Sprintf("m%02d", i), int64(i), "d1", "d2")); err != nil {
				return err
			}
		}
		return nil
	})
	var mu sync.Mutex
	total := 0
	err := group(workers, func(int) error {
		for {
			var n int
			err := e.s.Update(e.ctx, func(tx chat.Tx) error {
				var err error
				n, err = tx.ExpandPushBatches(e.ctx, 3)
				return err
			})
			if err != nil || n == 0 {
				return err
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}
	})
	require.NoError(t, err)
	require.Equal(t, batches, total, "each batch expanded once")
	require.Equal(t, chat.OutboxBacklog{Pending: 2 * batches, Due: 2 * batches}, read(e, func(tx chat.Tx) (chat.OutboxBacklog, error) {
		return tx.CountPushes(e.ctx, at(1000).Time)
	}))
}

func testPushDeleteFinished(t *testing.T, e *env) {
	e.pushDevices("d1")
	e.enqueuePushes(newPush("p1", "m1", "d1", at(0)), newPush("p2", "m2", "d1", at(0)),
		newPush("p3", "m3", "d1", at(0)), newPush("p4", "m4", "d1", at(0)))
	require.Len(t, e.claimPushes("w", at(0), time.Minute, 0), 4)
	require.NoError(t, e.finishPush("w", "p1", chat.DeliveryDelivered, at(0), at(10)))
	require.NoError(t, e.finishPush("w", "p2", chat.DeliveryFailed, at(0), at(20)))
	require.NoError(t, e.finishPush("w", "p3", chat.DeliveryPending, at(1), at(5)))
	require.NoError(t, e.finishPush("w", "p4", chat.DeliveryDelivered, at(0), at(50)))
	del := func(before int64, limit int) int {
		return write(e, func(tx chat.Tx) (int, error) { return tx.DeleteFinishedPushes(e.ctx, at(before).Time, limit) })
	}
	require.Equal(t, 1, del(30, 1), "the oldest first")
	require.Empty(t, e.pushes("m1"))
	require.Len(t, e.pushes("m2"), 1)
	require.Equal(t, 1, del(30, 0))
	require.Zero(t, del(30, 0), "pending ones and newer ones stay")
	require.Len(t, e.pushes("m3"), 1)
	require.Len(t, e.pushes("m4"), 1)
	require.Equal(t, 1, del(51, 0))
	require.Len(t, e.pushes("m3"), 1)
}

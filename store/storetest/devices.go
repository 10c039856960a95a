package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

var deviceCases = []tcase{
	{"CreateGetList", testDeviceCreateList},
	{"TokenUniquePerProvider", testDeviceTokenUnique},
	{"TouchReorders", testDeviceTouch},
	{"Delete", testDeviceDelete},
	{"RolledBack", testDeviceRollback},
	{"ConcurrentCap", testDeviceConcurrentCap},
}

var notificationCases = []tcase{
	{"DefaultAndSet", testNotificationLevels},
	{"ListAndDelete", testNotificationList},
}

func newDevice(id, user, provider, token string, ms int64) *chat.Device {
	return &chat.Device{DeviceID: id, UserID: user, Provider: provider, Token: token, CreatedAt: at(ms), UpdatedAt: at(ms)}
}

func (e *env) createDevices(ds ...*chat.Device) {
	e.t.Helper()
	e.update(func(tx chat.Tx) error {
		for _, d := range ds {
			if err := tx.CreateDevice(e.ctx, d); err != nil {
				return err
			}
		}
		return nil
	})
}

func (e *env) deviceIDs(user string) []string {
	e.t.Helper()
	ds := read(e, func(tx chat.Tx) ([]*chat.Device, error) { return tx.ListDevices(e.ctx, user) })
	out := []string{}
	for _, d := range ds {
		out = append(out, d.DeviceID)
	}
	return out
}

func testDeviceCreateList(t *testing.T, e *env) {
	e.createDevices(newDevice("d2", "alice", chat.ProviderFirebase, "fcm-2", 2000),
		newDevice("d1", "alice", chat.ProviderAPN, "ab12", 1000),
		newDevice("d3", "alice", chat.ProviderWebPush, `{"endpoint":"https://push.example/x"}`, 2000),
		newDevice("b1", "bob", chat.ProviderAPN, "cd34", 500))
	require.Equal(t, []string{"d1", "d2", "d3"}, e.deviceIDs("alice"), "least recently registered first, then by id")
	require.Equal(t, []string{"b1"}, e.deviceIDs("bob"))
	require.Empty(t, e.deviceIDs("carol"))
	ds := read(e, func(tx chat.Tx) ([]*chat.Device, error) { return tx.ListDevices(e.ctx, "alice") })
	require.Equal(t, newDevice("d1", "alice", chat.ProviderAPN, "ab12", 1000), ds[0])
	checkUTC(t, ds[0].CreatedAt, ds[0].UpdatedAt)
	d := read(e, func(tx chat.Tx) (*chat.Device, error) {
		return tx.GetDeviceByToken(e.ctx, chat.ProviderWebPush, `{"endpoint":"https://push.example/x"}`)
	})
	require.Equal(t, "d3", d.DeviceID)
	require.Equal(t, "alice", d.UserID)
	_, err := readErr(e, func(tx chat.Tx) (*chat.Device, error) {
		return tx.GetDeviceByToken(e.ctx, chat.ProviderFirebase, "ab12")
	})
	requireNotFound(t, err, "the token is another provider's")
}

func testDeviceTokenUnique(t *testing.T, e *env) {
	e.createDevices(newDevice("d1", "alice", chat.ProviderFirebase, "tok", 1000))
	err := e.s.Update(e.ctx, func(tx chat.Tx) error {
		return tx.CreateDevice(e.ctx, newDevice("d2", "bob", chat.ProviderFirebase, "tok", 2000))
	})
	requireConflict(t, err, "same provider and token, another user")
	err = e.s.Update(e.ctx, func(tx chat.Tx) error {
		return tx.CreateDevice(e.ctx, newDevice("d1", "bob", chat.ProviderFirebase, "other", 2000))
	})
	requireConflict(t, err, "same device id")
	e.createDevices(newDevice("d3", "bob", chat.ProviderAPN, "tok", 3000))
	require.Equal(t, []string{"d3"}, e.deviceIDs("bob"))
}

func testDeviceTouch(t *testing.T, e *env) {
	e.createDevices(newDevice("d1", "alice", chat.ProviderAPN, "aa", 1000), newDevice("d2", "alice", chat.ProviderAPN, "bb", 2000))
	e.update(func(tx chat.Tx) error { return tx.TouchDevice(e.ctx, "d1", at(3000).Time) })
	require.Equal(t, []string{"d2", "d1"}, e.deviceIDs("alice"))
	d := read(e, func(tx chat.Tx) (*chat.Device, error) { return tx.GetDeviceByToken(e.ctx, chat.ProviderAPN, "aa") })
	require.True(t, d.UpdatedAt.Equal(at(3000).Time))
	require.True(t, d.CreatedAt.Equal(at(1000).Time), "createdAt stays")
	err := e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.TouchDevice(e.ctx, "nope", at(1).Time) })
	requireNotFound(t, err)
}

func testDeviceDelete(t *testing.T, e *env) {
	e.createDevices(newDevice("d1", "alice", chat.ProviderAPN, "aa", 1000), newDevice("d2", "alice", chat.ProviderAPN, "bb", 2000),
		newDevice("b1", "bob", chat.ProviderAPN, "cc", 1000))
	err := e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.DeleteDevice(e.ctx, "bob", "d1") })
	requireNotFound(t, err, "another user's device is not deleted")
	require.Equal(t, []string{"d1", "d2"}, e.deviceIDs("alice"))
	e.update(func(tx chat.Tx) error { return tx.DeleteDevice(e.ctx, "alice", "d1") })
	require.Equal(t, []string{"d2"}, e.deviceIDs("alice"))
	// The token is free again.
	e.createDevices(newDevice("b2", "bob", chat.ProviderAPN, "aa", 3000))
	err = e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.DeleteDevice(e.ctx, "alice", "d1") })
	requireNotFound(t, err, "deleted twice")
	var n int
	e.update(func(tx chat.Tx) error {
		var err error
		n, err = tx.DeleteDevices(e.ctx, "bob")
		return err
	})
	require.Equal(t, 2, n)
	require.Empty(t, e.deviceIDs("bob"))
	require.Equal(t, []string{"d2"}, e.deviceIDs("alice"))
}

func testDeviceRollback(t *testing.T, e *env) {
	e.createDevices(newDevice("d1", "alice", chat.ProviderAPN, "aa", 1000))
	boom := errors.New("boom")
	err := e.s.Update(e.ctx, func(tx chat.Tx) error {
		if err := tx.CreateDevice(e.ctx, newDevice("d2", "alice", chat.ProviderAPN, "bb", 2000)); err != nil {
			return err
		}
		if err := tx.DeleteDevice(e.ctx, "alice", "d1"); err != nil {
			return err
		}
		if err := tx.PutNotificationLevel(e.ctx, "alice", "", chat.NotifyNone, at(1).Time); err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.Equal(t, []string{"d1"}, e.deviceIDs("alice"))
	ns := read(e, func(tx chat.Tx) ([]*chat.NotificationSetting, error) {
		return tx.GetNotificationLevels(e.ctx, "alice", []string{""})
	})
	require.Empty(t, ns)
}

// Registrations racing for one user, each listing the user's devices,
// dropping the oldest at the cap and adding one, in one Update: the cap
// holds, because ListDevices in an Update serializes them.
func testDeviceConcurrentCap(t *testing.T, e *env) {
	const limit, n = 3, 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = e.s.Update(e.ctx, func(tx chat.Tx) error {
				ds, err := tx.ListDevices(e.ctx, "alice")
				if err != nil {
					return err
				}
				for len(ds) >= limit {
					if err := tx.DeleteDevice(e.ctx, "alice", ds[0].DeviceID); err != nil {
						return err
					}
					ds = ds[1:]
				}
				return tx.CreateDevice(e.ctx, newDevice(fmt.Sprintf("d%d", i), "alice", chat.ProviderFirebase, fmt.Sprintf("t%d", i), int64(1000+i)))
			})
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, e.deviceIDs("alice"), limit)
}

func testNotificationLevels(t *testing.T, e *env) {
	get := func(user string, ids ...string) map[string]chat.NotificationLevel {
		ns := read(e, func(tx chat.Tx) ([]*chat.NotificationSetting, error) {
			return tx.GetNotificationLevels(e.ctx, user, ids)
		})
		out := map[string]chat.NotificationLevel{}
		for _, n := range ns {
			require.Equal(t, user, n.UserID)
			require.NotNil(t, n.UpdatedAt)
			checkUTC(t, *n.UpdatedAt)
			out[n.ChannelID] = n.Level
		}
		return out
	}
	require.Empty(t, get("alice", "", "c1"), "nothing stored by default")
	e.update(func(tx chat.Tx) error {
		if err := tx.PutNotificationLevel(e.ctx, "alice", "", chat.NotifyMentions, at(1000).Time); err != nil {
			return err
		}
		return tx.PutNotificationLevel(e.ctx, "alice", "c1", chat.NotifyNone, at(1000).Time)
	})
	require.Equal(t, map[string]chat.NotificationLevel{"": chat.NotifyMentions, "c1": chat.NotifyNone}, get("alice", "", "c1", "c2"))
	require.Equal(t, map[string]chat.NotificationLevel{"c1": chat.NotifyNone}, get("alice", "c1"))
	require.Empty(t, get("bob", "", "c1"))
	e.update(func(tx chat.Tx) error {
		return tx.PutNotificationLevel(e.ctx, "alice", "c1", chat.NotifyAll, at(2000).Time)
	})
	ns := read(e, func(tx chat.Tx) ([]*chat.NotificationSetting, error) {
		return tx.GetNotificationLevels(e.ctx, "alice", []string{"c1"})
	})
	require.Len(t, ns, 1)
	require.Equal(t, chat.NotifyAll, ns[0].Level, "replaced")
	require.True(t, ns[0].UpdatedAt.Equal(at(2000).Time))
	e.update(func(tx chat.Tx) error { return tx.DeleteNotificationLevel(e.ctx, "alice", "c1") })
	e.update(func(tx chat.Tx) error { return tx.DeleteNotificationLevel(e.ctx, "alice", "c9") })
	require.Equal(t, map[string]chat.NotificationLevel{"": chat.NotifyMentions}, get("alice", "", "c1"))
}

func testNotificationList(t *testing.T, e *env) {
	e.update(func(tx chat.Tx) error {
		for _, c := range []string{"c2", "", "c1", "c3"} {
			if err := tx.PutNotificationLevel(e.ctx, "alice", c, chat.NotifyNone, at(1000).Time); err != nil {
				return err
			}
		}
		return tx.PutNotificationLevel(e.ctx, "bob", "c1", chat.NotifyNone, at(1000).Time)
	})
	list := func(after string, isAfter bool, limit int) []string {
		ns := read(e, func(tx chat.Tx) ([]*chat.NotificationSetting, error) {
			return tx.ListNotificationLevels(e.ctx, "alice", after, isAfter, limit)
		})
		out := []string{}
		for _, n := range ns {
			out = append(out, n.ChannelID)
		}
		return out
	}
	require.Equal(t, []string{"", "c1", "c2", "c3"}, list("", false, 0))
	require.Equal(t, []string{"c1", "c2"}, list("", true, 2), "after the user's own level")
	require.Equal(t, []string{"c3"}, list("c2", true, 10))
	e.update(func(tx chat.Tx) error { return tx.DeleteNotificationLevels(e.ctx, "alice") })
	require.Empty(t, list("", false, 0))
	ns := read(e, func(tx chat.Tx) ([]*chat.NotificationSetting, error) {
		return tx.GetNotificationLevels(e.ctx, "bob", []string{"c1"})
	})
	require.Len(t, ns, 1, "other users keep theirs")
}

func checkUTC(t *testing.T, ts ...chat.Time) {
	t.Helper()
	for _, v := range ts {
		ct(t, v)
	}
}

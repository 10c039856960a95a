package chat_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

func (e *env) register(actor, user, token string) chat.Device {
	e.t.Helper()
	dl, err := e.svc.RegisterDevice(e.ctx, actor, chat.RegisterDeviceInput{UserID: user, Provider: chat.ProviderFirebase, Token: token})
	require.NoError(e.t, err)
	require.Len(e.t, dl.Devices, 1)
	return dl.Devices[0]
}

// The cap drops the least recently registered device: a device that
// registers again is kept, and its createdAt stays.
func TestDeviceCapDropsLeastRecentlyRegistered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var ds []chat.Device
	for i := range chat.MaxDevicesPerUser {
		ds = append(ds, e.register("ann", "ann", fmt.Sprintf("tok-%d", i)))
		e.clk.Add(time.Second)
	}
	again := e.register("ann", "ann", "tok-0")
	require.Equal(t, ds[0].DeviceID, again.DeviceID)
	require.Equal(t, ds[0].CreatedAt, again.CreatedAt)
	require.True(t, again.UpdatedAt.After(ds[0].UpdatedAt.Time))
	e.clk.Add(time.Second)
	last := e.register("ann", "ann", "tok-new")
	dl, err := e.svc.ListDevices(e.ctx, "ann", "ann")
	require.NoError(t, err)
	require.Len(t, dl.Devices, chat.MaxDevicesPerUser)
	require.Equal(t, last.DeviceID, dl.Devices[0].DeviceID, "most recent first")
	require.Equal(t, again.DeviceID, dl.Devices[1].DeviceID)
	for _, d := range dl.Devices {
		require.NotEqual(t, ds[1].DeviceID, d.DeviceID, "the least recently registered is gone")
	}
	b, err := json.Marshal(dl)
	require.NoError(t, err)
	require.NotContains(t, string(b), "tok-")
}

// Users manage their own devices and levels, admins anyone's; a user's
// channel levels are listed after its own, limit by limit.
func TestNotificationSettingsList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []string{"c1", "c2", "c3"} {
		e.channel(c, "ann")
		_, err := e.svc.SetChannelNotifications(e.ctx, "ann", c, chat.NotifyNone)
		require.NoError(t, err)
	}
	l, more, err := e.svc.ListNotificationSettings(e.ctx, e.admin, "ann", 2)
	require.NoError(t, err)
	require.True(t, more)
	require.Len(t, l.NotificationSettings, 3)
	require.Equal(t, chat.NotificationSetting{UserID: "ann", Level: chat.NotifyAll, EffectiveLevel: chat.NotifyAll}, l.NotificationSettings[0])
	require.Equal(t, "c1", l.NotificationSettings[1].ChannelID)
	require.Equal(t, "c2", l.NotificationSettings[2].ChannelID)
	l, more, err = e.svc.ListNotificationSettings(e.ctx, "ann", "ann", 0)
	require.NoError(t, err)
	require.False(t, more)
	require.Len(t, l.NotificationSettings, 4)
	_, _, err = e.svc.ListNotificationSettings(e.ctx, "bob", "ann", 0)
	require.Equal(t, chat.CodePermissionDenied, chat.ErrorCode(err))

	b, err := json.Marshal(l.NotificationSettings[0])
	require.NoError(t, err)
	require.JSONEq(t, `{"userId":"ann","channelId":null,"level":"all","effectiveLevel":"all","updatedAt":null}`, string(b))
	b, err = json.Marshal(l.NotificationSettings[1])
	require.NoError(t, err)
	require.Contains(t, string(b), `"channelId":"c1"`)
}

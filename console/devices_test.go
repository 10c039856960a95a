package console_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// The user's page lists the user's push devices (never their tokens) and
// notification levels; a device is deleted and the level set with the
// CSRF token only.
func TestDevicesCard(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)
	ctx := context.Background()
	_, err := p.svc.CreateChannel(ctx, p.root.UserID, chat.CreateChannelInput{ChannelID: "room", Type: chat.ChannelTypeStandard, UserIDs: []string{"ann"}})
	require.NoError(t, err)
	apn, err := p.svc.RegisterDevice(ctx, "ann", chat.RegisterDeviceInput{UserID: "ann", Provider: chat.ProviderAPN, Token: "00112233445566778899aabbccddeeff"})
	require.NoError(t, err)
	fcm, err := p.svc.RegisterDevice(ctx, "ann", chat.RegisterDeviceInput{UserID: "ann", Provider: chat.ProviderFirebase, Token: "fcm-secret-token"})
	require.NoError(t, err)
	_, err = p.svc.SetChannelNotifications(ctx, "ann", "room", chat.NotifyMentions)
	require.NoError(t, err)
	apnID, fcmID := apn.Devices[0].DeviceID, fcm.Devices[0].DeviceID

	b := p.browser("10.7.0.3")
	token := b.signedIn()
	_, page := b.get("/admin/users/ann")
	require.Contains(t, page, `id="devices-card"`)
	require.Contains(t, page, `data-device="`+apnID+`"`)
	require.Contains(t, page, `data-device="`+fcmID+`"`)
	require.NotContains(t, page, "fcm-secret-token")
	require.NotContains(t, page, "00112233445566778899")
	require.Contains(t, page, `<strong id="own-level">all</strong> (default)`)
	require.Contains(t, page, `room</a>: mentions`)

	del := "/admin/users/ann/devices/" + apnID + "/delete"
	res, _ := b.post(del, url.Values{})
	require.Equal(t, http.StatusForbidden, res.StatusCode, "no CSRF token")
	dl, err := p.svc.ListDevices(ctx, p.root.UserID, "ann")
	require.NoError(t, err)
	require.Len(t, dl.Devices, 2, "nothing deleted without the token")
	res, _ = b.post(del, url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	_, page = b.get(res.Header.Get("Location"))
	require.Contains(t, page, "Device "+apnID+" deleted.")
	require.NotContains(t, page, `data-device="`+apnID+`"`)
	require.Contains(t, page, `data-device="`+fcmID+`"`)
	res, _ = b.post(del, url.Values{"csrf": {token}})
	_, page = b.get(res.Header.Get("Location"))
	require.Contains(t, page, "not found")

	res, _ = b.post("/admin/users/ann/notifications", url.Values{"level": {"none"}})
	require.Equal(t, http.StatusForbidden, res.StatusCode, "no CSRF token")
	res, _ = b.post("/admin/users/ann/notifications", url.Values{"csrf": {token}, "level": {"loud"}})
	_, page = b.get(res.Header.Get("Location"))
	require.Contains(t, page, "level")
	res, _ = b.post("/admin/users/ann/notifications", url.Values{"csrf": {token}, "level": {"none"}})
	_, page = b.get(res.Header.Get("Location"))
	require.Contains(t, page, `<strong id="own-level">none</strong>`)
	got, err := p.svc.GetUserNotifications(ctx, "ann", "ann")
	require.NoError(t, err)
	require.Equal(t, chat.NotifyNone, got.NotificationSettings[0].Level)
}

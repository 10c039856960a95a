package httpapi_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/client"
	"github.com/chatengine/chat/httpapi"
	"github.com/chatengine/chat/webhook"
)

// A valid Web Push subscription's keys (a P-256 public key and a 16-byte
// secret, base64url).
const (
	testP256dh  = "BNo6ARYkQFH0Z2YNPjVUjqNKzPQ3roYHefpz_HVoo9Cb2sTNBCmmbVe72FdSf1i3l73kW_tsS381GHfJ7ZPsSv8"
	testAuthKey = "8SE5ZM2pOPU4ux2c-FIbLw"
)

func subscription(endpoint string) string {
	return `{"endpoint":"` + endpoint + `","expirationTime":null,"keys":{"p256dh":"` + testP256dh + `","auth":"` + testAuthKey + `"}}`
}

// Devices: registration of each provider, idempotent, moved between
// users, at most 25 per user, never showing the token; refusals name the
// field and change nothing. Notification levels: defaults, set, read back,
// the channel's level and the one that applies.
func testDevices(t *testing.T, e *env) {
	bg := ctx(t)
	alice, bob := e.userClient("alice"), e.userClient("bob")

	// The wire form: {"devices":[{deviceId, userId, provider, createdAt,
	// updatedAt}]}, no token.
	tok, err := e.svc.IssueUserToken(bg, "", "alice", 0)
	require.NoError(t, err)
	auth := []string{"Authorization", "Bearer " + tok.Token}
	raw := e.do("POST", "/users/alice/devices", "application/json", `{"provider":"apn","token":"00112233445566778899AABBCCDDEEFF00112233445566778899aabbccddeeff"}`, auth...)
	require.Equal(t, http.StatusOK, raw.status, "body %s", raw.body)
	devs := raw.json["devices"].([]any)
	require.Len(t, devs, 1)
	d := devs[0].(map[string]any)
	require.ElementsMatch(t, []string{"deviceId", "userId", "provider", "createdAt", "updatedAt"}, keys(d))
	require.Equal(t, "apn", d["provider"])
	require.NotContains(t, string(raw.body), "00112233")
	apnID := d["deviceId"].(string)

	// The same token again (any case): the same device.
	again, err := alice.RegisterDevice(bg, "alice", chat.ProviderAPN, "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff")
	require.NoError(t, err)
	require.Equal(t, apnID, again.DeviceID)

	// Web Push: the subscription as an object or as a JSON string, one
	// device either way.
	raw = e.do("POST", "/users/alice/devices", "application/json",
		`{"provider":"webpush","token":`+subscription("https://push.example.com/s/abc")+`}`, auth...)
	require.Equal(t, http.StatusOK, raw.status, "body %s", raw.body)
	wpID := raw.json["devices"].([]any)[0].(map[string]any)["deviceId"].(string)
	wp, err := alice.RegisterDevice(bg, "alice", chat.ProviderWebPush, subscription("https://push.example.com/s/abc"))
	require.NoError(t, err)
	require.Equal(t, wpID, wp.DeviceID)
	// And as a form: token[endpoint], token[keys][p256dh], ...
	raw = e.do("POST", "/users/alice/devices", "application/x-www-form-urlencoded",
		"provider=webpush&token[endpoint]=https://push.example.com/s/abc&token[keys][p256dh]="+testP256dh+"&token[keys][auth]="+testAuthKey, auth...)
	require.Equal(t, http.StatusOK, raw.status, "body %s", raw.body)
	require.Equal(t, wpID, raw.json["devices"].([]any)[0].(map[string]any)["deviceId"])

	ds, err := alice.ListDevices(bg, "alice")
	require.NoError(t, err)
	require.Equal(t, []string{wpID, apnID}, deviceIDs(ds), "most recently registered first")

	// Bad input: 400000 naming the field, nothing stored.
	for _, c := range []struct{ body, field string }{
		{`{"provider":"pigeon","token":"x"}`, "provider"},
		{`{"token":"x"}`, "provider"},
		{`{"provider":"apn","token":"not hex"}`, "token"},
		{`{"provider":"apn","token":"abcd"}`, "token"},
		{`{"provider":"firebase","token":""}`, "token"},
		{`{"provider":"firebase","token":"has space"}`, "token"},
		{`{"provider":"firebase","token":"` + strings.Repeat("a", 4097) + `"}`, "token"},
		{`{"provider":"firebase","token":{"a":1}}`, "token"},
		{`{"provider":"webpush","token":"not json"}`, "token"},
		{`{"provider":"webpush","token":` + subscription("http://push.example.com/s/1") + `}`, "token.endpoint"},
		{`{"provider":"webpush","token":` + subscription("not a url") + `}`, "token.endpoint"},
		{`{"provider":"webpush","token":{"endpoint":"https://push.example.com/s/1","keys":{"p256dh":"` + testAuthKey + `","auth":"` + testAuthKey + `"}}}`, "token.keys.p256dh"},
		{`{"provider":"webpush","token":{"endpoint":"https://push.example.com/s/1","keys":{"p256dh":"B` + strings.Repeat("A", 86) + `","auth":"` + testAuthKey + `"}}}`, "token.keys.p256dh"},
		{`{"provider":"webpush","token":{"endpoint":"https://push.example.com/s/1","keys":{"p256dh":"` + testP256dh + `","auth":"AAAA"}}}`, "token.keys.auth"},
	} {
		r := e.do("POST", "/users/alice/devices", "application/json", c.body, auth...)
		requireError(t, r, chat.CodeBadRequest, c.field+": ")
		require.Equal(t, []any{map[string]any{"field": c.field}}, wireDetail(t, r), c.body)
	}
	ds, err = alice.ListDevices(bg, "alice")
	require.NoError(t, err)
	require.Len(t, ds, 2)

	// Others: refused for a user, allowed for an admin.
	_, err = bob.RegisterDevice(bg, "alice", chat.ProviderFirebase, "fcm-bob")
	requireCode(t, err, chat.CodePermissionDenied)
	_, err = bob.ListDevices(bg, "alice")
	requireCode(t, err, chat.CodePermissionDenied)
	requireCode(t, bob.DeleteDevice(bg, "alice", apnID), chat.CodePermissionDenied)
	requireCode(t, bob.DeleteDevice(bg, "bob", apnID), chat.CodeNotFound)
	byAdmin, err := e.c.ListDevices(bg, "alice")
	require.NoError(t, err)
	require.Len(t, byAdmin, 2)

	// A token registered by another user moves to the new one.
	moved, err := bob.RegisterDevice(bg, "bob", chat.ProviderAPN, "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff")
	require.NoError(t, err)
	require.NotEqual(t, apnID, moved.DeviceID)
	ds, err = alice.ListDevices(bg, "alice")
	require.NoError(t, err)
	require.Equal(t, []string{wpID}, deviceIDs(ds))

	// At most 25: the least recently registered goes.
	first, err := e.c.RegisterDevice(bg, "carol", chat.ProviderFirebase, "fcm-0")
	require.NoError(t, err)
	second, err := e.c.RegisterDevice(bg, "carol", chat.ProviderFirebase, "fcm-1")
	require.NoError(t, err)
	for i := 2; i < chat.MaxDevicesPerUser; i++ {
		_, err := e.c.RegisterDevice(bg, "carol", chat.ProviderFirebase, fmt.Sprintf("fcm-%d", i))
		require.NoError(t, err)
	}
	// fcm-0 registered again: now the most recent, so fcm-1 is the oldest.
	// Registration times have millisecond resolution (registrations within
	// one millisecond are ordered by device id): each of the next two
	// registrations starts in a later millisecond than the one before.
	laterMillisecond()
	_, err = e.c.RegisterDevice(bg, "carol", chat.ProviderFirebase, "fcm-0")
	require.NoError(t, err)
	laterMillisecond()
	last, err := e.c.RegisterDevice(bg, "carol", chat.ProviderFirebase, "fcm-25")
	require.NoError(t, err)
	ds, err = e.c.ListDevices(bg, "carol")
	require.NoError(t, err)
	require.Len(t, ds, chat.MaxDevicesPerUser)
	require.Equal(t, last.DeviceID, ds[0].DeviceID)
	require.Contains(t, deviceIDs(ds), first.DeviceID)
	require.NotContains(t, deviceIDs(ds), second.DeviceID)

	// Delete: own device, then it is gone.
	require.NoError(t, alice.DeleteDevice(bg, "alice", wpID))
	requireCode(t, alice.DeleteDevice(bg, "alice", wpID), chat.CodeNotFound)
	ds, err = alice.ListDevices(bg, "alice")
	require.NoError(t, err)
	require.Empty(t, ds)
	raw = e.do("GET", "/users/alice/devices", "", "", auth...)
	require.Equal(t, `{"devices":[]}`, strings.TrimSpace(string(raw.body)))

	// Notification levels: all by default, then set.
	raw = e.do("GET", "/users/alice/notifications", "", "", auth...)
	require.Equal(t, http.StatusOK, raw.status, "body %s", raw.body)
	ns := raw.json["notificationSettings"].([]any)
	require.Equal(t, map[string]any{"userId": "alice", "channelId": nil, "level": "all", "effectiveLevel": "all", "updatedAt": nil}, ns[0])
	set, err := alice.SetUserNotifications(bg, "alice", chat.NotifyMentions)
	require.NoError(t, err)
	require.Equal(t, chat.NotifyMentions, set.Level)
	require.NotNil(t, set.UpdatedAt)
	got, err := e.c.UserNotifications(bg, "alice")
	require.NoError(t, err)
	require.Equal(t, chat.NotifyMentions, got.EffectiveLevel)
	_, err = bob.SetUserNotifications(bg, "alice", chat.NotifyNone)
	requireCode(t, err, chat.CodePermissionDenied)
	_, err = bob.UserNotifications(bg, "alice")
	requireCode(t, err, chat.CodePermissionDenied)
	_, err = e.c.SetUserNotifications(bg, "bob", chat.NotifyNone)
	require.NoError(t, err)
	r := e.do("PUT", "/users/alice/notifications", "application/json", `{"level":"default"}`, auth...)
	requireError(t, r, chat.CodeBadRequest, "level: ")
	r = e.do("PUT", "/users/alice/notifications", "application/json", `{}`, auth...)
	requireError(t, r, chat.CodeBadRequest, "level: ")

	// A channel's level: the member's own; default follows the user's.
	_, err = e.c.CreateChannel(bg, client.CreateChannelRequest{ChannelID: "n", Type: "standard", UserIDs: []string{"alice"}})
	require.NoError(t, err)
	cs, err := alice.ChannelNotifications(bg, "n")
	require.NoError(t, err)
	require.Equal(t, chat.NotificationSetting{UserID: "alice", ChannelID: "n", Level: chat.NotifyDefault, EffectiveLevel: chat.NotifyMentions}, *cs)
	cs, err = alice.SetChannelNotifications(bg, "n", chat.NotifyNone)
	require.NoError(t, err)
	require.Equal(t, chat.NotifyNone, cs.Level)
	require.Equal(t, chat.NotifyNone, cs.EffectiveLevel)
	raw = e.do("GET", "/channel/n/notifications", "", "", auth...)
	require.Equal(t, "n", raw.json["notificationSettings"].([]any)[0].(map[string]any)["channelId"])
	cs, err = alice.SetChannelNotifications(bg, "n", chat.NotifyDefault)
	require.NoError(t, err)
	require.Equal(t, chat.NotificationSetting{UserID: "alice", ChannelID: "n", Level: chat.NotifyDefault, EffectiveLevel: chat.NotifyMentions}, *cs)
	_, err = bob.SetChannelNotifications(bg, "n", chat.NotifyNone)
	requireCode(t, err, chat.CodePermissionDenied)
	_, err = bob.ChannelNotifications(bg, "n")
	requireCode(t, err, chat.CodePermissionDenied)
	r = e.do("PUT", "/channel/n/notifications", "application/json", `{"level":"loud"}`, auth...)
	requireError(t, r, chat.CodeBadRequest, "level: ")
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func deviceIDs(ds []chat.Device) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.DeviceID)
	}
	return out
}

// Web Push endpoints: https only, and no private address, unless the
// server allows private addresses (then http too), as for webhooks.
func TestDeviceEndpoints(t *testing.T) {
	t.Parallel()
	register := func(e *env, endpoint string) *rawResponse {
		return e.do("POST", "/users/alice/devices", "application/json", `{"provider":"webpush","token":`+subscription(endpoint)+`}`)
	}
	strict := newEnv(t, memoryStore, func(_ *httpapi.Config, c *chat.Config) {
		c.WebhookURLCheck = func(u string) error { return webhook.CheckURL(u, false) }
	})
	for _, u := range []string{"http://push.example.com/1", "https://127.0.0.1/1", "https://localhost/1", "https://10.1.2.3/1", "ftp://push.example.com/1"} {
		requireError(t, register(strict, u), chat.CodeBadRequest, "token.endpoint: ")
	}
	require.Equal(t, http.StatusOK, register(strict, "https://push.example.com/1").status)

	open := newEnv(t, memoryStore, func(_ *httpapi.Config, c *chat.Config) {
		c.AllowPrivatePush = true
		c.WebhookURLCheck = func(u string) error { return webhook.CheckURL(u, true) }
	})
	for _, u := range []string{"http://127.0.0.1:8080/1", "https://localhost/1", "http://push.example.com/1"} {
		r := register(open, u)
		require.Equal(t, http.StatusOK, r.status, "%s: %s", u, r.body)
	}
	requireError(t, register(open, "ftp://push.example.com/1"), chat.CodeBadRequest, "token.endpoint: ")
}

// Registrations racing on Postgres, where write transactions run at once:
// several users register one token and one user registers more devices
// than the cap, concurrently. Every call succeeds (a registration that
// loses the race for a token runs again and finds it), the token ends
// with exactly one device, and the cap holds.
func TestDevicesConcurrentPostgres(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the Postgres run is skipped in -short mode")
	}
	e := newEnv(t, postgresStore)
	bg := ctx(t)
	const n = 8
	errs := make([]error, 2*n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			user := fmt.Sprintf("u%d", i)
			_, errs[i] = e.svc.RegisterDevice(bg, user, chat.RegisterDeviceInput{UserID: user, Provider: chat.ProviderFirebase, Token: "shared-token"})
		}()
		go func() {
			defer wg.Done()
			<-start
			for j := range 4 {
				_, err := e.svc.RegisterDevice(bg, "many", chat.RegisterDeviceInput{UserID: "many", Provider: chat.ProviderFirebase, Token: fmt.Sprintf("t-%d-%d", i, j)})
				if err != nil {
					errs[n+i] = err
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	owners := 0
	for i := range n {
		dl, err := e.svc.ListDevices(bg, e.admin, fmt.Sprintf("u%d", i))
		require.NoError(t, err)
		owners += len(dl.Devices)
	}
	require.Equal(t, 1, owners, "one device has the shared token")
	dl, err := e.svc.ListDevices(bg, e.admin, "many")
	require.NoError(t, err)
	require.Len(t, dl.Devices, chat.MaxDevicesPerUser)
}

// GET /push/vapid gives any caller the server's VAPID public key, the
// same to every caller.
func TestPushVAPIDKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memoryStore)
	bg := context.Background()
	alice := e.userClient("alice")
	k, err := alice.PushVAPIDKey(bg)
	require.NoError(t, err)
	raw, err := base64.RawURLEncoding.DecodeString(k)
	require.NoError(t, err)
	require.Len(t, raw, 65)
	byAdmin, err := e.c.PushVAPIDKey(bg)
	require.NoError(t, err)
	require.Equal(t, k, byAdmin)
	want, err := e.svc.PushVAPIDKey()
	require.NoError(t, err)
	require.Equal(t, want.PublicKey, k)
}

// laterMillisecond returns once the clock has reached the millisecond
// after the current one.
func laterMillisecond() {
	ms := time.Now().UnixMilli()
	for time.Now().UnixMilli() <= ms {
		time.Sleep(100 * time.Microsecond)
	}
}

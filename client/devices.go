package client

import (
	"context"
	"errors"
	"net/http"

	chat "github.com/chatengine/chat"
)

// RegisterDevice registers a push device for userID (POST
// /users/{userId}/devices, ext; the caller itself, or anyone for an
// admin) and returns it. provider is chat.ProviderAPN, ProviderFirebase or
// ProviderWebPush; for Web Push, token is the browser's PushSubscription
// as JSON. Registering a token again returns the same device.
func (c *Client) RegisterDevice(ctx context.Context, userID, provider, token string) (*chat.Device, error) {
	in := struct {
		Provider string `json:"provider"`
		Token    string `json:"token"`
	}{provider, token}
	var out chat.DeviceList
	if err := c.do(ctx, http.MethodPost, "/users/"+esc(userID)+"/devices", nil, in, &out); err != nil {
		return nil, err
	}
	if len(out.Devices) == 0 {
		return nil, errors.New("chat api: the response holds no device")
	}
	return &out.Devices[0], nil
}

// ListDevices returns the push devices of userID, most recently
// registered first (GET /users/{userId}/devices, ext).
func (c *Client) ListDevices(ctx context.Context, userID string) ([]chat.Device, error) {
	var out chat.DeviceList
	if err := c.do(ctx, http.MethodGet, "/users/"+esc(userID)+"/devices", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Devices, nil
}

// DeleteDevice deletes a push device of userID (DELETE
// /users/{userId}/devices/{deviceId}, ext).
func (c *Client) DeleteDevice(ctx context.Context, userID, deviceID string) error {
	return c.action(ctx, http.MethodDelete, "/users/"+esc(userID)+"/devices/"+esc(deviceID), nil)
}

func oneSetting(l *chat.NotificationSettingList, err error) (*chat.NotificationSetting, error) {
	if err != nil {
		return nil, err
	}
	if len(l.NotificationSettings) == 0 {
		return nil, errors.New("chat api: the response holds no notification setting")
	}
	return &l.NotificationSettings[0], nil
}

type levelBody struct {
	Level chat.NotificationLevel `json:"level"`
}

// SetUserNotifications sets the notification level of userID: all,
// mentions or none (PUT /users/{userId}/notifications, ext).
func (c *Client) SetUserNotifications(ctx context.Context, userID string, level chat.NotificationLevel) (*chat.NotificationSetting, error) {
	var out chat.NotificationSettingList
	err := c.do(ctx, http.MethodPut, "/users/"+esc(userID)+"/notifications", nil, levelBody{level}, &out)
	return oneSetting(&out, err)
}

// UserNotifications returns the notification level of userID (GET
// /users/{userId}/notifications, ext).
func (c *Client) UserNotifications(ctx context.Context, userID string) (*chat.NotificationSetting, error) {
	var out chat.NotificationSettingList
	err := c.do(ctx, http.MethodGet, "/users/"+esc(userID)+"/notifications", nil, nil, &out)
	return oneSetting(&out, err)
}

// SetChannelNotifications sets the caller's own notification level for a
// channel where it is a member: all, mentions, none, or default to follow
// its own level (PUT /channel/{channelId}/notifications, ext).
func (c *Client) SetChannelNotifications(ctx context.Context, channelID string, level chat.NotificationLevel) (*chat.NotificationSetting, error) {
	var out chat.NotificationSettingList
	err := c.do(ctx, http.MethodPut, "/channel/"+esc(channelID)+"/notifications", nil, levelBody{level}, &out)
	return oneSetting(&out, err)
}

// ChannelNotifications returns the caller's own notification setting for
// a channel, with the level that applies (GET
// /channel/{channelId}/notifications, ext).
func (c *Client) ChannelNotifications(ctx context.Context, channelID string) (*chat.NotificationSetting, error) {
	var out chat.NotificationSettingList
	err := c.do(ctx, http.MethodGet, "/channel/"+esc(channelID)+"/notifications", nil, nil, &out)
	return oneSetting(&out, err)
}

// PushVAPIDKey returns the server's VAPID public key for Web Push
// subscriptions (GET /push/vapid, ext): the uncompressed P-256 point in
// base64url, PushManager.subscribe's applicationServerKey.
func (c *Client) PushVAPIDKey(ctx context.Context) (string, error) {
	var out chat.VAPIDPublicKey
	if err := c.do(ctx, http.MethodGet, "/push/vapid", nil, nil, &out); err != nil {
		return "", err
	}
	return out.PublicKey, nil
}

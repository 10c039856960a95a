package chat

import (
	"context"
	"crypto/ecdh"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The push providers a device can be registered with.
const (
	ProviderAPN      = "apn"      // Apple Push Notification service
	ProviderFirebase = "firebase" // Firebase Cloud Messaging
	ProviderWebPush  = "webpush"  // Web Push (a browser's PushSubscription)
)

// MaxDevicesPerUser is how many devices one user keeps: registering one
// more removes the least recently registered.
const MaxDevicesPerUser = 25

// Device is a push device of a user. The token addresses the device at
// its provider and is never on the wire: the resource is {deviceId,
// userId, provider, createdAt, updatedAt}. UpdatedAt is the last
// registration of the token (a re-registration touches it).
type Device struct {
	DeviceID  string `json:"deviceId"`
	UserID    string `json:"userId"`
	Provider  string `json:"provider"`
	Token     string `json:"-"`
	CreatedAt Time   `json:"createdAt"`
	UpdatedAt Time   `json:"updatedAt"`
}

// DeviceList is the response of the device operations: {"devices":[...]}.
type DeviceList struct {
	Devices []Device `json:"devices"`
}

// DeviceStore persists push devices. A token is unique per provider.
type DeviceStore interface {
	// CreateDevice inserts d. CodeConflict when its id exists or when a
	// device with the same provider and token exists.
	CreateDevice(ctx context.Context, d *Device) error
	// GetDeviceByToken returns the device with this provider and token,
	// whoever owns it, or CodeNotFound. In an Update, adapters whose
	// write transactions run concurrently (Postgres) hold the device's
	// row until the transaction ends, since registration reads it to move
	// or touch it.
	GetDeviceByToken(ctx context.Context, provider, token string) (*Device, error)
	// TouchDevice sets the device's updatedAt; CodeNotFound if absent.
	TouchDevice(ctx context.Context, deviceID string, now time.Time) error
	// ListDevices returns the devices of the user in (UpdatedAt,
	// DeviceID) ascending order: least recently registered first. In an
	// Update, adapters whose write transactions run concurrently
	// (Postgres) first take a lock of the user's devices held until the
	// transaction ends, so that registrations for one user run one after
	// another and the per-user cap holds.
	ListDevices(ctx context.Context, userID string) ([]*Device, error)
	// DeleteDevice deletes the user's device; CodeNotFound when the user
	// has no device with this id (another user's device is not deleted).
	DeleteDevice(ctx context.Context, userID, deviceID string) error
	// DeleteDevices deletes every device of the user and returns how many
	// there were.
	DeleteDevices(ctx context.Context, userID string) (int, error)
}

// NotificationLevel says which new messages a user is notified of.
type NotificationLevel string

// The notification levels. NotifyDefault is only a channel's level: the
// channel follows the user's own level.
const (
	NotifyAll      NotificationLevel = "all"
	NotifyMentions NotificationLevel = "mentions"
	NotifyNone     NotificationLevel = "none"
	NotifyDefault  NotificationLevel = "default"
)

// NotificationSetting is a user's notification level: its own (ChannelID
// empty, null on the wire) or for one channel. Level is what was set
// (NotifyAll when the user never set its own; NotifyDefault when the
// channel has none); EffectiveLevel is what applies: the channel's level,
// else the user's. UpdatedAt is null when the level was never set.
type NotificationSetting struct {
	UserID         string            `json:"userId"`
	ChannelID      string            `json:"channelId"`
	Level          NotificationLevel `json:"level"`
	EffectiveLevel NotificationLevel `json:"effectiveLevel"`
	UpdatedAt      *Time             `json:"updatedAt"`
}

// MarshalJSON writes the setting with channelId null for a user's own
// level.
func (n NotificationSetting) MarshalJSON() ([]byte, error) {
	type plain NotificationSetting
	var ch *string
	if n.ChannelID != "" {
		ch = &n.ChannelID
	}
	return json.Marshal(struct {
		plain
		ChannelID *string `json:"channelId"`
	}{plain(n), ch})
}

// NotificationSettingList is the response of the notification settings
// operations: {"notificationSettings":[...]}.
type NotificationSettingList struct {
	NotificationSettings []NotificationSetting `json:"notificationSettings"`
}

// NotificationStore persists notification levels, one per user and
// channel ("" for the user's own).
type NotificationStore interface {
	// PutNotificationLevel stores the level of (userID, channelID),
	// replacing the one stored.
	PutNotificationLevel(ctx context.Context, userID, channelID string, level NotificationLevel, now time.Time) error
	// DeleteNotificationLevel removes the level of (userID, channelID);
	// no-op when absent.
	DeleteNotificationLevel(ctx context.Context, userID, channelID string) error
	// GetNotificationLevels returns the stored settings of the user for
	// the given channel ids ("" for its own level), in no order; ids
	// without a stored level are left out. Only UserID, ChannelID, Level
	// and UpdatedAt are set.
	GetNotificationLevels(ctx context.Context, userID string, channelIDs []string) ([]*NotificationSetting, error)
	// ListNotificationLevels returns up to limit stored settings of the
	// user ordered by channel id ("" first), those after afterChannelID
	// when after is true.
	ListNotificationLevels(ctx context.Context, userID string, afterChannelID string, after bool, limit int) ([]*NotificationSetting, error)
	// DeleteNotificationLevels deletes every stored setting of the user.
	DeleteNotificationLevels(ctx context.Context, userID string) error
}

// RegisterDeviceInput is the input of Service.RegisterDevice. For Web Push the
// token is the browser's PushSubscription as JSON ({"endpoint", "keys":
// {"p256dh", "auth"}}).
type RegisterDeviceInput struct {
	UserID   string
	Provider string
	Token    string
}

// maxTokenBytes bounds a Firebase token and a Web Push subscription.
const maxTokenBytes = 4096

// webPushSubscription is the part of a PushSubscription a push needs, and
// the form in which it is stored.
type webPushSubscription struct {
	Endpoint string `json:"endpoint"`
	Keys     struct {
		P256dh string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
}

// checkDeviceToken validates token for provider and returns the form it is
// stored in: lowercase hex for APNs, the token for Firebase, the
// subscription's compact JSON (endpoint and keys only) for Web Push.
func (s *Service) checkDeviceToken(provider, token string) (string, error) {
	switch provider {
	case ProviderAPN:
		b, err := hex.DecodeString(token)
		if err != nil || len(b) < 16 || len(b) > 100 {
			return "", invalid("token", "must be an APNs device token: 32 to 200 hexadecimal digits")
		}
		return strings.ToLower(token), nil
	case ProviderFirebase:
		if token == "" || len(token) > maxTokenBytes || strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return "", invalid("token", "must be a Firebase registration token: 1 to %d bytes without spaces or control characters", maxTokenBytes)
		}
		return token, nil
	case ProviderWebPush:
		if token == "" || len(token) > maxTokenBytes {
			return "", invalid("token", "must be a PushSubscription of at most %d bytes of JSON", maxTokenBytes)
		}
		var sub webPushSubscription
		if err := json.Unmarshal([]byte(token), &sub); err != nil {
			return "", invalid("token", "must be a PushSubscription as JSON: {\"endpoint\", \"keys\":{\"p256dh\", \"auth\"}}")
		}
		if err := s.checkPushEndpoint(sub.Endpoint); err != nil {
			return "", err
		}
		p, err := decodeKey(sub.Keys.P256dh)
		if err == nil {
			_, err = ecdh.P256().NewPublicKey(p)
		}
		if err != nil || len(p) != 65 {
			return "", invalid("token.keys.p256dh", "must be an uncompressed P-256 public key (65 bytes) in base64url")
		}
		a, err := decodeKey(sub.Keys.Auth)
		if err != nil || len(a) != 16 {
			return "", invalid("token.keys.auth", "must be a 16-byte authentication secret in base64url")
		}
		b, err := json.Marshal(sub)
		if err != nil {
			return "", err
		}
		return string(b), nil
	}
	return "", invalid("provider", "must be %s, %s or %s", ProviderAPN, ProviderFirebase, ProviderWebPush)
}

// decodeKey decodes base64url, padded or not.
func decodeKey(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// checkPushEndpoint vets a Web Push endpoint: an https URL (http too with
// Config.AllowPrivatePush) that passes Config.WebhookURLCheck, the address
// rules of webhook URLs.
func (s *Service) checkPushEndpoint(raw string) error {
	const field = "token.endpoint"
	if raw == "" {
		return invalid(field, "is required")
	}
	if len(raw) > 2048 || hasControl(raw) {
		return invalid(field, "must be at most 2048 characters without control characters")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || (u.Scheme != "https" && (u.Scheme != "http" || !s.cfg.AllowPrivatePush)) {
		if s.cfg.AllowPrivatePush {
			return invalid(field, "must be an http or https URL without credentials")
		}
		return invalid(field, "must be an https URL without credentials")
	}
	if s.cfg.WebhookURLCheck != nil {
		if err := s.cfg.WebhookURLCheck(raw); err != nil {
			return invalid(field, "%s", err.Error())
		}
	}
	return nil
}

// pushAction is the action of managing userID's devices or notification
// level: open to the user itself, admins only for others.
func pushAction(actorID, userID string) action {
	if actorID == userID {
		return actOwnPush
	}
	return actUserPush
}

// RegisterDevice registers a push device for in.UserID (the caller
// itself, or anyone for an admin) and returns it. The user is created on
// first reference. Registering a token again is idempotent: the same
// device is returned (its updatedAt moved to now); a token registered by
// another user moves to this one (the other user's device is deleted and
// a new device made), since a device receives the pushes of whoever signed
// in on it last. A user keeps at most MaxDevicesPerUser devices: the least
// recently registered ones are deleted. Errors: CodeBadRequest (the field
// named), CodePermissionDenied.
func (s *Service) RegisterDevice(ctx context.Context, actorID string, in RegisterDeviceInput) (*DeviceList, error) {
	if err := s.checkID("userId", in.UserID); err != nil {
		return nil, err
	}
	token, err := s.checkDeviceToken(in.Provider, in.Token)
	if err != nil {
		return nil, err
	}
	var out *Device
	// Two registrations of one new token by different users may both
	// insert it where write transactions run at once (Postgres); the
	// loser's unique index refuses it (CodeConflict) and it runs again,
	// finding the token.
	for attempt := 0; ; attempt++ {
		out, err = s.registerDevice(ctx, actorID, in, token)
		if ErrorCode(err) != CodeConflict || attempt == 4 {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return &DeviceList{Devices: []Device{*out}}, nil
}

// registerDevice is one run of RegisterDevice's transaction.
func (s *Service) registerDevice(ctx context.Context, actorID string, in RegisterDeviceInput, token string) (*Device, error) {
	var out *Device
	err := s.update(ctx, func(tx Tx, _ *events) error {
		if _, err := s.authorize(ctx, tx, actorID, pushAction(actorID, in.UserID), ""); err != nil {
			return err
		}
		now := s.Now()
		if _, err := tx.EnsureUsers(ctx, []string{in.UserID}, now.Time); err != nil {
			return err
		}
		// The user's devices are locked first (see ListDevices), so two
		// registrations for one user run one after the other.
		ds, err := tx.ListDevices(ctx, in.UserID)
		if err != nil {
			return err
		}
		old, err := tx.GetDeviceByToken(ctx, in.Provider, token)
		switch {
		case err != nil && ErrorCode(err) != CodeNotFound:
			return err
		case err == nil && old.UserID == in.UserID:
			if err := tx.TouchDevice(ctx, old.DeviceID, now.Time); err != nil {
				return err
			}
			old.UpdatedAt = now
			out = old
			return nil
		case err == nil:
			if err := tx.DeleteDevice(ctx, old.UserID, old.DeviceID); err != nil {
				return err
			}
		}
		for len(ds) >= MaxDevicesPerUser {
			if err := tx.DeleteDevice(ctx, in.UserID, ds[0].DeviceID); err != nil {
				return err
			}
			ds = ds[1:]
		}
		out = &Device{DeviceID: s.newID(), UserID: in.UserID, Provider: in.Provider, Token: token, CreatedAt: now, UpdatedAt: now}
		return tx.CreateDevice(ctx, out)
	})
	return out, err
}

// ListDevices returns the devices of userID (the caller itself, or anyone
// for an admin), most recently registered first. Errors: CodeBadRequest,
// CodePermissionDenied.
func (s *Service) ListDevices(ctx context.Context, actorID, userID string) (*DeviceList, error) {
	if err := s.checkID("userId", userID); err != nil {
		return nil, err
	}
	out := &DeviceList{Devices: []Device{}}
	err := s.view(ctx, func(tx Tx) error {
		if _, err := s.authorize(ctx, tx, actorID, pushAction(actorID, userID), ""); err != nil {
			return err
		}
		ds, err := tx.ListDevices(ctx, userID)
		if err != nil {
			return err
		}
		for _, d := range slices.Backward(ds) {
			out.Devices = append(out.Devices, *d)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteDevice deletes a device of userID (the caller itself, or anyone
// for an admin). Errors: CodeBadRequest, CodePermissionDenied,
// CodeNotFound (no such device of this user).
func (s *Service) DeleteDevice(ctx context.Context, actorID, userID, deviceID string) error {
	if err := s.checkID("userId", userID); err != nil {
		return err
	}
	if err := s.checkID("deviceId", deviceID); err != nil {
		return err
	}
	return s.update(ctx, func(tx Tx, _ *events) error {
		if _, err := s.authorize(ctx, tx, actorID, pushAction(actorID, userID), ""); err != nil {
			return err
		}
		if err := tx.DeleteDevice(ctx, userID, deviceID); err != nil {
			if ErrorCode(err) == CodeNotFound {
				return Errorf(CodeNotFound, "device %s of user %s not found", quote(deviceID), quote(userID))
			}
			return err
		}
		return nil
	})
}

// checkLevel validates a notification level; NotifyDefault only where
// channel is set.
func checkLevel(level NotificationLevel, channel bool) error {
	switch level {
	case NotifyAll, NotifyMentions, NotifyNone:
		return nil
	case NotifyDefault:
		if channel {
			return nil
		}
	}
	if channel {
		return invalid("level", "must be all, mentions, none or default")
	}
	return invalid("level", "must be all, mentions or none")
}

// userSetting returns the user's own setting, NotifyAll when none is
// stored.
func userSetting(ctx context.Context, tx Tx, userID string) (NotificationSetting, error) {
	ns, err := tx.GetNotificationLevels(ctx, userID, []string{""})
	if err != nil {
		return NotificationSetting{}, err
	}
	out := NotificationSetting{UserID: userID, Level: NotifyAll, EffectiveLevel: NotifyAll}
	if len(ns) > 0 {
		out.Level, out.EffectiveLevel, out.UpdatedAt = ns[0].Level, ns[0].Level, ns[0].UpdatedAt
	}
	return out, nil
}

// channelSetting returns the user's setting for the channel, with the
// effective level.
func channelSetting(ctx context.Context, tx Tx, userID, channelID string) (NotificationSetting, error) {
	ns, err := tx.GetNotificationLevels(ctx, userID, []string{"", channelID})
	if err != nil {
		return NotificationSetting{}, err
	}
	out := NotificationSetting{UserID: userID, ChannelID: channelID, Level: NotifyDefault, EffectiveLevel: NotifyAll}
	for _, n := range ns {
		if n.ChannelID == "" && out.Level == NotifyDefault {
			out.EffectiveLevel = n.Level
		}
		if n.ChannelID == channelID {
			out.Level, out.EffectiveLevel, out.UpdatedAt = n.Level, n.Level, n.UpdatedAt
		}
	}
	return out, nil
}

// SetUserNotifications sets the notification level of userID (the caller
// itself, or anyone for an admin): NotifyAll, NotifyMentions or
// NotifyNone. The user is created on first reference. Errors:
// CodeBadRequest, CodePermissionDenied.
func (s *Service) SetUserNotifications(ctx context.Context, actorID, userID string, level NotificationLevel) (*NotificationSettingList, error) {
	if err := s.checkID("userId", userID); err != nil {
		return nil, err
	}
	if err := checkLevel(level, false); err != nil {
		return nil, err
	}
	var out NotificationSetting
	err := s.update(ctx, func(tx Tx, _ *events) error {
		if _, err := s.authorize(ctx, tx, actorID, pushAction(actorID, userID), ""); err != nil {
			return err
		}
		now := s.Now()
		if _, err := tx.EnsureUsers(ctx, []string{userID}, now.Time); err != nil {
			return err
		}
		if err := tx.PutNotificationLevel(ctx, userID, "", level, now.Time); err != nil {
			return err
		}
		out = NotificationSetting{UserID: userID, Level: level, EffectiveLevel: level, UpdatedAt: &now}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &NotificationSettingList{NotificationSettings: []NotificationSetting{out}}, nil
}

// GetUserNotifications returns the notification level of userID (the
// caller itself, or anyone for an admin); NotifyAll when never set.
// Errors: CodeBadRequest, CodePermissionDenied.
func (s *Service) GetUserNotifications(ctx context.Context, actorID, userID string) (*NotificationSettingList, error) {
	if err := s.checkID("userId", userID); err != nil {
		return nil, err
	}
	var out NotificationSetting
	err := s.view(ctx, func(tx Tx) error {
		if _, err := s.authorize(ctx, tx, actorID, pushAction(actorID, userID), ""); err != nil {
			return err
		}
		var err error
		out, err = userSetting(ctx, tx, userID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &NotificationSettingList{NotificationSettings: []NotificationSetting{out}}, nil
}

// SetChannelNotifications sets the caller's own notification level for a
// channel where it is a member: NotifyAll, NotifyMentions, NotifyNone, or
// NotifyDefault to follow its own level again. The setting is kept when
// the caller leaves the channel and applies again if it returns. Errors:
// CodeBadRequest, CodePermissionDenied (not a member), CodeUserBanned.
func (s *Service) SetChannelNotifications(ctx context.Context, actorID, channelID string, level NotificationLevel) (*NotificationSettingList, error) {
	if err := s.checkID("channelId", channelID); err != nil {
		return nil, err
	}
	if err := checkLevel(level, true); err != nil {
		return nil, err
	}
	var out NotificationSetting
	err := s.update(ctx, func(tx Tx, _ *events) error {
		if _, err := s.authorize(ctx, tx, actorID, actChannelNotify, channelID); err != nil {
			return err
		}
		var err error
		if level == NotifyDefault {
			err = tx.DeleteNotificationLevel(ctx, actorID, channelID)
		} else {
			err = tx.PutNotificationLevel(ctx, actorID, channelID, level, s.now())
		}
		if err != nil {
			return err
		}
		out, err = channelSetting(ctx, tx, actorID, channelID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &NotificationSettingList{NotificationSettings: []NotificationSetting{out}}, nil
}

// GetChannelNotifications returns the caller's own notification setting
// for a channel where it is a member. Errors: as SetChannelNotifications.
func (s *Service) GetChannelNotifications(ctx context.Context, actorID, channelID string) (*NotificationSettingList, error) {
	if err := s.checkID("channelId", channelID); err != nil {
		return nil, err
	}
	var out NotificationSetting
	err := s.view(ctx, func(tx Tx) error {
		if _, err := s.authorize(ctx, tx, actorID, actChannelNotify, channelID); err != nil {
			return err
		}
		var err error
		out, err = channelSetting(ctx, tx, actorID, channelID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &NotificationSettingList{NotificationSettings: []NotificationSetting{out}}, nil
}

// ListNotificationSettings returns the notification settings of userID
// (the caller itself, or anyone for an admin): its own level first, then
// up to limit (at most 100; 0: 100) of its channel levels in channelId
// order, and whether there are more. Errors: CodeBadRequest,
// CodePermissionDenied.
func (s *Service) ListNotificationSettings(ctx context.Context, actorID, userID string, limit int) (*NotificationSettingList, bool, error) {
	if err := s.checkID("userId", userID); err != nil {
		return nil, false, err
	}
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	out := &NotificationSettingList{}
	more := false
	err := s.view(ctx, func(tx Tx) error {
		if _, err := s.authorize(ctx, tx, actorID, pushAction(actorID, userID), ""); err != nil {
			return err
		}
		own, err := userSetting(ctx, tx, userID)
		if err != nil {
			return err
		}
		ns, err := tx.ListNotificationLevels(ctx, userID, "", true, limit+1)
		if err != nil {
			return err
		}
		if more = len(ns) > limit; more {
			ns = ns[:limit]
		}
		out.NotificationSettings = append(out.NotificationSettings, own)
		for _, n := range ns {
			out.NotificationSettings = append(out.NotificationSettings, NotificationSetting{UserID: userID,
				ChannelID: n.ChannelID, Level: n.Level, EffectiveLevel: n.Level, UpdatedAt: n.UpdatedAt})
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return out, more, nil
}

package httpapi

import (
	"context"
	"encoding/json"
	"net/http"

	chat "github.com/chatengine/chat"
)

// registerDevice serves POST /users/{userId}/devices {provider, token}:
// {"devices":[device]}. A Web Push token may be the PushSubscription as
// an object or as a JSON string.
func (h *handler) registerDevice(w http.ResponseWriter, r *http.Request) error {
	id, err := pathParam(r, "userId")
	if err != nil {
		return err
	}
	p, err := h.decode(w, r)
	if err != nil {
		return err
	}
	in := chat.RegisterDeviceInput{UserID: id, Provider: p.str("provider")}
	if in.Provider == chat.ProviderWebPush && p.has("token") {
		if _, ok := p.get("token").(map[string]any); ok {
			b, err := json.Marshal(p.object("token"))
			if err != nil {
				return badRequest("token", "must be a PushSubscription")
			}
			in.Token = string(b)
		}
	}
	if in.Token == "" {
		in.Token = p.str("token")
	}
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.RegisterDevice(r.Context(), actor(r), in)
	return h.reply(w, out, err)
}

// listDevices serves GET /users/{userId}/devices: {"devices":[...]}.
func (h *handler) listDevices(w http.ResponseWriter, r *http.Request) error {
	id, err := pathParam(r, "userId")
	if err != nil {
		return err
	}
	out, err := h.svc.ListDevices(r.Context(), actor(r), id)
	return h.reply(w, out, err)
}

// deleteDevice serves DELETE /users/{userId}/devices/{deviceId}.
func (h *handler) deleteDevice(w http.ResponseWriter, r *http.Request) error {
	id, err := pathParam(r, "userId")
	if err != nil {
		return err
	}
	dev, err := pathParam(r, "deviceId")
	if err != nil {
		return err
	}
	return h.done(w, h.svc.DeleteDevice(r.Context(), actor(r), id, dev))
}

// setNotifications serves PUT {level} with set on the notification level
// of the user or channel in the path parameter param:
// /users/{userId}/notifications, or /channel/{channelId}/notifications
// (the caller's own level for the channel).
func (h *handler) setNotifications(param string, set func(*chat.Service, context.Context, string, string, chat.NotificationLevel) (*chat.NotificationSettingList, error)) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathParam(r, param)
		if err != nil {
			return err
		}
		p, err := h.decode(w, r)
		if err != nil {
			return err
		}
		level := p.str("level")
		if err := p.Err(); err != nil {
			return err
		}
		out, err := set(h.svc, r.Context(), actor(r), id, chat.NotificationLevel(level))
		return h.reply(w, out, err)
	}
}

// getNotifications serves GET with get on the notification level of the
// user or channel in the path parameter param.
func (h *handler) getNotifications(param string, get func(*chat.Service, context.Context, string, string) (*chat.NotificationSettingList, error)) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathParam(r, param)
		if err != nil {
			return err
		}
		out, err := get(h.svc, r.Context(), actor(r), id)
		return h.reply(w, out, err)
	}
}

// pushVAPID serves GET /push/vapid: {"publicKey"}, the server's VAPID
// public key for PushManager.subscribe. Any caller may read it.
func (h *handler) pushVAPID(w http.ResponseWriter, r *http.Request) error {
	out, err := h.svc.PushVAPIDKey()
	return h.reply(w, out, err)
}

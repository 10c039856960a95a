package console

import (
	chat "github.com/chatengine/chat"
)

// devicesRoutes serves the "Devices and notifications" card of a user's
// page: deleting a push device and setting the user's notification level.
func (h *handler) devicesRoutes(rt *router) {
	rt.post("/users/{id}/devices/{device}/delete", func(q *req) {
		id, dev := q.pathID("id"), q.pathID("device")
		q.done("/users/"+esc(id), h.svc.DeleteDevice(q.r.Context(), q.actor(), id, dev), "Device "+dev+" deleted.")
	})
	rt.post("/users/{id}/notifications", h.userAction(func(q *req, id string) (string, error) {
		level := chat.NotificationLevel(q.form("level"))
		_, err := h.svc.SetUserNotifications(q.r.Context(), q.actor(), id, level)
		return "Notification level of " + id + " set to " + string(level) + ".", err
	}))
}

// pushView is what the card shows: the user's devices (most recently
// registered first) and notification settings (its own level first, then
// the channels where it set one; More when there are more than shown).
type pushView struct {
	Devices  []chat.Device
	Settings []chat.NotificationSetting
	More     bool
	Error    string
}

// pushOf reads the card's data; a failure is shown in the card.
func (h *handler) pushOf(q *req, userID string) pushView {
	var v pushView
	dl, err := h.svc.ListDevices(q.r.Context(), q.actor(), userID)
	if err != nil {
		v.Error = h.human(err)
		return v
	}
	v.Devices = dl.Devices
	sl, more, err := h.svc.ListNotificationSettings(q.r.Context(), q.actor(), userID, 50)
	if err != nil {
		v.Error = h.human(err)
		return v
	}
	v.Settings, v.More = sl.NotificationSettings, more
	return v
}

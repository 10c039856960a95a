package httpapi

import "net/http"

// leaveChannel serves POST /channel/{channelId}/leave (ext): the caller's
// own user leaves the channel.
func (h *handler) leaveChannel(w http.ResponseWriter, r *http.Request) error {
	id, _, err := h.channelParams(w, r)
	if err != nil {
		return err
	}
	return h.done(w, h.svc.LeaveChannel(r.Context(), actor(r), id))
}

// typing serves POST /channel/{channelId}/typing (ext): publishes
// channel.didStartTyping for the caller (throttled by the Service).
func (h *handler) typing(w http.ResponseWriter, r *http.Request) error {
	id, _, err := h.channelParams(w, r)
	if err != nil {
		return err
	}
	return h.done(w, h.svc.Typing(r.Context(), actor(r), id))
}

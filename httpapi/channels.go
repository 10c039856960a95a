package httpapi

import (
	"net/http"

	chat "github.com/chatengine/chat"
)

// queryChannels serves POST /channels.
func (h *handler) queryChannels(w http.ResponseWriter, r *http.Request) error {
	p, err := h.decode(w, r)
	if err != nil {
		return err
	}
	opt := p.sub("options")
	q := chat.ChannelQuery{
		Filter:        chat.ChannelMembershipFilter(p.str("filter")),
		UserID:        p.str("userId"),
		Tags:          p.strs("tags"),
		ExcludeTags:   p.strs("excludeTags"),
		IncludeClosed: p.boolean("includeClosed"),
		Search:        p.str("search"),
		Skip:          opt.integer("skip"),
		Limit:         opt.integer("limit"),
		Token:         opt.str("token"),
	}
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.QueryChannels(r.Context(), actor(r), q)
	return h.reply(w, out, err)
}

// createChannel serves POST /channel.
func (h *handler) createChannel(w http.ResponseWriter, r *http.Request) error {
	p, err := h.decode(w, r)
	if err != nil {
		return err
	}
	in := chat.CreateChannelInput{
		ChannelID:   p.str("channelId"),
		Type:        chat.ChannelType(p.str("type")),
		DisplayName: p.str("displayName"),
		Metadata:    p.object("metadata"),
		Tags:        p.strs("tags"),
		UserIDs:     p.strs("userIds"),
		IsDistinct:  p.boolean("isDistinct"),
	}
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.CreateChannel(r.Context(), actor(r), in)
	return h.reply(w, out, err)
}

// getChannel serves GET /channel/{channelId}.
func (h *handler) getChannel(w http.ResponseWriter, r *http.Request) error {
	id, err := pathParam(r, "channelId")
	if err != nil {
		return err
	}
	out, err := h.svc.GetChannel(r.Context(), actor(r), id)
	return h.reply(w, out, err)
}

// updateChannel serves PUT /channel/{channelId} (ext): displayName,
// metadata and tags, each optional.
func (h *handler) updateChannel(w http.ResponseWriter, r *http.Request) error {
	id, p, err := h.channelParams(w, r)
	if err != nil {
		return err
	}
	in := chat.UpdateChannelInput{
		ChannelID:   id,
		DisplayName: p.strPtr("displayName"),
		Metadata:    p.objectPtr("metadata"),
		Tags:        p.strsPtr("tags"),
	}
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.UpdateChannel(r.Context(), actor(r), in)
	return h.reply(w, out, err)
}

// channelParams decodes the request and returns the channel id from the
// path, or from the body field channelId for the paths without one.
func (h *handler) channelParams(w http.ResponseWriter, r *http.Request) (string, *params, error) {
	p, err := h.decode(w, r)
	if err != nil {
		return "", nil, err
	}
	if hasPathParam(r, "channelId") {
		id, err := pathParam(r, "channelId")
		return id, p, err
	}
	id := p.str("channelId")
	return id, p, p.Err()
}

// renameChannel serves POST /channel/displayName and
// POST /channel/{channelId}/displayName.
func (h *handler) renameChannel(w http.ResponseWriter, r *http.Request) error {
	id, p, err := h.channelParams(w, r)
	if err != nil {
		return err
	}
	name := p.str("displayName")
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.RenameChannel(r.Context(), actor(r), id, name)
	return h.reply(w, out, err)
}

// userIDsParams reads the channel id and the userIds of a membership call.
func (h *handler) userIDsParams(w http.ResponseWriter, r *http.Request) (string, []string, *params, error) {
	id, p, err := h.channelParams(w, r)
	if err != nil {
		return "", nil, nil, err
	}
	ids := p.strs("userIds")
	return id, ids, p, p.Err()
}

// addUsers serves POST /channel/{channelId}/users.
func (h *handler) addUsers(w http.ResponseWriter, r *http.Request) error {
	id, ids, _, err := h.userIDsParams(w, r)
	if err != nil {
		return err
	}
	out, err := h.svc.AddUsers(r.Context(), actor(r), id, ids)
	return h.reply(w, out, err)
}

// removeUsers serves DELETE /channel/{channelId}/users.
func (h *handler) removeUsers(w http.ResponseWriter, r *http.Request) error {
	id, ids, _, err := h.userIDsParams(w, r)
	if err != nil {
		return err
	}
	return h.done(w, h.svc.RemoveUsers(r.Context(), actor(r), id, ids))
}

// joinChannel serves POST /channel/{channelId}/join.
func (h *handler) joinChannel(w http.ResponseWriter, r *http.Request) error {
	id, _, err := h.channelParams(w, r)
	if err != nil {
		return err
	}
	out, err := h.svc.JoinChannel(r.Context(), actor(r), id)
	return h.reply(w, out, err)
}

// markRead serves POST /channel/{channelId}/read (ext): the caller's read
// marker moves forward to segment (absent: the channel's latest).
func (h *handler) markRead(w http.ResponseWriter, r *http.Request) error {
	id, p, err := h.channelParams(w, r)
	if err != nil {
		return err
	}
	seg := p.int64Ptr("segment")
	if err := p.Err(); err != nil {
		return err
	}
	var to int64 // 0: the latest
	if seg != nil {
		if *seg < 1 {
			return badRequest("segment", "must be a channelSegment (1 or more), or absent for the latest")
		}
		to = *seg
	}
	out, err := h.svc.MarkRead(r.Context(), actor(r), id, to)
	return h.reply(w, out, err)
}

// muteChannel serves PUT /channel/{channelId}/mute.
func (h *handler) muteChannel(w http.ResponseWriter, r *http.Request) error {
	id, p, err := h.channelParams(w, r)
	if err != nil {
		return err
	}
	period := p.int64("mutePeriod")
	if err := p.Err(); err != nil {
		return err
	}
	return h.done(w, h.svc.MuteChannel(r.Context(), actor(r), id, mutePeriod(period)))
}

// setRateLimit serves PUT /channel/{channelId}/rateLimit (ext): slow mode.
func (h *handler) setRateLimit(w http.ResponseWriter, r *http.Request) error {
	id, p, err := h.channelParams(w, r)
	if err != nil {
		return err
	}
	if !p.has("rateLimitWindow") {
		return badRequest("rateLimitWindow", "is required (milliseconds; 0 turns slow mode off)")
	}
	window := p.int64("rateLimitWindow")
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.SetChannelRateLimit(r.Context(), actor(r), id, rateLimitWindow(window))
	return h.reply(w, out, err)
}

// muteUsers serves PUT /channel/{channelId}/users/mute.
func (h *handler) muteUsers(w http.ResponseWriter, r *http.Request) error {
	id, ids, p, err := h.userIDsParams(w, r)
	if err != nil {
		return err
	}
	period := p.int64("mutePeriod")
	if err := p.Err(); err != nil {
		return err
	}
	return h.done(w, h.svc.MuteUsers(r.Context(), actor(r), id, ids, mutePeriod(period)))
}

// banUsers serves POST /channel/{channelId}/users/ban.
func (h *handler) banUsers(w http.ResponseWriter, r *http.Request) error {
	id, ids, _, err := h.userIDsParams(w, r)
	if err != nil {
		return err
	}
	return h.done(w, h.svc.BanUsers(r.Context(), actor(r), id, ids))
}

// unbanUsers serves POST /channel/{channelId}/users/unban.
func (h *handler) unbanUsers(w http.ResponseWriter, r *http.Request) error {
	id, ids, _, err := h.userIDsParams(w, r)
	if err != nil {
		return err
	}
	return h.done(w, h.svc.UnbanUsers(r.Context(), actor(r), id, ids))
}

// closeChannel serves POST /channel/{channelId}/close and
// POST /channels/{channelId}/close.
func (h *handler) closeChannel(w http.ResponseWriter, r *http.Request) error {
	id, _, err := h.channelParams(w, r)
	if err != nil {
		return err
	}
	return h.done(w, h.svc.CloseChannel(r.Context(), actor(r), id))
}

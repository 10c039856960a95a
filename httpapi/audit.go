package httpapi

import (
	"net/http"
	"time"

	chat "github.com/chatengine/chat"
)

// queryAudit serves GET /audit (ext, admins): filters actorId, targetId,
// channelId and action; options[limit] and options[token] page it.
func (h *handler) queryAudit(w http.ResponseWriter, r *http.Request) error {
	p, err := h.decode(w, r)
	if err != nil {
		return err
	}
	opt := p.sub("options")
	q := chat.AuditQuery{
		ActorID:   p.str("actorId"),
		TargetID:  p.str("targetId"),
		ChannelID: p.str("channelId"),
		Action:    p.str("action"),
		Limit:     opt.integer("limit"),
		Token:     opt.str("token"),
	}
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.QueryAudit(r.Context(), actor(r), q)
	return h.reply(w, out, err)
}

// checkMessage serves POST /moderation/check (ext, admins): a dry run of
// creating the message {channelId, type, data, tags, parentId} as userId.
func (h *handler) checkMessage(w http.ResponseWriter, r *http.Request) error {
	p, err := h.decode(w, r)
	if err != nil {
		return err
	}
	userID := p.str("userId")
	in := createMessageParams(p)
	if err := p.Err(); err != nil {
		return err
	}
	if userID == "" {
		// The Service can check for no user in particular (the panel's
		// box does); the API asks whom the message is from.
		return badRequest("userId", "is required")
	}
	out, err := h.svc.CheckMessage(r.Context(), actor(r), userID, in)
	return h.reply(w, out, err)
}

// purgeMessages serves POST /users/{userId}/messages/delete (ext,
// admins): {channelId?, since?}.
func (h *handler) purgeMessages(w http.ResponseWriter, r *http.Request) error {
	id, p, err := h.pathAndParams(w, r, "userId")
	if err != nil {
		return err
	}
	in := chat.PurgeUserMessagesInput{UserID: id, ChannelID: p.str("channelId")}
	since := p.str("since")
	if err := p.Err(); err != nil {
		return err
	}
	if since != "" {
		t, err := time.Parse(time.RFC3339Nano, since)
		if err != nil {
			return badRequest("since", "must be an ISO 8601 time such as 2024-05-06T07:08:09.123Z")
		}
		in.Since = &t
	}
	out, err := h.svc.PurgeUserMessages(r.Context(), actor(r), in)
	return h.reply(w, out, err)
}

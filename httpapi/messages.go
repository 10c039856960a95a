package httpapi

import (
	"net/http"

	chat "github.com/chatengine/chat"
)

// queryMessages serves POST /messages.
func (h *handler) queryMessages(w http.ResponseWriter, r *http.Request) error {
	p, err := h.decode(w, r)
	if err != nil {
		return err
	}
	opt := p.sub("options")
	q := chat.MessageQuery{
		ChannelID:        p.str("channelId"),
		UserID:           p.str("userId"),
		ParentID:         p.str("parentId"),
		FilterByParentID: p.boolean("filterByParentId"),
		Tags:             p.strs("tags"),
		ExcludeTags:      p.strs("excludeTags"),
		IncludeDeleted:   p.boolean("includeDeleted"),
		After:            opt.int64Ptr("after"),
		Before:           opt.int64Ptr("before"),
		First:            opt.integer("first"),
		Last:             opt.integer("last"),
		Token:            opt.str("token"),
	}
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.QueryMessages(r.Context(), actor(r), q)
	return h.reply(w, out, err)
}

// getMessage serves GET /message/{messageId}.
func (h *handler) getMessage(w http.ResponseWriter, r *http.Request) error {
	id, err := pathParam(r, "messageId")
	if err != nil {
		return err
	}
	out, err := h.svc.GetMessage(r.Context(), actor(r), id)
	return h.reply(w, out, err)
}

// createMessage serves POST /message.
func (h *handler) createMessage(w http.ResponseWriter, r *http.Request) error {
	p, err := h.decode(w, r)
	if err != nil {
		return err
	}
	in := createMessageParams(p)
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.CreateMessage(r.Context(), actor(r), in)
	return h.reply(w, out, err)
}

// createMessageParams reads the message of POST /message, which POST
// /moderation/check reads too: {channelId, type, data, tags, parentId,
// mentionedUserIds}.
func createMessageParams(p *params) chat.CreateMessageInput {
	return chat.CreateMessageInput{
		ChannelID:        p.str("channelId"),
		Type:             chat.MessageType(p.str("type")),
		Data:             p.object("data"),
		Tags:             p.strs("tags"),
		ParentID:         p.str("parentId"),
		MentionedUserIDs: p.strs("mentionedUserIds"),
	}
}

// updateMessage serves PUT /message/{messageId} (ext): data, caption,
// tags and mentionedUserIds, each optional.
func (h *handler) updateMessage(w http.ResponseWriter, r *http.Request) error {
	id, p, err := h.pathAndParams(w, r, "messageId")
	if err != nil {
		return err
	}
	in := chat.UpdateMessageInput{
		MessageID: id,
		Data:      p.objectPtr("data"),
		Caption:   p.strPtr("caption"),
		Tags:      p.strsPtr("tags"),

		MentionedUserIDs: p.strs("mentionedUserIds"),
	}
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.UpdateMessage(r.Context(), actor(r), in)
	return h.reply(w, out, err)
}

// deleteMessage serves DELETE /message/{messageId}.
func (h *handler) deleteMessage(w http.ResponseWriter, r *http.Request) error {
	id, err := pathParam(r, "messageId")
	if err != nil {
		return err
	}
	return h.done(w, h.svc.DeleteMessage(r.Context(), actor(r), id))
}

// flagMessage serves POST /message/{messageId}/flags.
func (h *handler) flagMessage(w http.ResponseWriter, r *http.Request) error {
	id, err := pathParam(r, "messageId")
	if err != nil {
		return err
	}
	out, err := h.svc.FlagMessage(r.Context(), actor(r), id)
	return h.reply(w, out, err)
}

// clearMessageFlags serves DELETE /message/{messageId}/flags.
func (h *handler) clearMessageFlags(w http.ResponseWriter, r *http.Request) error {
	id, err := pathParam(r, "messageId")
	if err != nil {
		return err
	}
	return h.done(w, h.svc.ClearMessageFlags(r.Context(), actor(r), id))
}

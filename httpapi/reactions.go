package httpapi

import (
	"net/http"

	chat "github.com/chatengine/chat"
)

// queryReactors serves GET /reactions.
func (h *handler) queryReactors(w http.ResponseWriter, r *http.Request) error {
	p, err := h.decode(w, r)
	if err != nil {
		return err
	}
	opt := p.sub("options")
	q := chat.ReactorQuery{
		ReferenceID:   p.str("referenceId"),
		ReferenceType: chat.ReferenceType(p.str("referenceType")),
		ReactionName:  opt.str("reactionName"),
		Skip:          opt.integer("skip"),
		Limit:         opt.integer("limit"),
		Token:         opt.str("token"),
	}
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.QueryReactors(r.Context(), actor(r), q)
	return h.reply(w, out, err)
}

// reactionParams reads referenceId, referenceType and reactionName.
func (h *handler) reactionParams(w http.ResponseWriter, r *http.Request) (id string, typ chat.ReferenceType, name string, err error) {
	p, err := h.decode(w, r)
	if err != nil {
		return "", "", "", err
	}
	id, typ, name = p.str("referenceId"), chat.ReferenceType(p.str("referenceType")), p.str("reactionName")
	return id, typ, name, p.Err()
}

// addReaction serves POST /reactions: {"success":true,"addedId":"..."}.
func (h *handler) addReaction(w http.ResponseWriter, r *http.Request) error {
	id, typ, name, err := h.reactionParams(w, r)
	if err != nil {
		return err
	}
	rid, err := h.svc.AddReaction(r.Context(), actor(r), id, typ, name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, successBody{Success: true, AddedID: &rid})
	return nil
}

// removeReaction serves DELETE /reactions:
// {"success":true,"removedId":"..."}, with removedId null when there was
// no such reaction (removing is idempotent).
func (h *handler) removeReaction(w http.ResponseWriter, r *http.Request) error {
	id, typ, name, err := h.reactionParams(w, r)
	if err != nil {
		return err
	}
	rid, err := h.svc.RemoveReaction(r.Context(), actor(r), id, typ, name)
	if err != nil {
		return err
	}
	body := struct {
		Success   bool    `json:"success"`
		RemovedID *string `json:"removedId"`
	}{Success: true}
	if rid != "" {
		body.RemovedID = &rid
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

// mostReacted serves GET /reactions/messages/most.
func (h *handler) mostReacted(w http.ResponseWriter, r *http.Request) error {
	p, err := h.decode(w, r)
	if err != nil {
		return err
	}
	q := chat.MostReactedQuery{
		ReactionName: p.str("reactionName"),
		ChannelID:    p.str("channelId"),
		Limit:        p.integer("limit"),
	}
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.MostReacted(r.Context(), actor(r), q)
	return h.reply(w, out, err)
}

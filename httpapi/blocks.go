package httpapi

import "net/http"

// blockUser serves POST /users/{userId}/blocks: userId (the path) blocks
// the body's userId.
func (h *handler) blockUser(w http.ResponseWriter, r *http.Request) error {
	id, p, err := h.pathAndParams(w, r, "userId")
	if err != nil {
		return err
	}
	blocked := p.str("userId")
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.BlockUser(r.Context(), actor(r), id, blocked)
	return h.reply(w, out, err)
}

// unblockUser serves DELETE /users/{userId}/blocks, userId of the user to
// unblock in the body or the query string.
func (h *handler) unblockUser(w http.ResponseWriter, r *http.Request) error {
	id, p, err := h.pathAndParams(w, r, "userId")
	if err != nil {
		return err
	}
	blocked := p.str("userId")
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.UnblockUser(r.Context(), actor(r), id, blocked)
	return h.reply(w, out, err)
}

// listBlocks serves GET /users/{userId}/blocks.
func (h *handler) listBlocks(w http.ResponseWriter, r *http.Request) error {
	id, err := pathParam(r, "userId")
	if err != nil {
		return err
	}
	out, err := h.svc.ListBlocks(r.Context(), actor(r), id)
	return h.reply(w, out, err)
}

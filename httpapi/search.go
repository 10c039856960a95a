package httpapi

import (
	"net/http"

	chat "github.com/chatengine/chat"
)

// searchMessages serves POST /messages/search.
func (h *handler) searchMessages(w http.ResponseWriter, r *http.Request) error {
	p, err := h.decode(w, r)
	if err != nil {
		return err
	}
	opt := p.sub("options")
	q := chat.SearchMessagesQuery{
		Query:     p.str("query"),
		ChannelID: p.str("channelId"),
		UserID:    p.str("userId"),
		Limit:     opt.integer("limit"),
		Token:     opt.str("token"),
	}
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.SearchMessages(r.Context(), actor(r), q)
	return h.reply(w, out, err)
}

// queryMentions serves POST /messages/mentions: {userId, channelId,
// options: {limit, token}}, userId the caller's own when absent.
func (h *handler) queryMentions(w http.ResponseWriter, r *http.Request) error {
	p, err := h.decode(w, r)
	if err != nil {
		return err
	}
	opt := p.sub("options")
	q := chat.MentionQuery{
		UserID:    p.str("userId"),
		ChannelID: p.str("channelId"),
		Limit:     opt.integer("limit"),
		Token:     opt.str("token"),
	}
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.QueryMentions(r.Context(), actor(r), q)
	return h.reply(w, out, err)
}

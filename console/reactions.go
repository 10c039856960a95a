package console

import (
	"net/http"
	"strconv"

	chat "github.com/chatengine/chat"
)

// reactionsRoutes serves the most reacted messages of one reaction name.
func (h *handler) reactionsRoutes(rt *router) {
	rt.get("/reactions", h.reactions)
}

type reactionsView struct {
	Name, ChannelID string
	Limit           int
	Messages        messagesView
	Asked           bool
}

func (h *handler) reactions(q *req) {
	v := reactionsView{Name: q.form("reactionName"), ChannelID: q.form("channelId"), Limit: 10}
	if n, err := strconv.Atoi(q.form("limit")); err == nil {
		v.Limit = n
	}
	if v.Name != "" {
		v.Asked = true
		ml, err := h.svc.MostReacted(q.r.Context(), q.actor(), chat.MostReactedQuery{ReactionName: v.Name, ChannelID: v.ChannelID, Limit: v.Limit})
		if err != nil {
			v.Messages.Error = h.human(err)
		} else {
			v.Messages.Messages = ml.Messages
			v.Messages.Users = map[string]chat.User{}
			for _, u := range ml.Users {
				v.Messages.Users[u.UserID] = u
			}
		}
	}
	q.render(http.StatusOK, "reactions", "reactions", "Most reacted messages", v)
}

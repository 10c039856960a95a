package console

import (
	"encoding/json"
	"net/http"
	"net/url"

	chat "github.com/chatengine/chat"
)

// channelsRoutes serves the channel list (search by a prefix of the id or
// of a word of the name, filters, paging) and
// channel creation; channel.go serves one channel.
func (h *handler) channelsRoutes(rt *router) {
	rt.get("/channels", h.channels)
	rt.post("/channels", h.createChannel)
	h.channelRoutes(rt)
}

type channelsView struct {
	Filter, UserID, Tags, ExcludeTags, Search string
	Closed                                    bool
	List                                      *chat.ChannelList
	Next, Previous                            string // links to the neighbouring pages
	Error                                     string
}

func (h *handler) channels(q *req) {
	if id := q.form("find"); id != "" {
		http.Redirect(q.w, q.r, h.cfg.Prefix+"/channels/"+esc(id), http.StatusSeeOther)
		return
	}
	v := channelsView{
		Filter: q.form("filter"), UserID: q.form("userId"), Tags: q.form("tags"),
		ExcludeTags: q.form("excludeTags"), Closed: q.form("closed") == "yes", Search: q.form("search"),
	}
	cq := chat.ChannelQuery{
		Filter: chat.ChannelMembershipFilter(v.Filter), UserID: v.UserID,
		Tags: list(v.Tags), ExcludeTags: list(v.ExcludeTags), IncludeClosed: v.Closed, Search: v.Search,
		Limit: 20, Token: q.form("token"),
	}
	cl, err := h.svc.QueryChannels(q.r.Context(), q.actor(), cq)
	status := http.StatusOK
	if err != nil {
		v.Error = h.human(err)
		status = http.StatusBadRequest
		if code := chat.ErrorCode(err); code == chat.CodeUnavailable || code == chat.CodeInternal {
			status = http.StatusServiceUnavailable
		}
	} else {
		v.List = cl
		if cl.Paging != nil {
			base := url.Values{}
			for k, val := range map[string]string{"filter": v.Filter, "userId": v.UserID, "tags": v.Tags, "excludeTags": v.ExcludeTags, "search": v.Search} {
				if val != "" {
					base.Set(k, val)
				}
			}
			if v.Closed {
				base.Set("closed", "yes")
			}
			link := func(tok string) string {
				if tok == "" {
					return ""
				}
				u := url.Values{}
				for k, vs := range base {
					u[k] = vs
				}
				u.Set("token", tok)
				return h.cfg.Prefix + "/channels?" + u.Encode()
			}
			v.Next, v.Previous = link(cl.Paging.Next), link(cl.Paging.Previous)
		}
	}
	q.render(status, "channels", "channels", "Channels", v)
}

// parseMetadata reads an optional JSON object from a form field.
func parseMetadata(field, s string) (map[string]any, error) {
	if s == "" {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil || m == nil {
		return nil, chat.InvalidField(field, "%s must be a JSON object, like {\"topic\": \"news\"}", field)
	}
	return m, nil
}

func (h *handler) createChannel(q *req) {
	id := q.form("channelId")
	meta, err := parseMetadata("metadata", q.form("metadata"))
	if err != nil {
		q.done("/channels", err, "")
		return
	}
	_, err = h.svc.CreateChannel(q.r.Context(), q.actor(), chat.CreateChannelInput{
		ChannelID: id, Type: chat.ChannelTypeStandard, DisplayName: q.form("displayName"),
		Tags: list(q.form("tags")), UserIDs: list(q.form("userIds")), Metadata: meta,
	})
	if err != nil {
		q.done("/channels", err, "")
		return
	}
	q.done("/channels/"+esc(id), nil, "Channel "+id+" created.")
}

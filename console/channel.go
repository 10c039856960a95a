package console

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	chat "github.com/chatengine/chat"
)

// channelRoutes serves one channel: its settings, members and live
// messages, and every action on them.
func (h *handler) channelRoutes(rt *router) {
	rt.get("/channels/{id}", h.channel)
	rt.live("/channels/{id}/messages", h.channelMessages)
	rt.live("/channels/{id}/events", h.channelEvents)
	rt.post("/channels/{id}/rename", h.channelAction(func(q *req, id string) (string, error) {
		_, err := h.svc.RenameChannel(q.r.Context(), q.actor(), id, q.form("displayName"))
		return "Display name changed.", err
	}))
	rt.post("/channels/{id}/mute", h.channelAction(func(q *req, id string) (string, error) {
		d, err := mutePeriod(q.form("period"))
		if err != nil {
			return "", err
		}
		if err := h.svc.MuteChannel(q.r.Context(), q.actor(), id, d); err != nil {
			return "", err
		}
		if d == chat.Unmute {
			return "Channel unmuted.", nil
		}
		return "Channel muted.", nil
	}))
	rt.post("/channels/{id}/slowmode", h.channelAction(func(q *req, id string) (string, error) {
		secs, err := strconv.Atoi(q.form("seconds"))
		if err != nil || secs < 0 {
			return "", chat.InvalidField("seconds", "the slow mode interval must be a whole number of seconds, 0 to turn it off")
		}
		if _, err := h.svc.SetChannelRateLimit(q.r.Context(), q.actor(), id, time.Duration(secs)*time.Second); err != nil {
			return "", err
		}
		if secs == 0 {
			return "Slow mode is off.", nil
		}
		return "Slow mode: one message per " + strconv.Itoa(secs) + " s per member.", nil
	}))
	rt.post("/channels/{id}/members", h.channelAction(func(q *req, id string) (string, error) {
		ids := list(q.form("userIds"))
		if len(ids) == 0 {
			return "", chat.InvalidField("userIds", "name at least one user id to add")
		}
		_, err := h.svc.AddUsers(q.r.Context(), q.actor(), id, ids)
		return "Members added.", err
	}))
	rt.post("/channels/{id}/members/remove", h.channelAction(func(q *req, id string) (string, error) {
		u := q.form("userId")
		return u + " removed from the channel.", h.svc.RemoveUsers(q.r.Context(), q.actor(), id, []string{u})
	}))
	rt.post("/channels/{id}/members/mute", h.channelAction(func(q *req, id string) (string, error) {
		u := q.form("userId")
		d, err := mutePeriod(q.form("period"))
		if err != nil {
			return "", err
		}
		if err := h.svc.MuteUsers(q.r.Context(), q.actor(), id, []string{u}, d); err != nil {
			return "", err
		}
		if d == chat.Unmute {
			return u + " unmuted.", nil
		}
		return u + " muted.", nil
	}))
	rt.post("/channels/{id}/members/ban", h.channelAction(func(q *req, id string) (string, error) {
		u := q.form("userId")
		return u + " banned from the channel; their messages here are deleted.", h.svc.BanUsers(q.r.Context(), q.actor(), id, []string{u})
	}))
	rt.post("/channels/{id}/members/unban", h.channelAction(func(q *req, id string) (string, error) {
		u := q.form("userId")
		return u + " unbanned.", h.svc.UnbanUsers(q.r.Context(), q.actor(), id, []string{u})
	}))
	rt.post("/channels/{id}/join", h.channelAction(func(q *req, id string) (string, error) {
		_, err := h.svc.JoinChannel(q.r.Context(), q.actor(), id)
		return "You joined the channel as " + q.actor() + ".", err
	}))
	rt.post("/channels/{id}/close", h.channelAction(func(q *req, id string) (string, error) {
		if !q.confirmed() {
			return "", chat.InvalidField("confirm", "closing cannot be undone: tick the box to confirm")
		}
		return "Channel closed: its members were removed and its messages deleted.", h.svc.CloseChannel(q.r.Context(), q.actor(), id)
	}))
	rt.post("/channels/{id}/post", h.channelAction(func(q *req, id string) (string, error) {
		_, err := h.svc.CreateMessage(q.r.Context(), q.actor(), chat.CreateMessageInput{
			ChannelID: id, Type: chat.MessageTypeText, Data: map[string]any{"text": q.r.PostForm.Get("text")},
		})
		return "Message sent as " + q.actor() + ".", err
	}))
	rt.post("/channels/{id}/messages/{mid}/delete", h.channelAction(func(q *req, _ string) (string, error) {
		return "Message deleted.", h.svc.DeleteMessage(q.r.Context(), q.actor(), q.pathID("mid"))
	}))
	rt.post("/channels/{id}/messages/{mid}/flag", h.channelAction(func(q *req, _ string) (string, error) {
		_, err := h.svc.FlagMessage(q.r.Context(), q.actor(), q.pathID("mid"))
		return "Message flagged.", err
	}))
	rt.post("/channels/{id}/messages/{mid}/unflag", h.channelAction(func(q *req, _ string) (string, error) {
		return "The message's flags are cleared.", h.svc.ClearMessageFlags(q.r.Context(), q.actor(), q.pathID("mid"))
	}))
}

// channelAction runs fn for the channel in the path and goes back to the
// channel's page with its outcome.
func (h *handler) channelAction(fn func(q *req, id string) (string, error)) func(q *req) {
	return func(q *req) {
		id := q.pathID("id")
		msg, err := fn(q, id)
		q.done("/channels/"+esc(id), err, msg)
	}
}

// mutePeriod reads a mute period in milliseconds as the API takes it: 0
// unmutes, -1 mutes forever.
func mutePeriod(s string) (time.Duration, error) {
	ms, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil || ms < -1 || ms > 10*365*24*3600*1000:
		return 0, chat.InvalidField("mutePeriod", "pick a mute period")
	case ms == -1:
		return chat.MuteForever, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// member is a channelUser with its user.
type member struct {
	chat.ChannelUser
	User chat.User
}

type channelView struct {
	Channel  chat.Channel
	Members  []member
	Messages messagesView
	Events   string // the page's event stream, empty without Config.Events
}

// messagesView is the live part of a channel's page.
type messagesView struct {
	ChannelID string
	Closed    bool
	Messages  []chat.Message
	Users     map[string]chat.User
	Older     string // link to the page of older messages
	Parent    string // the message whose comments these are, if any
	Error     string
}

func (h *handler) channel(q *req) {
	id := q.pathID("id")
	cl, err := h.svc.GetChannel(q.r.Context(), q.actor(), id)
	if err != nil {
		status := http.StatusNotFound
		if chat.ErrorCode(err) != chat.CodeNotFound {
			status = http.StatusBadRequest
		}
		q.render(status, "message", "channels", "Channel not found", h.human(err))
		return
	}
	users := map[string]chat.User{}
	for _, u := range cl.Users {
		users[u.UserID] = u
	}
	v := channelView{Channel: cl.Channels[0]}
	for _, cu := range cl.ChannelUsers {
		u, ok := users[cu.UserID]
		if !ok {
			u = chat.User{UserID: cu.UserID, DisplayName: cu.UserID}
		}
		v.Members = append(v.Members, member{ChannelUser: cu, User: u})
	}
	v.Messages = h.loadMessages(q, id, v.Channel.IsClosed)
	if h.cfg.Events != nil {
		v.Events = h.cfg.Prefix + "/channels/" + esc(id) + "/events"
	}
	title := v.Channel.DisplayName
	if title == "" {
		title = id
	}
	q.render(http.StatusOK, "channel", "channels", title, v)
}

// loadMessages reads the newest 50 messages of a channel (deleted ones
// too, marked), or those before the segment in the "before" parameter;
// with the "parent" parameter, that message's comments.
func (h *handler) loadMessages(q *req, id string, closed bool) messagesView {
	v := messagesView{ChannelID: id, Closed: closed, Parent: q.form("parent")}
	mq := chat.MessageQuery{ChannelID: id, IncludeDeleted: true, Last: 50, ParentID: v.Parent}
	if b := q.form("before"); b != "" {
		if n, err := strconv.ParseInt(b, 10, 64); err == nil && n > 0 {
			mq.Before = &n
		}
	}
	ml, err := h.svc.QueryMessages(q.r.Context(), q.actor(), mq)
	if err != nil {
		v.Error = h.human(err)
		return v
	}
	v.Messages = ml.Messages
	v.Users = map[string]chat.User{}
	for _, u := range ml.Users {
		v.Users[u.UserID] = u
	}
	if len(ml.Messages) == 50 && ml.Messages[0].ChannelSegment > 1 {
		older := url.Values{"before": {strconv.FormatInt(ml.Messages[0].ChannelSegment, 10)}}
		if v.Parent != "" {
			older.Set("parent", v.Parent)
		}
		v.Older = h.cfg.Prefix + "/channels/" + esc(id) + "?" + older.Encode()
	}
	return v
}

// channelMessages serves the message list alone, for the page's script
// to refresh it.
func (h *handler) channelMessages(q *req) {
	id := q.pathID("id")
	q.fragment("channel", "messages", h.loadMessages(q, id, false))
}

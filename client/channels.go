package client

import (
	"context"
	"iter"
	"net/http"
	"time"

	chat "github.com/chatengine/chat"
)

// PageOptions are the paging options of the channel and reactor queries.
type PageOptions struct {
	// Skip skips rows of the first page (ignored with Token).
	Skip int `json:"skip,omitempty"`
	// Limit is the page size (default 10, at most 100).
	Limit int `json:"limit,omitempty"`
	// Token continues a query (paging.next or paging.previous of a page).
	Token string `json:"token,omitempty"`
}

// QueryChannelsRequest selects channels, newest first.
type QueryChannelsRequest struct {
	// Filter is chat.ChannelsAll (the default), chat.ChannelsMember or
	// chat.ChannelsNotMember, relative to the admin's user.
	Filter chat.ChannelMembershipFilter `json:"filter,omitempty"`
	// UserID keeps the channels that user is a member of.
	UserID string `json:"userId,omitempty"`
	// Tags keeps channels with any of these tags.
	Tags []string `json:"tags,omitempty"`
	// ExcludeTags drops channels with any of these tags.
	ExcludeTags []string `json:"excludeTags,omitempty"`
	// IncludeClosed also lists closed channels (ext).
	IncludeClosed bool `json:"includeClosed,omitempty"`
	// Search keeps the channels whose channelId, or a word of whose
	// displayName, begins with it, case-insensitively (ext).
	Search  string       `json:"search,omitempty"`
	Options *PageOptions `json:"options,omitempty"`
}

// QueryChannels lists channels (POST /channels).
func (c *Client) QueryChannels(ctx context.Context, req QueryChannelsRequest) (*chat.ChannelList, error) {
	var out chat.ChannelList
	return &out, c.do(ctx, http.MethodPost, "/channels", nil, req, &out)
}

// Channels iterates over every channel req selects, following
// paging.next from req's first page.
func (c *Client) Channels(ctx context.Context, req QueryChannelsRequest) iter.Seq2[chat.Channel, error] {
	return pages(func(token string) ([]chat.Channel, *chat.Paging, error) {
		r := req
		if token != "" {
			o := PageOptions{Token: token}
			if req.Options != nil {
				o.Limit = req.Options.Limit
			}
			r.Options = &o
		}
		out, err := c.QueryChannels(ctx, r)
		if err != nil {
			return nil, nil, err
		}
		return out.Channels, out.Paging, nil
	})
}

// QueryChannelsAll calls fn for every channel req selects (see Channels),
// stopping at the first error fn or the API returns.
func (c *Client) QueryChannelsAll(ctx context.Context, req QueryChannelsRequest, fn func(chat.Channel) error) error {
	return each(c.Channels(ctx, req), fn)
}

// CreateChannelRequest creates a channel.
type CreateChannelRequest struct {
	ChannelID   string           `json:"channelId"`
	Type        chat.ChannelType `json:"type"` // chat.ChannelTypeStandard
	DisplayName string           `json:"displayName,omitempty"`
	Metadata    map[string]any   `json:"metadata,omitempty"`
	Tags        []string         `json:"tags,omitempty"`
	// UserIDs are the initial members (the admin is not one unless listed).
	UserIDs    []string `json:"userIds,omitempty"`
	IsDistinct bool     `json:"isDistinct,omitempty"`
}

// CreateChannel creates a channel (POST /channel).
func (c *Client) CreateChannel(ctx context.Context, req CreateChannelRequest) (*Channel, error) {
	var out chat.ChannelList
	err := c.do(ctx, http.MethodPost, "/channel", nil, req, &out)
	return oneChannel(&out, err)
}

// GetChannel reads one channel, closed ones too, with its members and
// banned users as channelUsers (GET /channel/{channelId}, ext).
func (c *Client) GetChannel(ctx context.Context, channelID string) (*Channel, error) {
	var out chat.ChannelList
	err := c.do(ctx, http.MethodGet, "/channel/"+esc(channelID), nil, nil, &out)
	return oneChannel(&out, err)
}

// RenameChannel changes a channel's displayName (POST /channel/displayName).
func (c *Client) RenameChannel(ctx context.Context, channelID, displayName string) (*Channel, error) {
	var out chat.ChannelList
	in := map[string]string{"channelId": channelID, "displayName": displayName}
	err := c.do(ctx, http.MethodPost, "/channel/displayName", nil, in, &out)
	return oneChannel(&out, err)
}

type userIDs struct {
	UserIDs []string `json:"userIds"`
}

// AddUsers adds members (POST /channel/{channelId}/users).
func (c *Client) AddUsers(ctx context.Context, channelID string, ids []string) (*Channel, error) {
	var out chat.ChannelList
	err := c.do(ctx, http.MethodPost, "/channel/"+esc(channelID)+"/users", nil, userIDs{ids}, &out)
	return oneChannel(&out, err)
}

// RemoveUsers removes members (DELETE /channel/{channelId}/users).
func (c *Client) RemoveUsers(ctx context.Context, channelID string, ids []string) error {
	return c.action(ctx, http.MethodDelete, "/channel/"+esc(channelID)+"/users", userIDs{ids})
}

// JoinChannel makes the admin's own user a member (POST
// /channel/{channelId}/join, ext).
func (c *Client) JoinChannel(ctx context.Context, channelID string) (*Channel, error) {
	var out chat.ChannelList
	err := c.do(ctx, http.MethodPost, "/channel/"+esc(channelID)+"/join", nil, struct{}{}, &out)
	return oneChannel(&out, err)
}

// LeaveChannel removes the caller's own user from a channel (POST
// /channel/{channelId}/leave, ext). Leaving a channel one is not a member
// of succeeds and changes nothing.
func (c *Client) LeaveChannel(ctx context.Context, channelID string) error {
	return c.action(ctx, http.MethodPost, "/channel/"+esc(channelID)+"/leave", struct{}{})
}

// Typing tells the channel's other members that the caller is typing
// (POST /channel/{channelId}/typing, ext). The server publishes at most one
// channel.didStartTyping per user and channel every 2 s; calls in between
// succeed too, so a client may call it on every keystroke.
func (c *Client) Typing(ctx context.Context, channelID string) error {
	return c.action(ctx, http.MethodPost, "/channel/"+esc(channelID)+"/typing", struct{}{})
}

type markRead struct {
	Segment int64 `json:"segment,omitempty"`
}

// MarkRead moves the caller's read marker in a channel forward to segment,
// or to the channel's latest segment when segment is 0 (POST
// /channel/{channelId}/read, ext). The caller must be a member. A segment
// at or below the marker changes nothing: the marker never moves back. The
// returned channel's ChannelUsers holds the caller's relation alone, with
// its ReadToSegment and UnreadCount.
func (c *Client) MarkRead(ctx context.Context, channelID string, segment int64) (*Channel, error) {
	var out chat.ChannelList
	err := c.do(ctx, http.MethodPost, "/channel/"+esc(channelID)+"/read", nil, markRead{segment}, &out)
	return oneChannel(&out, err)
}

// mutePeriod is the wire's mutePeriod for d: milliseconds, rounded up,
// -1 for chat.MuteForever; a negative d stays negative, for the server to
// refuse.
func mutePeriod(d time.Duration) int64 {
	switch {
	case d == chat.MuteForever:
		return -1
	case d < 0:
		return min(d.Milliseconds(), -2)
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// MuteChannel mutes a channel for d, or until unmuted with
// chat.MuteForever, or unmutes it with chat.Unmute (PUT
// /channel/{channelId}/mute). d is sent in whole milliseconds, rounded
// up.
func (c *Client) MuteChannel(ctx context.Context, channelID string, d time.Duration) error {
	in := map[string]int64{"mutePeriod": mutePeriod(d)}
	return c.action(ctx, http.MethodPut, "/channel/"+esc(channelID)+"/mute", in)
}

// UpdateChannelRequest changes a channel; nil fields stay as they are.
type UpdateChannelRequest struct {
	DisplayName *string
	// Metadata replaces the whole metadata object.
	Metadata map[string]any
	// Tags replaces the tags (an empty, non-nil slice removes them).
	Tags []string
}

// UpdateChannel changes a channel's displayName, metadata and tags (PUT
// /channel/{channelId}, ext); channel.didUpdate is emitted.
func (c *Client) UpdateChannel(ctx context.Context, channelID string, req UpdateChannelRequest) (*Channel, error) {
	body := map[string]any{}
	if req.DisplayName != nil {
		body["displayName"] = *req.DisplayName
	}
	if req.Metadata != nil {
		body["metadata"] = req.Metadata
	}
	if req.Tags != nil {
		body["tags"] = req.Tags
	}
	var out chat.ChannelList
	err := c.do(ctx, http.MethodPut, "/channel/"+esc(channelID), nil, body, &out)
	return oneChannel(&out, err)
}

// SetChannelRateLimit puts a channel in slow mode, one message per
// member per window (sent in whole milliseconds, rounded up), or turns it
// off with chat.RateLimitOff (PUT /channel/{channelId}/rateLimit, ext). A
// post that comes too early fails with code 400311; the *Error's
// RetryAfter, and its chat.RetryAfter detail, say how long to wait.
func (c *Client) SetChannelRateLimit(ctx context.Context, channelID string, window time.Duration) (*Channel, error) {
	var out chat.ChannelList
	ms := window.Milliseconds()
	if window > 0 {
		ms = int64((window + time.Millisecond - 1) / time.Millisecond)
	} else if window < 0 {
		ms = min(ms, -1)
	}
	in := map[string]int64{"rateLimitWindow": ms}
	err := c.do(ctx, http.MethodPut, "/channel/"+esc(channelID)+"/rateLimit", nil, in, &out)
	return oneChannel(&out, err)
}

// MuteUsers mutes members for d, or until unmuted with chat.MuteForever,
// or unmutes them with chat.Unmute (PUT /channel/{channelId}/users/mute).
func (c *Client) MuteUsers(ctx context.Context, channelID string, ids []string, d time.Duration) error {
	in := struct {
		UserIDs    []string `json:"userIds"`
		MutePeriod int64    `json:"mutePeriod"`
	}{ids, mutePeriod(d)}
	return c.action(ctx, http.MethodPut, "/channel/"+esc(channelID)+"/users/mute", in)
}

// BanUsers bans users from a channel (POST /channel/{channelId}/users/ban).
func (c *Client) BanUsers(ctx context.Context, channelID string, ids []string) error {
	return c.action(ctx, http.MethodPost, "/channel/"+esc(channelID)+"/users/ban", userIDs{ids})
}

// UnbanUsers lifts channel bans (POST /channel/{channelId}/users/unban).
func (c *Client) UnbanUsers(ctx context.Context, channelID string, ids []string) error {
	return c.action(ctx, http.MethodPost, "/channel/"+esc(channelID)+"/users/unban", userIDs{ids})
}

// CloseChannel closes a channel for good (POST /channel/{channelId}/close).
func (c *Client) CloseChannel(ctx context.Context, channelID string) error {
	return c.action(ctx, http.MethodPost, "/channel/"+esc(channelID)+"/close", struct{}{})
}

// pages iterates over the items of successive pages: fetch gets the page
// of a token ("" first) and returns its items and paging.
func pages[T any](fetch func(token string) ([]T, *chat.Paging, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		token := ""
		for {
			items, paging, err := fetch(token)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if paging == nil || paging.Next == "" || paging.Next == token || len(items) == 0 {
				return
			}
			token = paging.Next
		}
	}
}

// each calls fn for every item of seq, stopping at the first error.
func each[T any](seq iter.Seq2[T, error], fn func(T) error) error {
	for it, err := range seq {
		if err != nil {
			return err
		}
		if err := fn(it); err != nil {
			return err
		}
	}
	return nil
}

package client

import (
	"context"
	"iter"
	"net/http"

	chat "github.com/chatengine/chat"
)

// SearchOptions pages a message search.
type SearchOptions struct {
	// Limit is the page size (default 20, at most 100).
	Limit int `json:"limit,omitempty"`
	// Token is paging.next or paging.previous of an earlier answer.
	Token string `json:"token,omitempty"`
}

// SearchMessagesRequest finds messages by their words (ext).
type SearchMessagesRequest struct {
	// Query holds the words every message found contains (case-insensitive;
	// the last word may be the beginning of a word).
	Query string `json:"query"`
	// ChannelID searches one channel only.
	ChannelID string `json:"channelId,omitempty"`
	// UserID finds one author's messages only.
	UserID  string         `json:"userId,omitempty"`
	Options *SearchOptions `json:"options,omitempty"`
}

// SearchMessages finds text messages and image and file captions
// containing every word of req.Query, newest first (POST
// /messages/search). As an end user it searches the channels where the
// user is a member.
func (c *Client) SearchMessages(ctx context.Context, req SearchMessagesRequest) (*chat.MessageList, error) {
	var out chat.MessageList
	return &out, c.do(ctx, http.MethodPost, "/messages/search", nil, req, &out)
}

// SearchAll iterates over every message req finds, newest first,
// following paging.next.
func (c *Client) SearchAll(ctx context.Context, req SearchMessagesRequest) iter.Seq2[chat.Message, error] {
	return pages(func(token string) ([]chat.Message, *chat.Paging, error) {
		r := req
		if token != "" {
			o := SearchOptions{Token: token}
			if req.Options != nil {
				o.Limit = req.Options.Limit
			}
			r.Options = &o
		}
		out, err := c.SearchMessages(ctx, r)
		if err != nil {
			return nil, nil, err
		}
		return out.Messages, out.Paging, nil
	})
}

// MentionsRequest lists the messages that mention a user (ext).
type MentionsRequest struct {
	// UserID is the mentioned user: the caller's own user when empty (an
	// admin may name anyone).
	UserID string `json:"userId,omitempty"`
	// ChannelID keeps the mentions of one channel only.
	ChannelID string         `json:"channelId,omitempty"`
	Options   *SearchOptions `json:"options,omitempty"`
}

// Mentions lists the live messages that mention req.UserID in the
// channels where it is a member, newest first (POST /messages/mentions);
// paging.next leads to older ones.
func (c *Client) Mentions(ctx context.Context, req MentionsRequest) (*chat.MessageList, error) {
	var out chat.MessageList
	return &out, c.do(ctx, http.MethodPost, "/messages/mentions", nil, req, &out)
}

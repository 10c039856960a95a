package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"

	chat "github.com/chatengine/chat"
)

// QueryReactorsRequest selects the reactions to one message, newest first.
type QueryReactorsRequest struct {
	ReferenceID string
	// ReferenceType is chat.ReferenceTypeMessage (the default when empty).
	ReferenceType chat.ReferenceType
	// ReactionName keeps reactions of that name.
	ReactionName string
	Options      PageOptions
}

// QueryReactors lists who reacted to a message (GET /reactions).
func (c *Client) QueryReactors(ctx context.Context, req QueryReactorsRequest) (*chat.ReactorList, error) {
	q := query{}
	q.str("referenceId", req.ReferenceID)
	q.str("referenceType", string(refType(req.ReferenceType)))
	q.str("options[reactionName]", req.ReactionName)
	q.int("options[skip]", req.Options.Skip)
	q.int("options[limit]", req.Options.Limit)
	q.str("options[token]", req.Options.Token)
	var out chat.ReactorList
	return &out, c.do(ctx, http.MethodGet, "/reactions", url.Values(q), nil, &out)
}

// Reactors iterates over every reaction req selects, following paging.next.
func (c *Client) Reactors(ctx context.Context, req QueryReactorsRequest) iter.Seq2[chat.Reactor, error] {
	return pages(func(token string) ([]chat.Reactor, *chat.Paging, error) {
		r := req
		if token != "" {
			r.Options = PageOptions{Token: token, Limit: req.Options.Limit}
		}
		out, err := c.QueryReactors(ctx, r)
		if err != nil {
			return nil, nil, err
		}
		var items []chat.Reactor
		for _, g := range out.Results.Reactions {
			items = append(items, g.Reactors...)
		}
		return items, out.Paging, nil
	})
}

func refType(t chat.ReferenceType) chat.ReferenceType {
	if t == "" {
		return chat.ReferenceTypeMessage
	}
	return t
}

// ReactionRequest names one reaction of the admin's user.
type ReactionRequest struct {
	ReferenceID string `json:"referenceId"`
	// ReferenceType is chat.ReferenceTypeMessage (the default when empty).
	ReferenceType chat.ReferenceType `json:"referenceType"`
	ReactionName  string             `json:"reactionName"`
}

// AddReaction adds the admin's user's reaction and returns its id (POST
// /reactions). Adding it again returns the same id.
func (c *Client) AddReaction(ctx context.Context, req ReactionRequest) (string, error) {
	req.ReferenceType = refType(req.ReferenceType)
	var out success
	if err := c.do(ctx, http.MethodPost, "/reactions", nil, req, &out); err != nil {
		return "", err
	}
	if out.AddedID == nil {
		return "", nil
	}
	return *out.AddedID, nil
}

// RemoveReaction removes the admin's user's reaction and returns its id,
// "" when there was none (DELETE /reactions).
func (c *Client) RemoveReaction(ctx context.Context, req ReactionRequest) (string, error) {
	req.ReferenceType = refType(req.ReferenceType)
	var out success
	if err := c.do(ctx, http.MethodDelete, "/reactions", nil, req, &out); err != nil {
		return "", err
	}
	if out.RemovedID == nil {
		return "", nil
	}
	return *out.RemovedID, nil
}

package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"time"

	chat "github.com/chatengine/chat"
)

// QueryAuditRequest selects audit entries, newest first. Each non-empty
// filter must match exactly.
type QueryAuditRequest struct {
	ActorID   string
	TargetID  string
	ChannelID string
	// Action is one of chat.AuditActions.
	Action string
	// Limit is the page size (default 10, at most 100).
	Limit int
	// Token continues a query (paging.next or paging.previous).
	Token string
}

// QueryAudit lists the audit log (GET /audit, ext, admins).
func (c *Client) QueryAudit(ctx context.Context, req QueryAuditRequest) (*chat.AuditList, error) {
	q := query{}
	q.str("actorId", req.ActorID)
	q.str("targetId", req.TargetID)
	q.str("channelId", req.ChannelID)
	q.str("action", req.Action)
	q.int("options[limit]", req.Limit)
	q.str("options[token]", req.Token)
	var out chat.AuditList
	return &out, c.do(ctx, http.MethodGet, "/audit", url.Values(q), nil, &out)
}

// Audit iterates over every audit entry req selects, newest first,
// following paging.next.
func (c *Client) Audit(ctx context.Context, req QueryAuditRequest) iter.Seq2[chat.AuditEntry, error] {
	return pages(func(token string) ([]chat.AuditEntry, *chat.Paging, error) {
		r := req
		if token != "" {
			r.Token = token
		}
		out, err := c.QueryAudit(ctx, r)
		if err != nil {
			return nil, nil, err
		}
		return out.Audit, out.Paging, nil
	})
}

// CheckMessageRequest is a message to check as UserID (its fields as in
// POST /message). Without ChannelID only the content rules run.
type CheckMessageRequest struct {
	UserID    string           `json:"userId"`
	ChannelID string           `json:"channelId,omitempty"`
	Type      chat.MessageType `json:"type"`
	Data      map[string]any   `json:"data"`
	Tags      []string         `json:"tags,omitempty"`
	ParentID  string           `json:"parentId,omitempty"`
}

// CheckMessage is a dry run of creating a message as req.UserID (POST
// /moderation/check, ext, admins): the answer says whether it would be
// allowed, or the code, message and detail of the refusal. Nothing
// changes.
func (c *Client) CheckMessage(ctx context.Context, req CheckMessageRequest) (*chat.CheckResult, error) {
	var out chat.CheckResult
	return &out, c.do(ctx, http.MethodPost, "/moderation/check", nil, req, &out)
}

// PurgeMessagesRequest bounds a purge: one channel (empty for every
// channel) and messages created since a time (nil for all).
type PurgeMessagesRequest struct {
	ChannelID string
	Since     *time.Time
}

// PurgeUserMessages deletes the messages of a user (POST
// /users/{userId}/messages/delete, ext, admins) and returns how many it
// deleted.
func (c *Client) PurgeUserMessages(ctx context.Context, userID string, req PurgeMessagesRequest) (int, error) {
	in := struct {
		ChannelID string     `json:"channelId,omitempty"`
		Since     *chat.Time `json:"since,omitempty"`
	}{ChannelID: req.ChannelID}
	if req.Since != nil {
		in.Since = chat.TimePtr(*req.Since)
	}
	var out chat.PurgeResult
	err := c.do(ctx, http.MethodPost, "/users/"+esc(userID)+"/messages/delete", nil, in, &out)
	return out.Deleted, err
}

package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"time"

	chat "github.com/chatengine/chat"
)

// QueryUsersRequest selects users, ordered by userId.
type QueryUsersRequest struct {
	// Search matches a case-insensitive prefix of any word of displayName
	// (and of the rest of the name from that word) or of userId.
	Search string
	// Filter is chat.UsersAll (the default) or chat.UsersFlagged.
	Filter chat.UserFlagFilter
	// PageToken continues a query.
	PageToken string
	// Limit is the page size (default 10, at most 100).
	Limit int
}

// QueryUsers lists users (GET /users).
func (c *Client) QueryUsers(ctx context.Context, req QueryUsersRequest) (*chat.UserList, error) {
	q := query{}
	q.str("search", req.Search)
	q.str("filter", string(req.Filter))
	q.str("pageToken", req.PageToken)
	q.int("limit", req.Limit)
	var out chat.UserList
	return &out, c.do(ctx, http.MethodGet, "/users", url.Values(q), nil, &out)
}

// Users iterates over every user req selects, following paging.next.
func (c *Client) Users(ctx context.Context, req QueryUsersRequest) iter.Seq2[chat.User, error] {
	return pages(func(token string) ([]chat.User, *chat.Paging, error) {
		r := req
		if token != "" {
			r.PageToken = token
		}
		out, err := c.QueryUsers(ctx, r)
		if err != nil {
			return nil, nil, err
		}
		return out.Users, out.Paging, nil
	})
}

// QueryUsersAll calls fn for every user req selects (see Users), stopping
// at the first error fn or the API returns.
func (c *Client) QueryUsersAll(ctx context.Context, req QueryUsersRequest, fn func(chat.User) error) error {
	return each(c.Users(ctx, req), fn)
}

// GetUser reads one user (GET /users/{userId}, ext).
func (c *Client) GetUser(ctx context.Context, userID string) (*chat.User, error) {
	var out chat.UserList
	err := c.do(ctx, http.MethodGet, "/users/"+esc(userID), nil, nil, &out)
	return oneUser(&out, err)
}

// UpdateUserRequest is a partial update: nil fields stay as they are;
// Roles and Metadata replace the whole value.
type UpdateUserRequest struct {
	UserID      string          `json:"userId"`
	DisplayName *string         `json:"displayName,omitempty"`
	Roles       *[]string       `json:"roles,omitempty"`
	Metadata    *map[string]any `json:"metadata,omitempty"`
}

// UpdateUser creates the user if absent and applies the update (PUT /users).
func (c *Client) UpdateUser(ctx context.Context, req UpdateUserRequest) (*chat.User, error) {
	var out chat.UserList
	err := c.do(ctx, http.MethodPut, "/users", nil, req, &out)
	return oneUser(&out, err)
}

// GlobalBan bans a user everywhere; with deleteMessages the user's
// messages are deleted too (POST /users/ban).
func (c *Client) GlobalBan(ctx context.Context, userID string, deleteMessages bool) error {
	in := struct {
		UserID         string `json:"userId"`
		DeleteMessages bool   `json:"deleteMessages,omitempty"`
	}{userID, deleteMessages}
	return c.action(ctx, http.MethodPost, "/users/ban", in)
}

// GlobalUnban lifts a global ban (POST /users/unban).
func (c *Client) GlobalUnban(ctx context.Context, userID string) error {
	return c.action(ctx, http.MethodPost, "/users/unban", map[string]string{"userId": userID})
}

// FlagUser flags a user as the admin's user (POST /users/{userId}/flags, ext).
func (c *Client) FlagUser(ctx context.Context, userID string) (*chat.User, error) {
	var out chat.UserList
	err := c.do(ctx, http.MethodPost, "/users/"+esc(userID)+"/flags", nil, struct{}{}, &out)
	return oneUser(&out, err)
}

// ClearUserFlags removes every flag of a user (DELETE /users/{userId}/flags).
func (c *Client) ClearUserFlags(ctx context.Context, userID string) error {
	return c.action(ctx, http.MethodDelete, "/users/"+esc(userID)+"/flags", nil)
}

// QueryRoles lists roles whose id contains filter (GET /roles).
func (c *Client) QueryRoles(ctx context.Context, filter string) (*chat.RoleList, error) {
	q := query{}
	q.str("filter", filter)
	var out chat.RoleList
	return &out, c.do(ctx, http.MethodGet, "/roles", url.Values(q), nil, &out)
}

// PutRoles creates or replaces roles with the given permissions (PUT /roles).
func (c *Client) PutRoles(ctx context.Context, publicIDs, permissions []string) (*chat.RoleList, error) {
	if permissions == nil {
		permissions = []string{}
	}
	in := struct {
		PublicIDs   []string `json:"publicIds"`
		Permissions []string `json:"permissions"`
	}{publicIDs, permissions}
	var out chat.RoleList
	return &out, c.do(ctx, http.MethodPut, "/roles", nil, in, &out)
}

// MintUserToken asks for a user token for userID (POST
// /users/{userId}/token, admins only): ttl is its lifetime in whole
// seconds (rounded up), 0 for the server's default (24 h), negative for a
// token without expiry. A Client made with the token acts as that user.
func (c *Client) MintUserToken(ctx context.Context, userID string, ttl time.Duration) (*chat.UserToken, error) {
	body := map[string]any{}
	switch {
	case ttl < 0:
		body["ttl"] = 0
	case ttl > 0:
		body["ttl"] = int64((ttl + time.Second - 1) / time.Second)
	}
	var out chat.UserToken
	return &out, c.do(ctx, http.MethodPost, "/users/"+esc(userID)+"/token", nil, body, &out)
}

// RevokeUserTokens refuses every token of userID issued before now (POST
// /users/{userId}/tokens/revoke, admins only).
func (c *Client) RevokeUserTokens(ctx context.Context, userID string) error {
	return c.do(ctx, http.MethodPost, "/users/"+esc(userID)+"/tokens/revoke", nil, nil, nil)
}

// Package client is a typed Go client for the chat admin API served by
// package httpapi.
//
// Every method takes a context first and a typed request, sends JSON (or
// multipart/form-data for uploads) and returns the types of package chat.
// A call that makes or reads one thing returns that thing: CreateChannel
// a *Channel, CreateMessage a *Message, GetUser a *chat.User. Channel and
// Message embed the chat value, so its fields and methods are theirs,
// and keep what the API side-loads with it in their other fields: the
// channelUsers and users of a channel, the author of a message.
// Listings return the chat list types (chat.ChannelList, ...) and page
// with opaque tokens; the iterators Channels, Messages, Users, Reactors,
// Deliveries and Audit follow paging.next until the end.
//
// Failures are *Error values that carry the HTTP status, the wire code,
// the message, the typed detail and the request id; errors.Is works
// against the chat sentinels and errors.As reaches the detail values:
//
//	c := client.New("http://127.0.0.1:8080/api/v2", token)
//	ch, err := c.CreateChannel(ctx, client.CreateChannelRequest{ChannelID: "general", Type: chat.ChannelTypeStandard})
//	var field chat.FieldError
//	switch {
//	case errors.Is(err, chat.ErrConflict):
//		// the channel exists
//	case errors.As(err, &field):
//		// field.Field names the refused input
//	case err == nil:
//		fmt.Println(ch.DisplayName, len(ch.ChannelUsers))
//	}
//
// # Timeouts
//
// A Client made by New gives each call DefaultTimeout (WithTimeout
// changes it, 0 removes it). A call that returns JSON must finish within
// it. A download must have its response headers within it; its body is
// then read for as long as the caller's context allows, however long
// that takes. An upload's body is sent for as long as the caller's
// context allows, and the server's answer must come within the timeout
// after it (through the Transport's ResponseHeaderTimeout, so only with
// the Client's own HTTP client). An HTTP client given with
// WithHTTPClient should not set http.Client.Timeout, which would cut
// long downloads and uploads.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
)

// Client calls the admin API. It is safe for concurrent use.
type Client struct {
	base      string
	token     string
	hc        *http.Client
	timeout   time.Duration
	userAgent string
}

// DefaultTimeout is the default time limit of a call (see Timeouts in
// the package documentation).
const DefaultTimeout = 30 * time.Second

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the Client send its requests with hc instead of
// an HTTP client of its own (which uses a copy of http.DefaultTransport
// whose ResponseHeaderTimeout is the call timeout). hc should not set
// Timeout (see Timeouts).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithTimeout sets the time limit of a call (default DefaultTimeout; 0
// means none beyond the caller's context). See Timeouts.
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithUserAgent sets the User-Agent header (default "chat-go-client").
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a Client for the API mounted at baseURL (for example
// "http://127.0.0.1:8080/api/v2") that authenticates with token: an admin
// account's access token (chat_...), to act as the admin, or an end
// user's token (a JWT, see MintUserToken), to act as that user with its
// rights. The calls are the same; the server refuses what the caller may
// not do (403, code 400301).
func New(baseURL, token string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), token: token, timeout: DefaultTimeout, userAgent: "chat-go-client"}
	for _, o := range opts {
		o(c)
	}
	if c.hc == nil {
		var rt http.RoundTripper = http.DefaultTransport
		if t, ok := http.DefaultTransport.(*http.Transport); ok {
			t = t.Clone()
			t.ResponseHeaderTimeout = max(c.timeout, 0)
			rt = t
		}
		c.hc = &http.Client{Transport: rt}
	}
	return c
}

// callContext returns the context of a call that must finish within the
// Client's timeout.
func (c *Client) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.timeout)
}

// Error is an error answered by the API (or a response that could not be
// read as one).
type Error struct {
	// Status is the HTTP status.
	Status int
	// Code is the wire error code, such as chat.CodeNotFound.
	Code chat.Code
	// Message is the API's explanation.
	Message string
	// Detail is the structured detail (data.detail) as the chat types
	// (chat.FieldError, chat.RuleRef, ...); errors.As reaches each.
	Detail []chat.Detail
	// RequestID is the X-Request-Id of the response, for support requests.
	RequestID string
	// RetryAfter is how long to wait before trying again, from the
	// Retry-After header of a 429 (rate limited, code 400311) or 503; 0
	// when the response had none.
	RetryAfter time.Duration
}

// Error implements the error interface.
func (e *Error) Error() string {
	s := fmt.Sprintf("chat api: %d %d: %s", e.Status, int(e.Code), e.Message)
	if e.RequestID != "" {
		s += " (request id " + e.RequestID + ")"
	}
	return s
}

// Is reports whether target is a *chat.Error (such as chat.ErrNotFound)
// or an *Error with the same code; a target with a message must match it
// too.
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case *chat.Error:
		return t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
	case *Error:
		return t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
	}
	return false
}

// Unwrap returns the error as a *chat.Error, so errors.As can reach one
// and, through it, the detail values.
func (e *Error) Unwrap() error {
	return &chat.Error{Code: e.Code, Message: e.Message, Detail: e.Detail}
}

// codeOfStatus guesses the wire code of a response without an error body.
func codeOfStatus(status int) chat.Code {
	switch status {
	case http.StatusBadRequest:
		return chat.CodeBadRequest
	case http.StatusUnauthorized:
		return chat.CodeUnauthorized
	case http.StatusForbidden:
		return chat.CodeForbidden
	case http.StatusNotFound:
		return chat.CodeNotFound
	case http.StatusConflict:
		return chat.CodeConflict
	case http.StatusRequestEntityTooLarge:
		return chat.CodeTooLarge
	case http.StatusUnsupportedMediaType:
		return chat.CodeUnsupportedMedia
	case http.StatusTooManyRequests:
		return chat.CodeRateLimited
	case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		return chat.CodeUnavailable
	}
	if status >= 500 {
		return chat.CodeInternal
	}
	return chat.CodeBadRequest
}

// responseError reads an error response.
func responseError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &Error{Status: resp.StatusCode, RequestID: resp.Header.Get("X-Request-Id")}
	if secs, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && secs > 0 {
		e.RetryAfter = time.Duration(secs) * time.Second
	}
	var body struct {
		Code    chat.Code `json:"code"`
		Message string    `json:"message"`
		Data    struct {
			Detail []json.RawMessage `json:"detail"`
		} `json:"data"`
	}
	if json.Unmarshal(b, &body) == nil && body.Code != 0 {
		e.Code, e.Message = body.Code, body.Message
		if body.Data.Detail != nil {
			e.Detail = make([]chat.Detail, 0, len(body.Data.Detail))
		}
		for _, raw := range body.Data.Detail {
			if d, err := chat.ParseDetail(raw); err == nil {
				e.Detail = append(e.Detail, d)
			}
		}
		return e
	}
	e.Code = codeOfStatus(resp.StatusCode)
	e.Message = http.StatusText(resp.StatusCode)
	if s := strings.TrimSpace(string(b)); s != "" {
		if len(s) > 200 {
			s = s[:200]
		}
		e.Message += ": " + s
	}
	return e
}

// endpoint joins path elements: literal segments and escaped ids.
func (c *Client) endpoint(path string, query url.Values) string {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	return u
}

// esc escapes an id for use as one path segment.
func esc(id string) string { return url.PathEscape(id) }

// send performs a request and returns the response when its status is
// 2xx or 304; other statuses become *Error.
func (c *Client) send(ctx context.Context, method, u string, body io.Reader, contentType string, hdr http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	req.Header.Set("Accept", "application/json")
	if c.userAgent != "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusNotModified {
		defer resp.Body.Close()
		return nil, responseError(resp)
	}
	return resp, nil
}

// do sends in (as JSON when not nil) and decodes the JSON response into
// out (when not nil), within the Client's timeout.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	ctx, cancel := c.callContext(ctx)
	defer cancel()
	var body io.Reader
	ct := ""
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body, ct = bytes.NewReader(b), "application/json"
	}
	resp, err := c.send(ctx, method, c.endpoint(path, query), body, ct, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	return decodeJSON(resp, out)
}

// decodeJSON decodes a JSON response body into out.
func decodeJSON(resp *http.Response, out any) error {
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("chat api: decoding the response of %s %s: %w", resp.Request.Method, resp.Request.URL.Path, err)
	}
	return nil
}

// success is the body of actions.
type success struct {
	Success   bool    `json:"success"`
	AddedID   *string `json:"addedId"`
	RemovedID *string `json:"removedId"`
}

// action sends in and expects {"success":true}.
func (c *Client) action(ctx context.Context, method, path string, in any) error {
	return c.do(ctx, method, path, nil, in, &success{})
}

// Ptr returns a pointer to v, for the optional fields of requests.
func Ptr[T any](v T) *T { return &v }

// query helps build query strings.
type query url.Values

func (q query) str(k, v string) {
	if v != "" {
		url.Values(q).Set(k, v)
	}
}

func (q query) int(k string, v int) {
	if v != 0 {
		url.Values(q).Set(k, strconv.Itoa(v))
	}
}

func (q query) strs(k string, v []string) {
	for _, s := range v {
		url.Values(q).Add(k, s)
	}
}

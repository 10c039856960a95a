package client

import (
	"context"
	"fmt"
	"io"
	"iter"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
)

// MessageOptions position a message query. After and Before are exclusive
// channelSegment bounds; First is the count after (or the oldest n alone),
// Last the count before (or the newest n alone); with neither the newest
// page comes back. Token continues a query.
type MessageOptions struct {
	After  *int64 `json:"after,omitempty"`
	First  int    `json:"first,omitempty"`
	Before *int64 `json:"before,omitempty"`
	Last   int    `json:"last,omitempty"`
	Token  string `json:"token,omitempty"`
}

// QueryMessagesRequest selects messages of a channel.
type QueryMessagesRequest struct {
	ChannelID string `json:"channelId"`
	// UserID keeps only the messages of that author (ext).
	UserID string `json:"userId,omitempty"`
	// ParentID selects the comments of that message.
	ParentID string `json:"parentId,omitempty"`
	// FilterByParentID keeps only messages without a parent.
	FilterByParentID bool     `json:"filterByParentId,omitempty"`
	Tags             []string `json:"tags,omitempty"`
	ExcludeTags      []string `json:"excludeTags,omitempty"`
	// IncludeDeleted also lists deleted messages (ext).
	IncludeDeleted bool            `json:"includeDeleted,omitempty"`
	Options        *MessageOptions `json:"options,omitempty"`
}

// QueryMessages lists messages in channelSegment order (POST /messages).
func (c *Client) QueryMessages(ctx context.Context, req QueryMessagesRequest) (*chat.MessageList, error) {
	var out chat.MessageList
	return &out, c.do(ctx, http.MethodPost, "/messages", nil, req, &out)
}

// Messages iterates over the messages req selects in ascending
// channelSegment order, following paging.next. Without Options it starts
// at the oldest message (100 per page), so it visits every message.
func (c *Client) Messages(ctx context.Context, req QueryMessagesRequest) iter.Seq2[chat.Message, error] {
	if req.Options == nil {
		req.Options = &MessageOptions{First: 100}
	}
	return pages(func(token string) ([]chat.Message, *chat.Paging, error) {
		r := req
		if token != "" {
			r.Options = &MessageOptions{Token: token}
		}
		out, err := c.QueryMessages(ctx, r)
		if err != nil {
			return nil, nil, err
		}
		return out.Messages, out.Paging, nil
	})
}

// QueryMessagesAll calls fn for every message req selects (see Messages),
// stopping at the first error fn or the API returns.
func (c *Client) QueryMessagesAll(ctx context.Context, req QueryMessagesRequest, fn func(chat.Message) error) error {
	return each(c.Messages(ctx, req), fn)
}

// GetMessage reads one message, deleted ones too (GET /message/{messageId}).
func (c *Client) GetMessage(ctx context.Context, messageID string) (*Message, error) {
	var out chat.MessageList
	err := c.do(ctx, http.MethodGet, "/message/"+esc(messageID), nil, nil, &out)
	return oneMessage(&out, err)
}

// CreateMessageRequest posts a text or custom message.
type CreateMessageRequest struct {
	ChannelID string `json:"channelId"`
	// Type is chat.MessageTypeText (Data holds the text, see
	// chat.TextData) or chat.MessageTypeCustom (see chat.CustomData).
	Type     chat.MessageType `json:"type"`
	Data     map[string]any   `json:"data"`
	Tags     []string         `json:"tags,omitempty"`
	ParentID string           `json:"parentId,omitempty"`
	// MentionedUserIDs names members the message mentions besides the
	// @userId mentions of its text (ext).
	MentionedUserIDs []string `json:"mentionedUserIds,omitempty"`
}

// CreateMessage posts a message as the admin's user (POST /message).
func (c *Client) CreateMessage(ctx context.Context, req CreateMessageRequest) (*Message, error) {
	var out chat.MessageList
	err := c.do(ctx, http.MethodPost, "/message", nil, req, &out)
	return oneMessage(&out, err)
}

// SendText posts a text message.
func (c *Client) SendText(ctx context.Context, channelID, text string) (*Message, error) {
	return c.CreateMessage(ctx, CreateMessageRequest{ChannelID: channelID, Type: chat.MessageTypeText, Data: chat.TextData(text)})
}

// UpdateMessageRequest edits a message; nil fields stay as they are.
type UpdateMessageRequest struct {
	// Data replaces a text or custom message's data.
	Data map[string]any
	// Caption replaces an image message's caption ("" removes it).
	Caption *string
	// Tags replaces the tags (an empty, non-nil slice removes them).
	Tags []string
	// MentionedUserIDs, with Data or Caption, names members the edited
	// message mentions besides the @userId mentions of its new text.
	MentionedUserIDs []string
}

// UpdateMessage edits a message as the admin's user (PUT
// /message/{messageId}, ext): it gets editedAt, and message.didUpdate is
// emitted.
func (c *Client) UpdateMessage(ctx context.Context, messageID string, req UpdateMessageRequest) (*Message, error) {
	body := map[string]any{}
	if req.Data != nil {
		body["data"] = req.Data
	}
	if req.Caption != nil {
		body["caption"] = *req.Caption
	}
	if req.Tags != nil {
		body["tags"] = req.Tags
	}
	if req.MentionedUserIDs != nil {
		body["mentionedUserIds"] = req.MentionedUserIDs
	}
	var out chat.MessageList
	err := c.do(ctx, http.MethodPut, "/message/"+esc(messageID), nil, body, &out)
	return oneMessage(&out, err)
}

// DeleteMessage soft-deletes a message (DELETE /message/{messageId}).
func (c *Client) DeleteMessage(ctx context.Context, messageID string) error {
	return c.action(ctx, http.MethodDelete, "/message/"+esc(messageID), nil)
}

// FlagMessage flags a message as the admin's user (POST
// /message/{messageId}/flags, ext).
func (c *Client) FlagMessage(ctx context.Context, messageID string) (*Message, error) {
	var out chat.MessageList
	err := c.do(ctx, http.MethodPost, "/message/"+esc(messageID)+"/flags", nil, struct{}{}, &out)
	return oneMessage(&out, err)
}

// ClearMessageFlags removes every flag of a message (DELETE
// /message/{messageId}/flags, ext).
func (c *Client) ClearMessageFlags(ctx context.Context, messageID string) error {
	return c.action(ctx, http.MethodDelete, "/message/"+esc(messageID)+"/flags", nil)
}

// ImageOptions are the optional fields of an image upload.
type ImageOptions struct {
	Caption  string
	Tags     []string
	ParentID string
	// FullImage keeps the original size as the "full" rendition.
	FullImage bool
	// ContentType of the file part (default application/octet-stream; the
	// server sniffs images anyway).
	ContentType string
}

// FileOptions are the optional fields of a file upload.
type FileOptions struct {
	Tags     []string
	ParentID string
	// ContentType of the file (default: sniffed by the server).
	ContentType string
}

// CreateImageMessage uploads an image read from r and posts it (POST
// /messages/images). The body is streamed, channelId first, so the server
// can refuse early.
func (c *Client) CreateImageMessage(ctx context.Context, channelID, fileName string, r io.Reader, opts *ImageOptions) (*Message, error) {
	if opts == nil {
		opts = &ImageOptions{}
	}
	fields := [][2]string{{"channelId", channelID}}
	if opts.Caption != "" {
		fields = append(fields, [2]string{"caption", opts.Caption})
	}
	if opts.ParentID != "" {
		fields = append(fields, [2]string{"parentId", opts.ParentID})
	}
	if opts.FullImage {
		fields = append(fields, [2]string{"fullImage", "true"})
	}
	for _, t := range opts.Tags {
		fields = append(fields, [2]string{"tags", t})
	}
	return c.upload(ctx, "/messages/images", fields, fileName, opts.ContentType, r)
}

// CreateFileMessage uploads a file read from r and posts it (POST
// /messages/files).
func (c *Client) CreateFileMessage(ctx context.Context, channelID, fileName string, r io.Reader, opts *FileOptions) (*Message, error) {
	if opts == nil {
		opts = &FileOptions{}
	}
	fields := [][2]string{{"channelId", channelID}}
	if opts.ParentID != "" {
		fields = append(fields, [2]string{"parentId", opts.ParentID})
	}
	for _, t := range opts.Tags {
		fields = append(fields, [2]string{"tags", t})
	}
	return c.upload(ctx, "/messages/files", fields, fileName, opts.ContentType, r)
}

var quoteEscaper = strings.NewReplacer("\\", "\\\\", `"`, "\\\"", "\r", "", "\n", "")

// upload streams a multipart/form-data body: the fields, then the file.
func (c *Client) upload(ctx context.Context, path string, fields [][2]string, fileName, contentType string, r io.Reader) (*Message, error) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := func() error {
			for _, f := range fields {
				if err := mw.WriteField(f[0], f[1]); err != nil {
					return err
				}
			}
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename="%s"`, quoteEscaper.Replace(fileName)))
			if contentType == "" {
				contentType = "application/octet-stream"
			}
			h.Set("Content-Type", contentType)
			part, err := mw.CreatePart(h)
			if err != nil {
				return err
			}
			if _, err := io.Copy(part, r); err != nil {
				return err
			}
			return mw.Close()
		}()
		pw.CloseWithError(err)
	}()
	resp, err := c.send(ctx, http.MethodPost, c.endpoint(path, nil), pr, mw.FormDataContentType(), nil)
	pr.CloseWithError(io.ErrClosedPipe) // stop the writer if the server answered early
	<-done                              // r is not read after upload returns
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out chat.MessageList
	return oneMessage(&out, decodeJSON(resp, &out))
}

// Download is a file or image being downloaded: its body, streamed from
// the connection, and the response headers that describe it. Read it
// (it is an io.Reader) and Close it when done, also after an early stop.
type Download struct {
	// Body is the response body (empty for 304). Read and Close read and
	// close it.
	Body io.ReadCloser
	// Status is 200, 206 (a Range request) or 304 (If-None-Match matched).
	Status int
	// ContentType is the Content-Type header.
	ContentType string
	// ContentLength is the length of Body in bytes, -1 when unknown.
	ContentLength int64
	// ETag is the ETag header, for a later If-None-Match.
	ETag string
	// ContentRange is the Content-Range header of a 206, such as
	// "bytes 10-19/100".
	ContentRange string
	// FileName is the filename of the Content-Disposition header.
	FileName string
	// Header holds every response header.
	Header http.Header
}

// Read reads from Body.
func (d *Download) Read(p []byte) (int, error) { return d.Body.Read(p) }

// Close closes Body, ending the download.
func (d *Download) Close() error { return d.Body.Close() }

// GetImage downloads a rendition of an image message: size is
// chat.ImageSmall, chat.ImageMedium (the default when empty),
// chat.ImageLarge or chat.ImageFull (GET /messages/{messageId}/images).
// hdr, when not nil, adds request headers such as Range or
// If-None-Match. The caller must Close the Download.
func (c *Client) GetImage(ctx context.Context, messageID, size string, hdr http.Header) (*Download, error) {
	q := url.Values{}
	if size != "" {
		q.Set("size", size)
	}
	return c.download(ctx, c.endpoint("/messages/"+esc(messageID)+"/images", q), hdr)
}

// GetFile downloads the file of a file message (GET
// /messages/{messageId}/files). hdr, when not nil, adds request headers
// such as Range or If-None-Match. The caller must Close the Download.
func (c *Client) GetFile(ctx context.Context, messageID string, hdr http.Header) (*Download, error) {
	return c.download(ctx, c.endpoint("/messages/"+esc(messageID)+"/files", nil), hdr)
}

// OpenLink downloads a signed file link as the API returns it in a
// message's data.urls (images) or data.url (files): a path under the
// API's prefix, resolved against the Client's base URL, or an absolute
// URL. It sends no access token: the link is its own permission. An
// altered or expired link is an *Error with chat.CodeForbidden, the link
// of a deleted message chat.CodeNotFound. The caller must Close the
// Download.
func (c *Client) OpenLink(ctx context.Context, link string, hdr http.Header) (*Download, error) {
	base, err := url.Parse(c.base)
	if err != nil {
		return nil, err
	}
	ref, err := url.Parse(link)
	if err != nil {
		return nil, fmt.Errorf("chat api: link %q: %w", link, err)
	}
	anon := *c
	anon.token = ""
	return anon.download(ctx, base.ResolveReference(ref).String(), hdr)
}

// download starts a download: the response headers must come within the
// Client's timeout, the body is then read for as long as ctx allows.
func (c *Client) download(ctx context.Context, u string, hdr http.Header) (*Download, error) {
	ctx, cancel := context.WithCancel(ctx)
	timedOut := func() bool { return false }
	if c.timeout > 0 {
		t := time.AfterFunc(c.timeout, cancel)
		timedOut = func() bool { return !t.Stop() }
	}
	resp, err := c.send(ctx, http.MethodGet, u, nil, "", hdr)
	if timedOut() {
		if err == nil {
			resp.Body.Close()
		}
		err = fmt.Errorf("chat api: no response headers within %v: %w", c.timeout, context.DeadlineExceeded)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	d := &Download{Body: &cancelBody{resp.Body, cancel}, Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"),
		ContentLength: resp.ContentLength, ETag: resp.Header.Get("ETag"), ContentRange: resp.Header.Get("Content-Range"), Header: resp.Header}
	if _, ps, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition")); err == nil {
		d.FileName = ps["filename"]
	}
	return d, nil
}

// cancelBody is a response body that ends its request's context when
// closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

// Close closes the body and ends the request's context.
func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// MostReactedRequest selects the messages with the most reactions of one
// name.
type MostReactedRequest struct {
	ReactionName string
	// Limit is the number of messages (0 means 10; at most 100).
	Limit int
	// ChannelID scopes the query to one channel (ext).
	ChannelID string
}

// MostReacted lists messages by their count of one reaction (GET
// /reactions/messages/most).
func (c *Client) MostReacted(ctx context.Context, req MostReactedRequest) (*chat.MessageList, error) {
	q := query{}
	q.str("reactionName", req.ReactionName)
	q.str("channelId", req.ChannelID)
	q.int("limit", req.Limit)
	var out chat.MessageList
	return &out, c.do(ctx, http.MethodGet, "/reactions/messages/most", url.Values(q), nil, &out)
}

package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/client"
	"github.com/chatengine/chat/httpapi"
)

func testLimits(t *testing.T, newStore storeFactory) {
	e := newEnv(t, newStore, func(c *httpapi.Config, _ *chat.Config) {
		c.MaxBodyBytes = 1024
		c.MaxUploadBytes = 64 << 10
		c.MaxImagePixels = 10_000
	})
	c := e.c
	_, err := c.CreateChannel(ctx(t), client.CreateChannelRequest{ChannelID: "ch", Type: "standard"})
	require.NoError(t, err)

	// Bodies over MaxBodyBytes: 413 with 400413, JSON or form, with or
	// without a Content-Length.
	_, err = c.SendText(ctx(t), "ch", strings.Repeat("x", 2000))
	requireCode(t, err, chat.CodeTooLarge)
	r := e.do("POST", "/channel", "application/x-www-form-urlencoded", "channelId=x&type=standard&displayName="+strings.Repeat("y", 2000))
	requireError(t, r, chat.CodeTooLarge, "larger than 1024 bytes")
	req, err := http.NewRequest("POST", e.base+"/message", &chunked{strings.NewReader(`{"channelId":"ch","type":"text","data":{"text":"` + strings.Repeat("z", 4000) + `"}}`)})
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	// Just under the limit works.
	_, err = c.SendText(ctx(t), "ch", strings.Repeat("x", 900))
	require.NoError(t, err)

	// Uploads over MaxUploadBytes: 413 while streaming.
	_, err = c.CreateFileMessage(ctx(t), "ch", "big.bin", bytes.NewReader(make([]byte, 200<<10)), nil)
	requireCode(t, err, chat.CodeTooLarge)
	_, err = c.CreateFileMessage(ctx(t), "ch", "ok.bin", bytes.NewReader(make([]byte, 64<<10)), nil)
	require.NoError(t, err, "exactly the limit is allowed")
	_, err = c.CreateImageMessage(ctx(t), "ch", "big.png", bytes.NewReader(append(pngImage(t, 8, 8, false), make([]byte, 100<<10)...)), nil)
	requireCode(t, err, chat.CodeTooLarge)
	// Images over MaxImagePixels: 413, decided from the header.
	_, err = c.CreateImageMessage(ctx(t), "ch", "wide.png", bytes.NewReader(pngImage(t, 200, 100, false)), nil)
	ce := requireCode(t, err, chat.CodeTooLarge)
	require.Contains(t, ce.Message, "pixels")
	_, err = c.CreateImageMessage(ctx(t), "ch", "fits.png", bytes.NewReader(pngImage(t, 100, 100, false)), nil)
	require.NoError(t, err)

	// Nothing was stored by the rejected requests.
	n := 0
	require.NoError(t, c.QueryMessagesAll(ctx(t), client.QueryMessagesRequest{ChannelID: "ch"}, func(chat.Message) error { n++; return nil }))
	require.Equal(t, 3, n)
}

// chunked hides the length of a reader so the request is sent chunked.
type chunked struct{ r *strings.Reader }

func (c *chunked) Read(p []byte) (int, error) { return c.r.Read(p) }

// lockedBuffer is a concurrency-safe log sink.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// testInternalError: a store failure is 500000 (or 500300 when the store
// is unavailable) with a generic message that names the request id and
// leaks nothing; the cause is logged with the request id.
func testInternalError(t *testing.T, newStore storeFactory) {
	const secret = "pq: password authentication failed for user chat at 10.1.2.3"
	fs := &failingStore{Store: newStore(t)}
	fs.failWith(errors.New(secret))
	var logs lockedBuffer
	e := newEnvOn(t, fs, func(c *httpapi.Config, _ *chat.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		c.AccessLog = true
	})
	fs.fail.Store(true)
	_, err := e.c.CreateChannel(ctx(t), client.CreateChannelRequest{ChannelID: "ch", Type: "standard"})
	ce := requireCode(t, err, chat.CodeInternal)
	require.NotContains(t, ce.Message, "pq")
	require.NotContains(t, ce.Message, "10.1.2.3")
	require.Equal(t, "internal error; the request id is "+ce.RequestID, ce.Message)
	require.Equal(t, []chat.Detail{}, ce.Detail)
	require.Contains(t, logs.String(), secret)
	require.Contains(t, logs.String(), fmt.Sprintf(`"requestId":%q`, ce.RequestID))
	require.Contains(t, logs.String(), `"status":500`, "the access log has the request")

	// An unavailable store is 503 with 500300, again without internals.
	fs.failWith(&chat.Error{Code: chat.CodeUnavailable, Message: "dial tcp 10.1.2.3:5432: connection refused"})
	_, err = e.c.CreateChannel(ctx(t), client.CreateChannelRequest{ChannelID: "ch", Type: "standard"})
	ce = requireCode(t, err, chat.CodeUnavailable)
	require.NotContains(t, ce.Message, "10.1.2.3")

	// Reads still work, and the store recovers.
	_, err = e.c.QueryRoles(ctx(t), "")
	require.NoError(t, err)
	fs.fail.Store(false)
	_, err = e.c.CreateChannel(ctx(t), client.CreateChannelRequest{ChannelID: "ch", Type: "standard"})
	require.NoError(t, err)
	// A cancelled context in the store is reported as unavailable too.
	fs.failWith(context.DeadlineExceeded)
	fs.fail.Store(true)
	_, err = e.c.CreateChannel(ctx(t), client.CreateChannelRequest{ChannelID: "ch2", Type: "standard"})
	requireCode(t, err, chat.CodeUnavailable)
}

// TestPrivateWebhooks: Config.AllowPrivateWebhooks lets local receivers
// register.
func TestPrivateWebhooks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memoryStore, func(c *httpapi.Config, _ *chat.Config) { c.AllowPrivateWebhooks = true })
	w, err := e.c.CreateWebhook(ctx(t), "http://127.0.0.1:9/hook", nil)
	require.NoError(t, err)
	require.NotEmpty(t, w.Secret)
	require.Equal(t, []string{}, w.Events)
}

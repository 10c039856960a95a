package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
)

// TestImageGate checks the mechanism: with the budget held, the next
// acquire waits; it times out with CodeUnavailable, or proceeds when the
// budget is released; a caller that goes away stops waiting with its own
// error; a weight above the budget is taken as the whole budget.
func TestImageGate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// Held: the next one times out, as 503/500300.
	g := newImageGate(100, time.Millisecond)
	hold, err := g.acquire(ctx, 100)
	require.NoError(t, err)
	_, err = g.acquire(ctx, 1)
	require.Equal(t, chat.CodeUnavailable, chat.ErrorCode(err), "%v", err)
	require.Equal(t, int64(0), g.waiting.Load())
	require.Equal(t, 1, g.retryAfter())
	hold()

	// Held: the next one waits, then proceeds once the budget frees.
	g = newImageGate(100, time.Hour)
	hold, err = g.acquire(ctx, 60)
	require.NoError(t, err)
	second, err := g.acquire(ctx, 40) // fits beside it
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		rel, err := g.acquire(ctx, 50)
		if err == nil {
			rel()
		}
		done <- err
	}()
	require.Eventually(t, func() bool { return g.waiting.Load() == 1 }, time.Minute, time.Millisecond)
	second() // 40 free: not enough for 50
	select {
	case err := <-done:
		t.Fatalf("acquired with 40 of 100 free for 50: %v", err)
	default:
	}
	require.Equal(t, int64(1), g.waiting.Load())
	hold()
	require.NoError(t, <-done)
	require.Equal(t, int64(0), g.waiting.Load())

	// A caller that goes away gets its own error, not a 503.
	hold, err = g.acquire(ctx, 100)
	require.NoError(t, err)
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		for g.waiting.Load() != 1 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err = g.acquire(cctx, 1)
	require.ErrorIs(t, err, context.Canceled)
	hold()

	// More than the budget runs alone.
	all, err := g.acquire(ctx, 1000)
	require.NoError(t, err)
	require.False(t, g.sem.TryAcquire(1), "the whole budget is taken")
	all()
	require.True(t, g.sem.TryAcquire(100))
	g.sem.Release(100)
}

// gateEnv is a handler over a memory store with an admin token and a
// channel "ch".
type gateEnv struct {
	h     *handler
	srv   *httptest.Server
	token string
}

func newGateEnv(t *testing.T, cfg Config) *gateEnv {
	t.Helper()
	ctx := context.Background()
	st := memory.New()
	t.Cleanup(func() { _ = st.Close() })
	svc, err := chat.New(ctx, st, chat.Config{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	_, token, err := svc.CreateAdmin(ctx, "", "root", "admin")
	require.NoError(t, err)
	cfg.Logger = slog.New(slog.DiscardHandler)
	h := newHandler(svc, cfg)
	srv := httptest.NewServer(h.mux)
	t.Cleanup(srv.Close)
	e := &gateEnv{h: h, srv: srv, token: token}
	res := e.send(t, http.MethodPost, "/channel", "application/json", strings.NewReader(`{"channelId":"ch","type":"standard"}`))
	require.Equal(t, http.StatusOK, res.StatusCode)
	return e
}

func (e *gateEnv) send(t *testing.T, method, path, contentType string, body io.Reader) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, body)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := e.srv.Client().Do(req)
	require.NoError(t, err)
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(b))
	return res
}

// upload posts a small PNG as an image message.
func (e *gateEnv) upload(t *testing.T) *http.Response {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 64, 48))
	for i := range img.Pix {
		img.Pix[i] = byte(i)
	}
	img.Set(0, 0, color.NRGBA{A: 255})
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	require.NoError(t, mw.WriteField("channelId", "ch"))
	fw, err := mw.CreateFormFile("file", "a.png")
	require.NoError(t, err)
	require.NoError(t, png.Encode(fw, img))
	require.NoError(t, mw.Close())
	return e.send(t, http.MethodPost, "/messages/images", mw.FormDataContentType(), &body)
}

// TestImageUploadQueue holds the whole decode budget and checks what
// uploads and other requests see: an upload waits and is answered with
// 503, code 500300 and Retry-After after its queue timeout, or proceeds
// once the budget frees; a request that decodes nothing is served
// meanwhile.
func TestImageUploadQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	code := func(res *http.Response) float64 {
		var b map[string]any
		require.NoError(t, json.NewDecoder(res.Body).Decode(&b))
		c, _ := b["code"].(float64)
		return c
	}

	// A short queue timeout: 503 with Retry-After.
	e := newGateEnv(t, Config{ImageMemoryBudget: 64 << 20, ImageQueueTimeout: 10 * time.Millisecond})
	hold, err := e.h.images.acquire(ctx, 64<<20)
	require.NoError(t, err)
	res := e.upload(t)
	b, _ := io.ReadAll(res.Body)
	res.Body = io.NopCloser(bytes.NewReader(b))
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode, "%s", b)
	require.Equal(t, "1", res.Header.Get("Retry-After"))
	require.Equal(t, float64(chat.CodeUnavailable), code(res))
	// A message query is served meanwhile.
	res = e.send(t, http.MethodPost, "/messages", "application/json", strings.NewReader(`{"channelId":"ch"}`))
	require.Equal(t, http.StatusOK, res.StatusCode)
	hold()
	res = e.upload(t)
	require.Equal(t, http.StatusOK, res.StatusCode)

	// A long queue timeout: the upload waits, then proceeds.
	e = newGateEnv(t, Config{ImageMemoryBudget: 64 << 20, ImageQueueTimeout: time.Hour})
	hold, err = e.h.images.acquire(ctx, 64<<20)
	require.NoError(t, err)
	done := make(chan *http.Response, 1)
	go func() { done <- e.upload(t) }()
	require.Eventually(t, func() bool { return e.h.images.waiting.Load() == 1 }, time.Minute, time.Millisecond)
	res = e.send(t, http.MethodPost, "/messages", "application/json", strings.NewReader(`{"channelId":"ch"}`))
	require.Equal(t, http.StatusOK, res.StatusCode)
	select {
	case res := <-done:
		t.Fatalf("the upload was answered %d while the budget was held", res.StatusCode)
	default:
	}
	hold()
	res = <-done
	require.Equal(t, http.StatusOK, res.StatusCode)
	var out struct {
		Messages []struct {
			Type string `json:"type"`
		} `json:"messages"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
	require.Len(t, out.Messages, 1)
	require.Equal(t, "image", out.Messages[0].Type)
}

// TestImageMemoryLimit refuses an image by its decoded bytes: the same
// 16-bit RGBA PNG passes under a limit of 8 bytes a pixel and is refused
// with 413/400413 under 4, decided from the header.
func TestImageMemoryLimit(t *testing.T) {
	t.Parallel()
	deep := image.NewNRGBA64(image.Rect(0, 0, 100, 80))
	for i := range deep.Pix {
		deep.Pix[i] = byte(i * 7)
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, deep))
	post := func(e *gateEnv) *http.Response {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		require.NoError(t, mw.WriteField("channelId", "ch"))
		fw, err := mw.CreateFormFile("file", "deep.png")
		require.NoError(t, err)
		_, err = fw.Write(b.Bytes())
		require.NoError(t, err)
		require.NoError(t, mw.Close())
		return e.send(t, http.MethodPost, "/messages/images", mw.FormDataContentType(), &body)
	}
	res := post(newGateEnv(t, Config{MaxImageMemory: 100 * 80 * 4}))
	require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode)
	var body map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
	require.Equal(t, float64(chat.CodeTooLarge), body["code"])
	require.Contains(t, body["message"], "bytes decoded")
	res = post(newGateEnv(t, Config{MaxImageMemory: 100 * 80 * 8}))
	require.Equal(t, http.StatusOK, res.StatusCode)
}

// TestInlineOnlyRaster stores an image message whose rendition claims an
// active type (a host's own processing could store one): /images serves
// it as an attachment, never inline, under the restrictive policy.
func TestInlineOnlyRaster(t *testing.T) {
	t.Parallel()
	e := newGateEnv(t, Config{})
	const svg = `<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`
	out, err := e.h.svc.CreateImageMessage(context.Background(), "admin", chat.CreateImageMessageInput{
		ChannelID: "ch", FileName: "x.svg", MimeType: "image/svg+xml", Width: 10, Height: 10,
		Renditions: []chat.ImageRendition{
			{Name: "small", ContentType: "image/svg+xml", Width: 10, Height: 10, Data: []byte(svg)},
			{Name: "medium", ContentType: "image/png", Width: 10, Height: 10, Data: []byte("\x89PNG")},
		},
	})
	require.NoError(t, err)
	id := out.Messages[0].MessageID
	res := e.send(t, http.MethodGet, "/messages/"+id+"/images?size=small", "", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "image/svg+xml", res.Header.Get("Content-Type"))
	require.True(t, strings.HasPrefix(res.Header.Get("Content-Disposition"), "attachment; "), res.Header.Get("Content-Disposition"))
	require.Equal(t, "default-src 'none'; sandbox", res.Header.Get("Content-Security-Policy"))
	require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
	res = e.send(t, http.MethodGet, "/messages/"+id+"/images?size=medium", "", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.True(t, strings.HasPrefix(res.Header.Get("Content-Disposition"), "inline; "))
}

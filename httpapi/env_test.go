package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/client"
	"github.com/chatengine/chat/httpapi"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/stream"
)

// storeFactory makes a fresh, empty store and registers its cleanup.
type storeFactory func(t *testing.T) chat.Store

func memoryStore(t *testing.T) chat.Store {
	s := memory.New()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// wantStatus is docs/api.md section 1 (Errors), written out independently of the
// implementation's table.
var wantStatus = map[chat.Code]int{
	400000: 400, 400001: 400, 400100: 401, 400300: 403, 400301: 403, 400302: 403,
	400303: 403, 400304: 403, 400308: 403, 400309: 403, 400311: 429, 400312: 403,
	400400: 404, 400900: 409, 400413: 413, 400415: 415, 500000: 500, 500300: 503,
}

// env is one API server over one store with one admin.
type env struct {
	t     *testing.T
	store chat.Store
	svc   *chat.Service
	srv   *httptest.Server
	base  string // the API's base URL (with /api/v2)
	token string
	admin string // the admin's user id
	c     *client.Client
}

// newEnv serves the API at /api/v2 of a test server over a fresh store
// made by newStore. cfg may be modified by the caller's options.
func newEnv(t *testing.T, newStore storeFactory, opts ...func(*httpapi.Config, *chat.Config)) *env {
	t.Helper()
	st := newStore(t)
	return newEnvOn(t, st, opts...)
}

func newEnvOn(t *testing.T, st chat.Store, opts ...func(*httpapi.Config, *chat.Config)) *env {
	t.Helper()
	cfg := httpapi.Config{Logger: slog.New(slog.DiscardHandler)}
	scfg := chat.Config{Logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(&cfg, &scfg)
	}
	ctx := context.Background()
	svc, err := chat.New(ctx, st, scfg)
	require.NoError(t, err)
	_, token, err := svc.CreateAdmin(ctx, "", "root", "admin")
	require.NoError(t, err)
	if cfg.Events == nil {
		cfg.Events = startHub(t, svc)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/v2/", http.StripPrefix("/api/v2", httpapi.New(svc, cfg)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	base := srv.URL + "/api/v2"
	return &env{t: t, store: st, svc: svc, srv: srv, base: base, token: token, admin: "admin",
		c: client.New(base, token, client.WithHTTPClient(srv.Client()))}
}

// startHub starts an event stream hub over svc, stopped when the test
// ends.
func startHub(t *testing.T, svc *chat.Service) *stream.Hub {
	t.Helper()
	hub := stream.New(svc, stream.Config{})
	require.NoError(t, hub.Start(context.Background()))
	t.Cleanup(func() { _ = hub.Stop(context.Background()) })
	return hub
}

// requireCode asserts that err is a *client.Error with code, the status
// of the contract's table and a request id.
func requireCode(t *testing.T, err error, code chat.Code) *client.Error {
	t.Helper()
	require.Error(t, err)
	var ce *client.Error
	require.ErrorAs(t, err, &ce, "error %v", err)
	require.Equal(t, code, ce.Code, "message: %s", ce.Message)
	require.Equal(t, wantStatus[code], ce.Status)
	require.NotEmpty(t, ce.RequestID)
	require.NotNil(t, ce.Detail, "data.detail must be an array")
	require.True(t, errors.Is(err, &chat.Error{Code: code}))
	return ce
}

// rawResponse is a decoded raw HTTP response.
type rawResponse struct {
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

// do sends a raw request to the API (path relative to /api/v2) with the
// admin's token unless the header sets Authorization.
func (e *env) do(method, path, contentType, body string, hdr ...string) *rawResponse {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.base+path, rd)
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+e.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := e.srv.Client().Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	var b []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// An event stream does not end: read its first frame.
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadBytes('\n')
			require.NoError(e.t, err)
			b = append(b, line...)
			if len(line) == 1 {
				break
			}
		}
	} else {
		b, err = io.ReadAll(resp.Body)
		require.NoError(e.t, err)
	}
	out := &rawResponse{status: resp.StatusCode, header: resp.Header, body: b}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		require.NoError(e.t, json.Unmarshal(b, &out.json), "body %s", b)
	}
	return out
}

// form sends a form body.
func (e *env) form(method, path string, v url.Values) *rawResponse {
	e.t.Helper()
	return e.do(method, path, "application/x-www-form-urlencoded", v.Encode())
}

// requireError asserts a raw error response: status, code and a message
// containing want.
func requireError(t *testing.T, r *rawResponse, code chat.Code, want string) {
	t.Helper()
	require.Equal(t, wantStatus[code], r.status, "body %s", r.body)
	require.Equal(t, "application/json; charset=utf-8", r.header.Get("Content-Type"))
	require.Equal(t, "error", r.json["status"])
	require.EqualValues(t, code, r.json["code"], "body %s", r.body)
	require.Contains(t, r.json["message"], want)
	data, ok := r.json["data"].(map[string]any)
	require.True(t, ok, "data must be an object: %s", r.body)
	_, ok = data["detail"].([]any)
	require.True(t, ok, "data.detail must be an array: %s", r.body)
	require.NotEmpty(t, r.header.Get("X-Request-Id"))
}

// wireDetail returns data.detail of a raw error response.
func wireDetail(t *testing.T, r *rawResponse) any {
	t.Helper()
	data, ok := r.json["data"].(map[string]any)
	require.True(t, ok, "data must be an object: %s", r.body)
	return data["detail"]
}

// pngImage returns a w×h PNG; transparent makes it have an alpha channel.
func pngImage(t *testing.T, w, h int, transparent bool) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			a := uint8(255)
			if transparent && x < w/2 {
				a = 0
			}
			img.SetNRGBA(x, y, color.NRGBA{R: uint8(x), G: uint8(y), B: 100, A: a})
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

// failingStore wraps a store; while fail is set, Update returns the error
// last given to failWith (read and written by the test and the server's
// background work at once, so both are atomic).
type failingStore struct {
	chat.Store
	fail atomic.Bool
	err  atomic.Pointer[error]
}

func (f *failingStore) failWith(err error) { f.err.Store(&err) }

func (f *failingStore) Update(ctx context.Context, fn func(tx chat.Tx) error) error {
	if f.fail.Load() {
		return *f.err.Load()
	}
	return f.Store.Update(ctx, fn)
}

func ctx(t *testing.T) context.Context { return t.Context() }

// readAll reads a download to its end and closes it.
func readAll(t *testing.T, d *client.Download) []byte {
	t.Helper()
	defer d.Close()
	b, err := io.ReadAll(d)
	require.NoError(t, err)
	return b
}

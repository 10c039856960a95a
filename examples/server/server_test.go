package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/store/sqlite"
	"github.com/chatengine/chat/webhook"
)

// syncBuffer is a bytes.Buffer safe for the server's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// parseConfig runs the command line parsing of run without running
// anything.
func parseConfig(t *testing.T, args []string, env map[string]string) (config, error) {
	t.Helper()
	c := &cli{env: envOf(env), stdout: io.Discard, stderr: io.Discard}
	cfg := defaults
	set := map[string]bool{}
	if _, err := c.parse("test", &cfg, set, args, nil); err != nil {
		return cfg, err
	}
	if err := c.applyEnv(&cfg, set); err != nil {
		return cfg, err
	}
	return cfg, cfg.validate()
}

func TestFlagsAndEnvironment(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(t *testing.T, c config)
		err   string
	}{
		{name: "defaults", check: func(t *testing.T, c config) {
			require.Equal(t, "127.0.0.1:8080", c.addr)
			require.Equal(t, "sqlite:chat.db", c.store)
			require.EqualValues(t, 1<<20, c.maxBodyBytes)
			require.EqualValues(t, 50<<20, c.maxUploadBytes)
			require.EqualValues(t, 50_000_000, c.maxImagePixels)
			require.False(t, c.allowPrivate)
			require.Equal(t, 30*time.Second, c.shutdownTimeout)
			require.Equal(t, 5*time.Minute, c.readTimeout)
			require.Equal(t, 10*time.Minute, c.writeTimeout)
			require.Equal(t, 100.0, c.adminRate)
			require.Equal(t, 200, c.adminBurst)
			require.Equal(t, 20.0, c.userRate)
			require.Equal(t, 40, c.userBurst)
			require.Equal(t, 30*time.Second, c.presenceGrace)
			require.Equal(t, 100, c.presenceMax)
		}},
		{name: "presence max members", env: map[string]string{"CHAT_PRESENCE_MAX_MEMBERS": "0"},
			check: func(t *testing.T, c config) { require.Equal(t, 0, c.presenceMax) }},
		{name: "presence grace", env: map[string]string{"CHAT_PRESENCE_GRACE": "2m"},
			check: func(t *testing.T, c config) { require.Equal(t, 2*time.Minute, c.presenceGrace) }},
		{name: "presence grace flag beats env", args: []string{"-presence-grace", "5s"}, env: map[string]string{"CHAT_PRESENCE_GRACE": "2m"},
			check: func(t *testing.T, c config) { require.Equal(t, 5*time.Second, c.presenceGrace) }},
		{name: "rate limits", args: []string{"-admin-rate", "0", "-user-burst", "0"},
			env: map[string]string{"CHAT_USER_RATE": "2.5", "CHAT_ADMIN_BURST": "9"},
			check: func(t *testing.T, c config) {
				require.Zero(t, c.adminRate)
				require.Equal(t, 9, c.adminBurst)
				require.Equal(t, 2.5, c.userRate)
				require.Zero(t, c.userBurst)
			}},
		{name: "negative admin rate", args: []string{"-admin-rate", "-1"}, err: "-admin-rate"},
		{name: "NaN user rate", env: map[string]string{"CHAT_USER_RATE": "NaN"}, err: "-user-rate"},
		{name: "negative user burst", args: []string{"-user-burst", "-5"}, err: "-user-burst"},
		{name: "env only", env: map[string]string{
			"CHAT_STORE": "memory", "CHAT_ADDR": "127.0.0.1:9999", "CHAT_ALLOW_PRIVATE_WEBHOOKS": "true",
			"CHAT_WEBHOOK_URL": "http://127.0.0.1:1/hook", "CHAT_WEBHOOK_SECRET": "s3cret",
			"CHAT_MAX_UPLOAD_BYTES": "1024", "CHAT_MAX_BODY_BYTES": "2048", "CHAT_MAX_IMAGE_PIXELS": "100",
			"CHAT_LOG_LEVEL": "debug", "CHAT_SHUTDOWN_TIMEOUT": "5s",
			"CHAT_READ_TIMEOUT": "45s", "CHAT_WRITE_TIMEOUT": "90s", "CHAT_GC_PERCENT": "200",
		}, check: func(t *testing.T, c config) {
			require.Equal(t, 200, c.gcPercent)
			require.Equal(t, 45*time.Second, c.readTimeout)
			require.Equal(t, 90*time.Second, c.writeTimeout)
			require.Equal(t, "memory", c.store)
			require.Equal(t, "127.0.0.1:9999", c.addr)
			require.True(t, c.allowPrivate)
			require.Equal(t, "http://127.0.0.1:1/hook", c.webhookURL)
			require.Equal(t, "s3cret", c.webhookSecret)
			require.EqualValues(t, 1024, c.maxUploadBytes)
			require.EqualValues(t, 2048, c.maxBodyBytes)
			require.EqualValues(t, 100, c.maxImagePixels)
			require.Equal(t, "debug", c.logLevel)
			require.Equal(t, 5*time.Second, c.shutdownTimeout)
		}},
		{name: "flag beats env", args: []string{"-addr", "127.0.0.1:7000", "-store", "sqlite:x.db", "-allow-private-webhooks=false"},
			env: map[string]string{"CHAT_ADDR": "127.0.0.1:9999", "CHAT_STORE": "memory", "CHAT_ALLOW_PRIVATE_WEBHOOKS": "1"},
			check: func(t *testing.T, c config) {
				require.Equal(t, "127.0.0.1:7000", c.addr)
				require.Equal(t, "sqlite:x.db", c.store)
				require.False(t, c.allowPrivate)
			}},
		{name: "flags after positional args", args: []string{"-store", "memory", "extra", "-addr", "127.0.0.1:1"},
			check: func(t *testing.T, c config) {
				require.Equal(t, "memory", c.store)
				require.Equal(t, "127.0.0.1:1", c.addr)
			}},
		{name: "bad env value", env: map[string]string{"CHAT_MAX_BODY_BYTES": "lots"}, err: "CHAT_MAX_BODY_BYTES"},
		{name: "bad flag value", args: []string{"-shutdown-timeout", "soon"}, err: "shutdown-timeout"},
		{name: "unknown flag", args: []string{"-nope"}, err: "nope"},
		{name: "webhook url without secret", env: map[string]string{"CHAT_WEBHOOK_URL": "https://example.com/h"}, err: "-webhook-secret"},
		{name: "bad log level", args: []string{"-log-level", "loud"}, err: "log-level"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := parseConfig(t, tc.args, tc.env)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			tc.check(t, c)
		})
	}
	require.Equal(t, "CHAT_ALLOW_PRIVATE_WEBHOOKS", envName("allow-private-webhooks"))
	require.Equal(t, "CHAT_STORE", envName("store"))
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, args := range [][]string{{"frobnicate"}, {"admin"}, {"admin", "create"}, {"admin", "nope"}, {"version", "x"}, {"-store", "mysql://x", "migrate"}, {"-read-timeout", "0s"}, {"-write-timeout", "-1s"}, {"-gc-percent", "10"}, {"-presence-grace", "0s"}, {"-presence-max-members", "-1"}} {
		var stderr syncBuffer
		err := run(ctx, args, envOf(nil), io.Discard, &stderr)
		require.Error(t, err, "%v", args)
		var u usageError
		require.ErrorAs(t, err, &u, "%v", args)
	}
	var stdout bytes.Buffer
	require.NoError(t, run(ctx, []string{"version"}, envOf(nil), &stdout, io.Discard))
	require.Contains(t, stdout.String(), "chat server ")
	require.NoError(t, run(ctx, []string{"-h"}, envOf(nil), io.Discard, io.Discard))
}

// requireSQLite skips t, saying why, when the test binary was built without
// cgo: the SQLite store cannot open there (TestSQLiteNeedsCgo checks the
// server's error). With cgo, as in CI, it does nothing.
func requireSQLite(t *testing.T) {
	t.Helper()
	if !cgoEnabled {
		t.Skip(sqlite.ErrNeedsCgo.Error())
	}
}

var tokenRE = regexp.MustCompile(`chat_[A-Za-z0-9_-]{40,}`)

func TestAdminCommands(t *testing.T) {
	t.Parallel()
	requireSQLite(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "chat.db")
	env := envOf(map[string]string{"CHAT_STORE": "sqlite:" + path})
	cmd := func(args ...string) (string, string, error) {
		var stdout, stderr bytes.Buffer
		err := run(ctx, args, env, &stdout, &stderr)
		return stdout.String(), stderr.String(), err
	}

	out, errOut, err := cmd("migrate")
	require.NoError(t, err)
	require.Empty(t, out)
	require.Contains(t, errOut, "up to date")

	out, errOut, err = cmd("admin", "list")
	require.NoError(t, err)
	require.NotContains(t, out, "alice")
	require.Contains(t, errOut, "No admin accounts")

	// The token alone on stdout, so that TOKEN=$(server admin create NAME) works.
	out, errOut, err = cmd("admin", "create", "alice", "-user-id", "u-alice")
	require.NoError(t, err)
	token := strings.TrimSuffix(out, "\n")
	require.Regexp(t, `^chat_[A-Za-z0-9_-]{40,}$`, token)
	require.NotContains(t, errOut, token)
	require.Contains(t, errOut, "u-alice")

	// A flag before the command works as well as after it.
	out2, _, err := run2(ctx, []string{"-store", "sqlite:" + path, "admin", "create", "bob"})
	require.NoError(t, err)
	require.Regexp(t, `^chat_`, out2)

	_, _, err = cmd("admin", "create", "alice")
	require.Error(t, err)
	require.Equal(t, chat.CodeConflict, chat.ErrorCode(err))

	out, _, err = cmd("admin", "list")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^alice\s+u-alice\s+\S+\s+active$`, out)
	require.Regexp(t, `(?m)^bob\s+bob\s+\S+\s+active$`, out)
	require.NotContains(t, out, "chat_")

	// The token authenticates until revoked.
	authenticate := func() error {
		st, err := sqlite.Open(ctx, path, nil)
		require.NoError(t, err)
		defer st.Close()
		svc, err := chat.New(ctx, st, chat.Config{})
		require.NoError(t, err)
		_, err = svc.Authenticate(ctx, token)
		return err
	}
	require.NoError(t, authenticate())

	_, errOut, err = cmd("admin", "revoke", "alice")
	require.NoError(t, err)
	require.Contains(t, errOut, "Revoked")
	require.Equal(t, chat.CodeUnauthorized, chat.ErrorCode(authenticate()))

	out, _, err = cmd("admin", "list")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^alice\s+u-alice\s+\S+\s+revoked \S+$`, out)

	_, _, err = cmd("admin", "revoke", "nobody")
	require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err))
}

func run2(ctx context.Context, args []string) (string, string, error) {
	var stdout, stderr bytes.Buffer
	err := run(ctx, args, envOf(nil), &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

// server is a running example server.
type server struct {
	base   string // http://127.0.0.1:port
	stderr *syncBuffer
	cancel context.CancelFunc
	done   chan error
}

// start runs the server with args (plus -addr 127.0.0.1:0) until the test
// ends or stop is called.
func start(t *testing.T, args ...string) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{stderr: &syncBuffer{}, cancel: cancel, done: make(chan error, 1)}
	ready := make(chan string, 1)
	c := &cli{env: envOf(nil), stdout: io.Discard, stderr: s.stderr, ready: func(addr string) { ready <- addr }}
	go func() {
		s.done <- c.run(ctx, append([]string{"-addr", "127.0.0.1:0", "-shutdown-timeout", "10s", "-drain-delay", "0s"}, args...))
	}()
	select {
	case addr := <-ready:
		s.base = "http://" + addr
	case err := <-s.done:
		cancel()
		t.Fatalf("server did not start: %v\n%s", err, s.stderr.String())
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatalf("server did not start in time\n%s", s.stderr.String())
	}
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop cancels the server's context and waits for run to return.
func (s *server) stop(t *testing.T) error {
	t.Helper()
	s.cancel()
	select {
	case err, ok := <-s.done:
		if ok {
			close(s.done)
		}
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("server did not stop in time")
	}
	return nil
}

func (s *server) token(t *testing.T) string {
	t.Helper()
	tok := tokenRE.FindString(s.stderr.String())
	require.NotEmpty(t, tok, "no token printed on first start:\n%s", s.stderr.String())
	return tok
}

func (s *server) call(t *testing.T, token, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &out), "%s %s: %s", method, path, raw)
	}
	return resp.StatusCode, out
}

func TestServeRoundTrip(t *testing.T) {
	t.Parallel()
	s := start(t, "-store", "memory")
	tok := s.token(t)
	require.Contains(t, s.stderr.String(), `admin "admin"`)

	code, body := s.call(t, "", "GET", "/livez", nil)
	require.Equal(t, 200, code)
	require.Equal(t, "ok", body["status"])
	code, body = s.call(t, "", "GET", "/readyz", nil)
	require.Equal(t, 200, code)
	require.Equal(t, "ok", body["status"])

	code, body = s.call(t, "", "POST", "/api/v2/channel", map[string]any{"channelId": "general", "type": "standard"})
	require.Equal(t, 401, code)
	require.EqualValues(t, 400100, body["code"])

	code, body = s.call(t, tok, "POST", "/api/v2/channel", map[string]any{
		"channelId": "general", "type": "standard", "userIds": []string{"alice", "bob"}})
	require.Equal(t, 200, code, "%v", body)
	chs := body["channels"].([]any)
	require.Len(t, chs, 1)
	require.Equal(t, "general", chs[0].(map[string]any)["channelId"])

	code, body = s.call(t, tok, "POST", "/api/v2/message", map[string]any{
		"channelId": "general", "type": "text", "data": map[string]any{"text": "hello, world"}})
	require.Equal(t, 200, code, "%v", body)
	msg := body["messages"].([]any)[0].(map[string]any)
	require.EqualValues(t, 1, msg["channelSegment"])
	require.Equal(t, "admin", msg["userId"])

	code, body = s.call(t, tok, "POST", "/api/v2/messages", map[string]any{"channelId": "general"})
	require.Equal(t, 200, code, "%v", body)
	ms := body["messages"].([]any)
	require.Len(t, ms, 1)
	require.Equal(t, "hello, world", ms[0].(map[string]any)["data"].(map[string]any)["text"])

	require.NoError(t, s.stop(t))
	_, err := http.Get(s.base + "/livez")
	require.Error(t, err, "the server still accepts connections after shutdown")
	require.Contains(t, s.stderr.String(), "shutdown complete")
}

func TestFirstStartTokenPrintedOnce(t *testing.T) {
	t.Parallel()
	requireSQLite(t)
	path := filepath.Join(t.TempDir(), "chat.db")
	s := start(t, "-store", "sqlite:"+path)
	tok := s.token(t)
	code, _ := s.call(t, tok, "GET", "/api/v2/users", nil)
	require.Equal(t, 200, code)
	require.NoError(t, s.stop(t))

	s2 := start(t, "-store", "sqlite:"+path)
	require.Empty(t, tokenRE.FindString(s2.stderr.String()), "a second token was printed")
	code, _ = s2.call(t, tok, "GET", "/api/v2/users", nil)
	require.Equal(t, 200, code, "the first token must survive a restart")
	require.NoError(t, s2.stop(t))

	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-store", "sqlite:" + path, "admin", "list"}, envOf(nil), &out, io.Discard))
	require.Regexp(t, `(?m)^admin\s+admin\s+\S+\s+active$`, out.String())
}

// TestGracefulShutdown cancels the server while a request body is still
// being sent: the request must complete, and only then may run return.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	requireSQLite(t)
	path := filepath.Join(t.TempDir(), "chat.db")
	s := start(t, "-store", "sqlite:"+path)
	tok := s.token(t)
	code, _ := s.call(t, tok, "POST", "/api/v2/channel", map[string]any{"channelId": "c", "type": "standard"})
	require.Equal(t, 200, code)

	pr, pw := io.Pipe()
	req, err := http.NewRequest("POST", s.base+"/api/v2/message", pr)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	type result struct {
		code int
		body string
		err  error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			res <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		res <- result{code: resp.StatusCode, body: string(b)}
	}()
	_, err = pw.Write([]byte(`{"channelId":"c","type":"text",`))
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond) // the server is now reading the body

	stopped := make(chan error, 1)
	go func() { stopped <- s.stop(t) }()
	time.Sleep(200 * time.Millisecond)
	select {
	case err := <-stopped:
		t.Fatalf("run returned (%v) while a request was in flight", err)
	default:
	}
	_, err = pw.Write([]byte(`"data":{"text":"last words"}}`))
	require.NoError(t, err)
	require.NoError(t, pw.Close())

	r := <-res
	require.NoError(t, r.err)
	require.Equal(t, 200, r.code, r.body)
	require.Contains(t, r.body, "last words")
	require.NoError(t, <-stopped)

	// The message was committed before the store closed.
	st, err := sqlite.Open(context.Background(), path, nil)
	require.NoError(t, err)
	defer st.Close()
	svc, err := chat.New(context.Background(), st, chat.Config{})
	require.NoError(t, err)
	ml, err := svc.QueryMessages(context.Background(), "admin", chat.MessageQuery{ChannelID: "c"})
	require.NoError(t, err)
	require.Len(t, ml.Messages, 1)
}

func TestStaticWebhook(t *testing.T) {
	t.Parallel()
	secret := "It's a Secret to Everybody"
	got := make(chan *webhook.Event, 16)
	recv := httptest.NewServer(webhook.NewReceiver([]byte(secret), func(_ context.Context, ev *webhook.Event) error {
		got <- ev
		return nil
	}))
	t.Cleanup(recv.Close)

	// A loopback receiver is refused unless private webhooks are allowed.
	err := run(context.Background(), []string{"-store", "memory", "-addr", "127.0.0.1:0",
		"-webhook-url", recv.URL + "/hook", "-webhook-secret", secret}, envOf(nil), io.Discard, io.Discard)
	require.ErrorContains(t, err, "webhook-url")

	s := start(t, "-store", "memory", "-webhook-url", recv.URL+"/hook", "-webhook-secret", secret, "-allow-private-webhooks")
	tok := s.token(t)
	code, body := s.call(t, tok, "POST", "/api/v2/channel", map[string]any{"channelId": "hooked", "type": "standard", "userIds": []string{"u1"}})
	require.Equal(t, 200, code, "%v", body)
	select {
	case ev := <-got:
		require.Equal(t, chat.EventChannelDidCreate, ev.Event)
		data, err := ev.Channel()
		require.NoError(t, err)
		require.Equal(t, "hooked", data.Channel.ChannelID)
		require.Equal(t, []string{"u1"}, data.UserIDs)
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook delivery within 10 s")
	}
	require.NoError(t, s.stop(t))
}

func TestReadyz(t *testing.T) {
	t.Parallel()
	st := memory.New()
	var draining atomic.Bool
	h := readyz(st, &draining, slog.New(slog.NewTextHandler(io.Discard, nil)))
	get := func() int {
		rec := httptest.NewRecorder()
		h(rec, httptest.NewRequest("GET", "/readyz", nil))
		return rec.Code
	}
	require.Equal(t, 200, get())
	draining.Store(true)
	require.Equal(t, 503, get(), "ready while shutting down")
	draining.Store(false)
	require.NoError(t, st.Close())
	require.Equal(t, 503, get(), "ready with the store closed")
}

// A client that stops sending in the middle of its body is cut off after
// -read-timeout, and its request changes nothing.
func TestReadTimeoutCutsSlowBody(t *testing.T) {
	t.Parallel()
	s := start(t, "-store", "memory", "-read-timeout", "300ms")
	tok := s.token(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	body := `{"channelId":"slow","type":"standard"}`
	_, err = fmt.Fprintf(conn, "POST /api/v2/channel HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", tok, len(body), body[:10])
	require.NoError(t, err)
	// The server answers (a 4xx) and closes, or just closes; either way
	// the read ends, well before this test's own deadline.
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	_, err = io.ReadAll(conn)
	require.NoError(t, err, "the connection was not closed by the server")
	code, _ := s.call(t, tok, "GET", "/api/v2/channel/slow", nil)
	require.Equal(t, 404, code)
	code, _ = s.call(t, tok, "GET", "/livez", nil)
	require.Equal(t, 200, code)
}

// -gc-percent: automatic by store, or as given; GOGC in the environment
// wins and leaves the runtime's setting alone. Not parallel: the setting
// belongs to the whole process.
func TestGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"memory", []string{"-store", "memory"}, 100},
		{"sqlite", []string{"-store", "sqlite:" + filepath.Join(t.TempDir(), "gc.db")}, 400},
		{"flag", []string{"-store", "memory", "-gc-percent", "250"}, 250},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "sqlite" {
				requireSQLite(t)
			}
			debug.SetGCPercent(100)
			s := start(t, tc.args...)
			require.Equal(t, tc.want, debug.SetGCPercent(100), "%v", tc.args)
			require.Contains(t, s.stderr.String(), fmt.Sprintf("gogc=%d ", tc.want))
			require.NoError(t, s.stop(t))
		})
	}
	debug.SetGCPercent(123)
	c := &cli{env: envOf(map[string]string{"GOGC": "150"})}
	require.Equal(t, "150 (environment)", c.setGC(&config{gcPercent: 300}, "sqlite"))
	require.Equal(t, 123, debug.SetGCPercent(100))
}

// -user-token-secret signs the end users' tokens: a token the host signs
// with it (chat.UserClaims, HS256, with a JWT library) authenticates, one
// signed with another secret does not.
func TestUserTokenSecretFlag(t *testing.T) {
	t.Parallel()
	secret := "the host application's user-token secret"
	s := start(t, "-store", "memory", "-user-token-secret", secret)
	hostToken := func(secret string) (string, error) {
		now := time.Now()
		c := chat.UserClaims{UserID: "alice", RegisteredClaims: jwt.RegisteredClaims{
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}}
		return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(secret))
	}
	good, err := hostToken(secret)
	require.NoError(t, err)
	code, body := s.call(t, good, "PUT", "/api/v2/users", map[string]any{"userId": "alice", "displayName": "Alice"})
	require.Equal(t, 200, code, "%v", body)
	code, body = s.call(t, good, "GET", "/api/v2/users/alice", nil)
	require.Equal(t, 200, code, "%v", body)
	bad, err := hostToken("another secret")
	require.NoError(t, err)
	code, body = s.call(t, bad, "GET", "/api/v2/users/alice", nil)
	require.Equal(t, 401, code)
	require.EqualValues(t, 400100, body["code"])
}

// Without the flag, the secret generated on first start is kept in the
// store: a user token minted by the API still works after a restart.
func TestUserTokenSecretKeptInStore(t *testing.T) {
	t.Parallel()
	requireSQLite(t)
	path := filepath.Join(t.TempDir(), "chat.db")
	s := start(t, "-store", "sqlite:"+path)
	tok := s.token(t)
	code, body := s.call(t, tok, "POST", "/api/v2/users/alice/token", map[string]any{"ttl": 3600})
	require.Equal(t, 200, code, "%v", body)
	userToken := body["token"].(string)
	code, _ = s.call(t, userToken, "GET", "/api/v2/users/alice", nil)
	require.Equal(t, 200, code)
	require.NoError(t, s.stop(t))

	s2 := start(t, "-store", "sqlite:"+path)
	code, body = s2.call(t, userToken, "GET", "/api/v2/users/alice", nil)
	require.Equal(t, 200, code, "%v", body)
	require.NoError(t, s2.stop(t))
}

// TestServeEventStream: the server serves the event stream at
// /api/v2/events, and shutting down ends an open stream instead of
// waiting for it.
func TestServeEventStream(t *testing.T) {
	t.Parallel()
	s := start(t, "-store", "memory", "-event-retention", "1h")
	tok := s.token(t)
	code, body := s.call(t, tok, "POST", "/api/v2/channel", map[string]any{"channelId": "general", "type": "standard"})
	require.Equal(t, 200, code, "%v", body)

	req, err := http.NewRequest("GET", s.base+"/api/v2/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	sc := bufio.NewScanner(resp.Body)
	readEvent := func() string {
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				return name
			}
		}
		return ""
	}
	require.Equal(t, "stream.didConnect", readEvent())
	code, body = s.call(t, tok, "POST", "/api/v2/message", map[string]any{
		"channelId": "general", "type": "text", "data": map[string]any{"text": "hello"}})
	require.Equal(t, 200, code, "%v", body)
	require.Equal(t, "message.didCreate", readEvent())

	require.NoError(t, s.stop(t))
	require.Equal(t, "", readEvent(), "the stream ends at shutdown")
	require.Contains(t, s.stderr.String(), "shutdown complete")
}

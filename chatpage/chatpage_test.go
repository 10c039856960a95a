package chatpage_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/chatpage"
	"github.com/chatengine/chat/store/memory"
)

type answer struct {
	status int
	header http.Header
	body   string
}

func serve(t *testing.T, h http.Handler, method, path, contentType, body string) answer {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	b, err := io.ReadAll(rec.Result().Body)
	require.NoError(t, err)
	return answer{status: rec.Code, header: rec.Result().Header, body: string(b)}
}

func requireSecured(t *testing.T, a answer) {
	t.Helper()
	require.Equal(t, chatpage.ContentSecurityPolicy, a.header.Get("Content-Security-Policy"))
	require.Contains(t, a.header.Get("Content-Security-Policy"), "script-src 'self'")
	require.NotContains(t, a.header.Get("Content-Security-Policy"), "unsafe-inline")
	require.Equal(t, "nosniff", a.header.Get("X-Content-Type-Options"))
	require.Equal(t, "DENY", a.header.Get("X-Frame-Options"))
}

func TestPageAndAssets(t *testing.T) {
	t.Parallel()
	h := chatpage.New(chatpage.Config{APIPrefix: `/api/"v2"/`})

	page := serve(t, h, "GET", "/", "", "")
	require.Equal(t, 200, page.status)
	requireSecured(t, page)
	require.Equal(t, "text/html; charset=utf-8", page.header.Get("Content-Type"))
	// The prefix is escaped into its attribute, its trailing slash gone.
	require.Contains(t, page.body, `data-api="/api/&#34;v2&#34;"`)
	require.Contains(t, page.body, `data-dev-sign-in="false"`)
	require.NotContains(t, page.body, "<script>", "no inline script")
	require.Contains(t, page.body, `<script src="app.js" defer></script>`)

	for path, ctype := range map[string]string{
		"/app.js":      "text/javascript",
		"/style.css":   "text/css",
		"/favicon.svg": "image/svg+xml",
	} {
		a := serve(t, h, "GET", path, "", "")
		require.Equal(t, 200, a.status, path)
		requireSecured(t, a)
		require.True(t, strings.HasPrefix(a.header.Get("Content-Type"), ctype), "%s: %s", path, a.header.Get("Content-Type"))
		require.NotEmpty(t, a.body)
	}

	// The template itself and unknown paths are not served.
	for _, path := range []string{"/index.html", "/static/app.js", "/nope"} {
		require.Equal(t, 404, serve(t, h, "GET", path, "", "").status, path)
	}
	// Without Config.DevSignIn there is no development sign-in.
	require.Equal(t, 404, serve(t, h, "POST", "/dev-token", "application/json", `{"userId":"alice"}`).status)
}

func TestScriptWritesNoMarkup(t *testing.T) {
	t.Parallel()
	// Every string reaches the DOM through textContent or attributes: the
	// script never assigns markup.
	a := serve(t, chatpage.New(chatpage.Config{}), "GET", "/app.js", "", "")
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
		require.NotContains(t, a.body, sink)
	}
}

func TestDevSignIn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, err := chat.New(ctx, memory.New(), chat.Config{})
	require.NoError(t, err)
	h := chatpage.New(chatpage.Config{DevSignIn: func(ctx context.Context, userID string) (*chat.UserToken, error) {
		return svc.IssueUserToken(ctx, "", userID, time.Hour)
	}})

	page := serve(t, h, "GET", "/", "", "")
	require.Contains(t, page.body, `data-dev-sign-in="true"`)

	ok := serve(t, h, "POST", "/dev-token", "application/json; charset=utf-8", `{"userId":"alice"}`)
	require.Equal(t, 200, ok.status, ok.body)
	requireSecured(t, ok)
	require.Equal(t, "no-store", ok.header.Get("Cache-Control"))
	var tok struct {
		Token     string  `json:"token"`
		UserID    string  `json:"userId"`
		ExpiresAt *string `json:"expiresAt"`
	}
	require.NoError(t, json.Unmarshal([]byte(ok.body), &tok))
	require.Equal(t, "alice", tok.UserID)
	require.NotNil(t, tok.ExpiresAt)
	u, err := svc.AuthenticateUser(ctx, tok.Token)
	require.NoError(t, err, "the token is a real user token")
	require.Equal(t, "alice", u.UserID)

	cases := []struct {
		name, ctype, body string
		status            int
		code              chat.Code
		field             string
	}{
		{"form body", "application/x-www-form-urlencoded", "userId=alice", 415, chat.CodeUnsupportedMedia, ""},
		{"no content type", "", `{"userId":"alice"}`, 415, chat.CodeUnsupportedMedia, ""},
		{"not JSON", "application/json", `userId=alice`, 400, chat.CodeBadRequest, "userId"},
		{"wrong type", "application/json", `{"userId":7}`, 400, chat.CodeBadRequest, "userId"},
		{"missing", "application/json", `{}`, 400, chat.CodeBadRequest, "userId"},
		{"control character", "application/json", `{"userId":"a\u0001b"}`, 400, chat.CodeBadRequest, "userId"},
		{"too long", "application/json", `{"userId":"` + strings.Repeat("x", 300) + `"}`, 400, chat.CodeBadRequest, "userId"},
		{"too large", "application/json", `{"userId":"` + strings.Repeat("x", 5000) + `"}`, 413, chat.CodeTooLarge, ""},
	}
	for _, c := range cases {
		a := serve(t, h, "POST", "/dev-token", c.ctype, c.body)
		require.Equal(t, c.status, a.status, "%s: %s", c.name, a.body)
		var e struct {
			Status  string    `json:"status"`
			Code    chat.Code `json:"code"`
			Message string    `json:"message"`
		}
		require.NoError(t, json.Unmarshal([]byte(a.body), &e), c.name)
		require.Equal(t, "error", e.Status, c.name)
		require.Equal(t, c.code, e.Code, c.name)
		if c.field != "" {
			require.Contains(t, e.Message, c.field, c.name)
		}
	}

	// A refused request made no user.
	list, err := svc.QueryUsers(ctx, "alice", chat.UserQuery{Limit: 100})
	require.NoError(t, err)
	var ids []string
	for _, u := range list.Users {
		ids = append(ids, u.UserID)
	}
	require.NotContains(t, ids, "a\x01b")
	require.Contains(t, ids, "alice")
}

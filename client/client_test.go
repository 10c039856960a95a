package client_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/client"
)

// The client is exercised end to end by the httpapi black-box suite; these
// tests cover what a real server does not produce.

func TestErrors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "rid-1")
		switch r.URL.Path {
		case "/api/v2/channel/missing":
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(404)
			_, _ = io.WriteString(w, `{"status":"error","code":400400,"message":"channel \"missing\" not found","data":{"detail":[{"field":"channelId"}]}}`)
		case "/api/v2/roles":
			w.WriteHeader(502)
			_, _ = io.WriteString(w, "<html>bad gateway</html>")
		case "/api/v2/message":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(429)
			_, _ = io.WriteString(w, `{"status":"error","code":400311,"message":"slow mode","data":{"detail":[{"retryAfter":7,"retryAfterMs":6500}]}}`)
		default:
			require.Equal(t, "Bearer tok", r.Header.Get("Authorization"))
			require.Equal(t, "application/json", r.Header.Get("Content-Type"))
			var in map[string]any
			require.NoError(t, json.NewDecoder(r.Body).Decode(&in))
			require.Equal(t, map[string]any{"channelId": "c", "type": "standard"}, in)
			_, _ = io.WriteString(w, `{"channels":[{"channelId":"c","createdAt":"2018-11-30T11:39:20.149Z"}],"channelUsers":[],"users":[]}`)
		}
	}))
	defer srv.Close()
	c := client.New(srv.URL+"/api/v2/", "tok", client.WithHTTPClient(srv.Client()), client.WithUserAgent("test"))

	out, err := c.CreateChannel(t.Context(), client.CreateChannelRequest{ChannelID: "c", Type: "standard"})
	require.NoError(t, err)
	require.Equal(t, "c", out.Channels[0].ChannelID)
	require.Equal(t, 149_000_000, out.Channels[0].CreatedAt.Nanosecond())

	_, err = c.GetChannel(t.Context(), "missing")
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, 404, ce.Status)
	require.Equal(t, chat.CodeNotFound, ce.Code)
	require.Equal(t, "rid-1", ce.RequestID)
	require.Equal(t, []any{map[string]any{"field": "channelId"}}, ce.Detail)
	require.ErrorIs(t, err, chat.ErrNotFound)
	require.NotErrorIs(t, err, chat.ErrConflict)
	require.ErrorIs(t, err, &client.Error{Code: chat.CodeNotFound})
	var chatErr *chat.Error
	require.ErrorAs(t, err, &chatErr)
	require.Equal(t, chat.CodeNotFound, chatErr.Code)
	require.Equal(t, `chat api: 404 400400: channel "missing" not found (request id rid-1)`, err.Error())

	// A response that is not an API error still becomes an *Error.
	_, err = c.QueryRoles(t.Context(), "")
	require.ErrorAs(t, err, &ce)
	require.Equal(t, 502, ce.Status)
	require.Equal(t, chat.CodeUnavailable, ce.Code)
	require.Contains(t, ce.Message, "bad gateway")
	require.True(t, errors.Is(err, chat.ErrUnavailable))
	require.Zero(t, ce.RetryAfter)

	// A rate-limited post carries the time to wait.
	_, err = c.SendText(t.Context(), "c", "too soon")
	require.ErrorAs(t, err, &ce)
	require.Equal(t, 429, ce.Status)
	require.Equal(t, chat.CodeRateLimited, ce.Code)
	require.Equal(t, 7*time.Second, ce.RetryAfter)
	require.ErrorIs(t, err, chat.ErrRateLimited)
}

package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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

	out, err := c.CreateChannel(t.Context(), client.CreateChannelRequest{ChannelID: "c", Type: chat.ChannelTypeStandard})
	require.NoError(t, err)
	require.Equal(t, "c", out.ChannelID)
	require.Equal(t, 149_000_000, out.CreatedAt.Nanosecond())
	require.Empty(t, out.ChannelUsers)

	_, err = c.GetChannel(t.Context(), "missing")
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, 404, ce.Status)
	require.Equal(t, chat.CodeNotFound, ce.Code)
	require.Equal(t, "rid-1", ce.RequestID)
	require.Equal(t, []chat.Detail{chat.FieldError{Field: "channelId"}}, ce.Detail)
	var fe chat.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "channelId", fe.Field)
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
	var ra chat.RetryAfter
	require.ErrorAs(t, err, &ra)
	require.Equal(t, 6500*time.Millisecond, ra.Wait)
	require.Equal(t, 7, ra.Seconds())
}

// TestTimeouts checks the call timeout: a JSON call and a download's
// headers are cut at the timeout, a download's body is not.
func TestTimeouts(t *testing.T) {
	t.Parallel()
	// short cuts the calls a server never answers; long leaves a loaded
	// machine ample time for the headers of the download that is read
	// past it.
	const short, long = 100 * time.Millisecond, time.Second
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v2/roles", "/api/v2/messages/slow/files":
			<-r.Context().Done() // never answers
		case "/api/v2/messages/m/files":
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Length", "10")
			w.Header().Set("ETag", `"e1"`)
			w.Header().Set("Content-Disposition", `attachment; filename="a.txt"`)
			_, _ = io.WriteString(w, "first")
			w.(http.Flusher).Flush()
			select {
			case <-release:
				_, _ = io.WriteString(w, "-last")
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()
	c := client.New(srv.URL+"/api/v2", "tok", client.WithTimeout(short))
	_, err := c.QueryRoles(t.Context(), "")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	_, err = c.GetFile(t.Context(), "slow", nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	c = client.New(srv.URL+"/api/v2", "tok", client.WithTimeout(long))
	d, err := c.GetFile(t.Context(), "m", nil)
	require.NoError(t, err)
	defer d.Close()
	require.Equal(t, 200, d.Status)
	require.Equal(t, "text/plain", d.ContentType)
	require.EqualValues(t, 10, d.ContentLength)
	require.Equal(t, `"e1"`, d.ETag)
	require.Equal(t, "a.txt", d.FileName)
	first := make([]byte, 5)
	_, err = io.ReadFull(d, first)
	require.NoError(t, err)
	require.Equal(t, "first", string(first))
	// The body is read well after the timeout has passed.
	time.Sleep(long + 200*time.Millisecond)
	close(release)
	rest, err := io.ReadAll(d)
	require.NoError(t, err)
	require.Equal(t, "-last", string(rest))
	require.NoError(t, d.Close())

	// Without a timeout, only the caller's context limits a call.
	c = client.New(srv.URL+"/api/v2", "tok", client.WithTimeout(0))
	ctx, cancel := context.WithTimeout(t.Context(), short)
	defer cancel()
	_, err = c.QueryRoles(ctx, "")
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestMuteWire checks that durations go on the wire as the API's
// milliseconds: -1 forever, 0 unmute, periods rounded up.
func TestMuteWire(t *testing.T) {
	t.Parallel()
	var (
		mu  sync.Mutex
		got []map[string]any
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in map[string]any
		require.NoError(t, json.NewDecoder(r.Body).Decode(&in))
		mu.Lock()
		got = append(got, in)
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/rateLimit") {
			_, _ = io.WriteString(w, `{"channels":[{"channelId":"c","isRateLimited":true,"rateLimitWindow":1500}],"channelUsers":[],"users":[]}`)
			return
		}
		_, _ = io.WriteString(w, `{"success":true}`)
	}))
	defer srv.Close()
	c := client.New(srv.URL, "tok")
	ctx := t.Context()
	require.NoError(t, c.MuteChannel(ctx, "c", chat.MuteForever))
	require.NoError(t, c.MuteChannel(ctx, "c", chat.Unmute))
	require.NoError(t, c.MuteChannel(ctx, "c", 90*time.Second))
	require.NoError(t, c.MuteChannel(ctx, "c", time.Microsecond))
	require.NoError(t, c.MuteChannel(ctx, "c", -time.Nanosecond))
	require.NoError(t, c.MuteUsers(ctx, "c", []string{"u"}, time.Minute))
	ch, err := c.SetChannelRateLimit(ctx, "c", 1500*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, 1500*time.Millisecond, ch.RateLimit())
	want := []map[string]any{
		{"mutePeriod": float64(-1)}, {"mutePeriod": float64(0)}, {"mutePeriod": float64(90_000)},
		{"mutePeriod": float64(1)}, {"mutePeriod": float64(-2)},
		{"mutePeriod": float64(60_000), "userIds": []any{"u"}}, {"rateLimitWindow": float64(1500)},
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, want, got)
}

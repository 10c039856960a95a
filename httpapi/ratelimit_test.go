package httpapi_test

import (
	"bufio"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/httpapi"
)

// fakeClock is a settable clock for chat.Config.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// limitedEnv is an API over the memory store whose clock only moves when
// the test moves it, with the given limits.
func limitedEnv(t *testing.T, admin, user httpapi.RateLimit) (*env, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	e := newEnv(t, memoryStore, func(c *httpapi.Config, sc *chat.Config) {
		c.AdminRateLimit, c.UserRateLimit = admin, user
		sc.Now = clk.Now
	})
	return e, clk
}

// requireLimitHeaders asserts the three rate limit headers of a response.
func requireLimitHeaders(t *testing.T, r *rawResponse, limit, remaining, reset string) {
	t.Helper()
	require.Equal(t, limit, r.header.Get("X-RateLimit-Limit"), "X-RateLimit-Limit")
	require.Equal(t, remaining, r.header.Get("X-RateLimit-Remaining"), "X-RateLimit-Remaining")
	require.Equal(t, reset, r.header.Get("X-RateLimit-Reset"), "X-RateLimit-Reset")
}

func userToken(t *testing.T, e *env, userID string) string {
	t.Helper()
	tok, err := e.svc.IssueUserToken(ctx(t), "", userID, -1)
	require.NoError(t, err)
	return tok.Token
}

func TestRateLimitHeaders(t *testing.T) {
	t.Parallel()
	e, clk := limitedEnv(t, httpapi.RateLimit{Rate: 2, Burst: 4}, httpapi.RateLimit{})

	r := e.do("GET", "/users", "", "")
	require.Equal(t, http.StatusOK, r.status)
	// One of four spent; at 2 per second it is back in 0.5 s, shown as 1.
	requireLimitHeaders(t, r, "4", "3", "1")

	r = e.do("GET", "/channel/nowhere", "", "")
	requireError(t, r, chat.CodeNotFound, "nowhere")
	requireLimitHeaders(t, r, "4", "2", "1")

	r = e.do("POST", "/nothing-here", "", "")
	requireError(t, r, chat.CodeNotFound, "no such endpoint")
	requireLimitHeaders(t, r, "4", "1", "2")

	// A bad request is counted too.
	r = e.form("POST", "/channel", url.Values{"channelId": {"c"}, "type": {"odd"}})
	requireError(t, r, chat.CodeBadRequest, "type")
	requireLimitHeaders(t, r, "4", "0", "2")

	// Half a second gives one request back.
	clk.Add(500 * time.Millisecond)
	r = e.do("GET", "/users", "", "")
	require.Equal(t, http.StatusOK, r.status)
	requireLimitHeaders(t, r, "4", "0", "2")

	// After two seconds of rest the bucket is full again: the request
	// spends one of four.
	clk.Add(2 * time.Second)
	r = e.do("GET", "/users", "", "")
	requireLimitHeaders(t, r, "4", "3", "1")

	// No caller, no bucket: a 401 carries no limit headers.
	r = e.do("GET", "/users", "", "", "Authorization", "Bearer chat_nope")
	requireError(t, r, chat.CodeUnauthorized, "")
	require.Empty(t, r.header.Get("X-RateLimit-Limit"))
}

func TestRateLimitExhaustedChangesNothing(t *testing.T) {
	t.Parallel()
	e, clk := limitedEnv(t, httpapi.RateLimit{Rate: 0.5, Burst: 2}, httpapi.RateLimit{})

	for i := range 2 {
		r := e.form("POST", "/channel", url.Values{"channelId": {"c" + string(rune('0'+i))}, "type": {"standard"}})
		require.Equal(t, http.StatusOK, r.status, "body %s", r.body)
	}
	r := e.form("POST", "/channel", url.Values{"channelId": {"late"}, "type": {"standard"}})
	requireError(t, r, chat.CodeRateLimited, "too many requests")
	require.Equal(t, http.StatusTooManyRequests, r.status)
	// One request comes back in 2 s; the bucket is full in 4 s.
	require.Equal(t, "2", r.header.Get("Retry-After"))
	requireLimitHeaders(t, r, "2", "0", "4")
	require.Equal(t, []any{map[string]any{"retryAfter": 2.0, "retryAfterMs": 2000.0}}, wireDetail(t, r))
	_, err := e.svc.GetChannel(ctx(t), e.admin, "late")
	require.ErrorIs(t, err, chat.ErrNotFound, "a refused create creates nothing")

	// A refused request spends nothing: 1.5 s later one request is not
	// yet back (0.75 of one), and the wait shrinks.
	clk.Add(1500 * time.Millisecond)
	r = e.form("POST", "/channel", url.Values{"channelId": {"late"}, "type": {"standard"}})
	requireError(t, r, chat.CodeRateLimited, "")
	require.Equal(t, "1", r.header.Get("Retry-After"))
	require.Equal(t, []any{map[string]any{"retryAfter": 1.0, "retryAfterMs": 500.0}}, wireDetail(t, r))

	clk.Add(500 * time.Millisecond)
	r = e.form("POST", "/channel", url.Values{"channelId": {"late"}, "type": {"standard"}})
	require.Equal(t, http.StatusOK, r.status, "body %s", r.body)
	requireLimitHeaders(t, r, "2", "0", "4")
	_, err = e.svc.GetChannel(ctx(t), e.admin, "late")
	require.NoError(t, err)
}

func TestRateLimitSeparateBuckets(t *testing.T) {
	t.Parallel()
	e, _ := limitedEnv(t, httpapi.RateLimit{Rate: 1, Burst: 3}, httpapi.RateLimit{Rate: 1, Burst: 2})
	alice, bob := userToken(t, e, "alice"), userToken(t, e, "bob")
	as := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }

	for _, want := range []string{"1", "0"} {
		r := e.do("GET", "/users", "", "", as(alice)...)
		require.Equal(t, http.StatusOK, r.status, "body %s", r.body)
		requireLimitHeaders(t, r, "2", want, map[string]string{"1": "1", "0": "2"}[want])
	}
	r := e.do("GET", "/users", "", "", as(alice)...)
	requireError(t, r, chat.CodeRateLimited, "")
	require.Equal(t, "1", r.header.Get("Retry-After"))

	// Bob has his own bucket, and the admin the admin limit.
	r = e.do("GET", "/users", "", "", as(bob)...)
	require.Equal(t, http.StatusOK, r.status)
	requireLimitHeaders(t, r, "2", "1", "1")
	r = e.do("GET", "/users", "", "")
	require.Equal(t, http.StatusOK, r.status)
	requireLimitHeaders(t, r, "3", "2", "1")

	// A user's new token draws from the same bucket: it is the user's.
	r = e.do("GET", "/users", "", "", as(userToken(t, e, "alice"))...)
	requireError(t, r, chat.CodeRateLimited, "")

	// The admin's bucket is the account's, not the token's: a rotated
	// token keeps it.
	for range 2 {
		require.Equal(t, http.StatusOK, e.do("GET", "/users", "", "").status)
	}
	requireError(t, e.do("GET", "/users", "", ""), chat.CodeRateLimited, "")
	tok, err := e.svc.RotateAdmin(ctx(t), "", "root")
	require.NoError(t, err)
	r = e.do("GET", "/users", "", "", "Authorization", "Bearer "+tok)
	requireError(t, r, chat.CodeRateLimited, "")

	// A second admin account has a bucket of its own.
	_, tok2, err := e.svc.CreateAdmin(ctx(t), "", "second", "admin2")
	require.NoError(t, err)
	r = e.do("GET", "/users", "", "", "Authorization", "Bearer "+tok2)
	require.Equal(t, http.StatusOK, r.status)
	requireLimitHeaders(t, r, "3", "2", "1")
}

func TestRateLimitStreamCountsOnce(t *testing.T) {
	t.Parallel()
	e, _ := limitedEnv(t, httpapi.RateLimit{}, httpapi.RateLimit{Rate: 1, Burst: 5})
	_, err := e.svc.CreateChannel(ctx(t), e.admin, chat.CreateChannelInput{ChannelID: "room", Type: chat.ChannelTypeStandard, UserIDs: []string{"carol"}})
	require.NoError(t, err)
	tok := userToken(t, e, "carol")

	req, err := http.NewRequest("GET", e.base+"/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := e.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "4", resp.Header.Get("X-RateLimit-Remaining"))
	br := bufio.NewReader(resp.Body)
	// Events flow on the open stream without being counted: the
	// connection was one request.
	for i := range 3 {
		_, err := e.svc.CreateMessage(ctx(t), e.admin, chat.CreateMessageInput{ChannelID: "room", Type: chat.MessageTypeText, Data: map[string]any{"text": "hi " + string(rune('a'+i))}})
		require.NoError(t, err)
	}
	seen := 0
	for seen < 3 {
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		if strings.HasPrefix(line, "event: message.didCreate") {
			seen++
		}
	}
	r := e.do("GET", "/users", "", "", "Authorization", "Bearer "+tok)
	require.Equal(t, http.StatusOK, r.status)
	requireLimitHeaders(t, r, "5", "3", "2")
}

func TestRateLimitOff(t *testing.T) {
	t.Parallel()
	e, _ := limitedEnv(t, httpapi.RateLimit{}, httpapi.RateLimit{Rate: -1, Burst: 1})
	alice := userToken(t, e, "alice")
	for range 50 {
		r := e.do("GET", "/users", "", "", "Authorization", "Bearer "+alice)
		require.Equal(t, http.StatusOK, r.status)
		require.Empty(t, r.header.Get("X-RateLimit-Limit"))
	}
}

package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/httpapi"
)

// TestAnonRateLimit: requests without a credential (none, a refused token,
// a stream ticket) count against one bucket per client address, with the
// headers and the 429/400311 of the per-caller limits; valid credentials
// and signed file links do not count.
func TestAnonRateLimit(t *testing.T) {
	t.Parallel()
	// One request a thousand seconds, bursts of 3: the bucket does not
	// refill during the test. The address comes from a test header.
	anon := httpapi.NewAnonLimiter(httpapi.RateLimit{Rate: 0.001, Burst: 3},
		func(r *http.Request) string { return r.Header.Get("X-Test-Addr") })
	e := newEnv(t, memoryStore, func(c *httpapi.Config, sc *chat.Config) {
		c.Anon = anon
		matrixConfig(c, sc)
	})
	bg := context.Background()
	_, err := e.svc.CreateChannel(bg, e.admin, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"ann", "gb"}})
	require.NoError(t, err)
	fl, err := e.svc.CreateFileMessage(bg, "ann", chat.CreateFileMessageInput{ChannelID: "c", FileName: "a.txt", MimeType: "text/plain", Data: []byte("bytes")})
	require.NoError(t, err)
	link, _ := fl.Messages[0].Data["url"].(string)
	require.NotEmpty(t, link)
	ann, err := e.svc.IssueUserToken(bg, "", "ann", time.Hour)
	require.NoError(t, err)
	gb, err := e.svc.IssueUserToken(bg, "", "gb", time.Hour)
	require.NoError(t, err)
	require.NoError(t, e.svc.GlobalBan(bg, e.admin, "gb", false))

	from := func(addr string, hdr ...string) []string {
		return append([]string{"X-Test-Addr", addr, "Authorization", ""}, hdr...)
	}
	// No credential at all, then refused tokens of both kinds: one bucket.
	for i, auth := range []string{"", "Bearer chat_not-a-real-token", "Bearer " + signToken(t, []byte("another secret, not the server's"), jwtClaims{"user_id": "ann"})} {
		r := e.do("GET", "/users", "", "", from("10.0.0.1", "Authorization", auth)...)
		requireError(t, r, chat.CodeUnauthorized, "")
		requireLimitHeaders(t, r, "3", strconv.Itoa(2-i), strconv.Itoa(1000*(i+1)))
	}
	r := e.do("GET", "/users", "", "", from("10.0.0.1")...)
	requireError(t, r, chat.CodeRateLimited, "")
	require.Equal(t, "1000", r.header.Get("Retry-After"))
	requireLimitHeaders(t, r, "3", "0", "3000")
	r = e.do("GET", "/no-such-route", "", "", from("10.0.0.1", "Authorization", "Bearer chat_wrong")...)
	requireError(t, r, chat.CodeRateLimited, "")

	// Another address has its own bucket.
	r = e.do("GET", "/users", "", "", from("10.0.0.2")...)
	requireError(t, r, chat.CodeUnauthorized, "")
	requireLimitHeaders(t, r, "3", "2", "1000")

	// From the exhausted address, valid credentials and signed links are
	// served as ever: they do not count.
	r = e.do("GET", "/users", "", "", from("10.0.0.1", "Authorization", "Bearer "+e.token)...)
	require.Equal(t, http.StatusOK, r.status, "body %s", r.body)
	require.Empty(t, r.header.Get("X-RateLimit-Limit"), "the admin has no limit of its own here")
	r = e.do("GET", "/users", "", "", from("10.0.0.1", "Authorization", "Bearer "+ann.Token)...)
	require.Equal(t, http.StatusOK, r.status, "body %s", r.body)
	r = e.do("GET", "/users", "", "", from("10.0.0.1", "Authorization", "Bearer "+gb.Token)...)
	requireError(t, r, chat.CodeGlobalBanned, "") // a valid token of a banned user: not anonymous
	for range 5 {
		r = e.anon(link, "X-Test-Addr", "10.0.0.1")
		require.Equal(t, http.StatusOK, r.status, "body %s", r.body)
		require.Equal(t, "bytes", string(r.body))
	}
	r = e.anon(strings.Replace(link, "sig=", "sig=0", 1), "X-Test-Addr", "10.0.0.1")
	requireError(t, r, chat.CodeForbidden, "") // a bad link is refused by its signature, not counted

	// Ticket redemptions count, good tickets too, before the ticket is
	// looked at: from a fresh address, two bad tickets and a good one
	// spend the bucket, and the next good ticket is refused unused.
	ticket := func() string {
		r := e.do("POST", "/events/ticket", "", "", "X-Test-Addr", "10.0.0.3")
		require.Equal(t, http.StatusOK, r.status, "body %s", r.body)
		var tk struct {
			Ticket string `json:"ticket"`
		}
		require.NoError(t, json.Unmarshal(r.body, &tk))
		return tk.Ticket
	}
	for i, tk := range []string{"nope", "also-nope"} {
		r := e.do("GET", "/events?ticket="+tk, "", "", from("10.0.0.3", "Accept", "text/event-stream")...)
		requireError(t, r, chat.CodeUnauthorized, "ticket")
		requireLimitHeaders(t, r, "3", strconv.Itoa(2-i), strconv.Itoa(1000*(i+1)))
	}
	good := ticket()
	r = e.do("GET", "/events?ticket="+good, "", "", from("10.0.0.3", "Accept", "text/event-stream")...)
	require.Equal(t, http.StatusOK, r.status, "body %s", r.body)
	require.Contains(t, string(r.body), "stream.didConnect")
	unused := ticket()
	r = e.do("GET", "/events?ticket="+unused, "", "", from("10.0.0.3", "Accept", "text/event-stream")...)
	requireError(t, r, chat.CodeRateLimited, "")
	require.Equal(t, "1000", r.header.Get("Retry-After"))
}

// TestAnonLimiterBeside: AnonLimiter.Limit puts a host's own route (a
// sign-in form) behind the same buckets, with the API's answers.
func TestAnonLimiterBeside(t *testing.T) {
	t.Parallel()
	anon := httpapi.NewAnonLimiter(httpapi.RateLimit{Rate: 0.001, Burst: 2}, nil)
	served := 0
	h := anon.Limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served++ }))
	send := func(remote string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/signin", nil)
		req.RemoteAddr = remote
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	require.Equal(t, http.StatusOK, send("192.0.2.1:1000").Code)
	require.Equal(t, http.StatusOK, send("192.0.2.1:2000").Code, "the address is the host, whatever the port")
	w := send("192.0.2.1:3000")
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	require.Equal(t, "1000", w.Header().Get("Retry-After"))
	require.Equal(t, "2", w.Header().Get("X-RateLimit-Limit"))
	var body map[string]any
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
	require.EqualValues(t, chat.CodeRateLimited, body["code"])
	require.Equal(t, http.StatusOK, send("192.0.2.2:1000").Code)
	require.Equal(t, 3, served)

	// Off: no limiter, nothing counted.
	var off *httpapi.AnonLimiter = httpapi.NewAnonLimiter(httpapi.RateLimit{}, nil)
	require.Nil(t, off)
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	require.NotNil(t, off.Limit(next))
}

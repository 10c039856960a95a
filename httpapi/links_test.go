package httpapi_test

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/client"
	"github.com/chatengine/chat/httpapi"
)

// TestLinksLeaveTyping runs the signed link, leave and typing cases
// against every store.
func TestLinksLeaveTyping(t *testing.T) {
	t.Parallel()
	for _, s := range []struct {
		name string
		open storeFactory
	}{{"memory", memoryStore}, {"sqlite", sqliteStore}, {"postgres", postgresStore}} {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			if s.name == "sqlite" && testing.Short() {
				t.Skip("the SQLite run is skipped in -short mode")
			}
			for _, c := range []struct {
				name string
				fn   func(t *testing.T, open storeFactory)
			}{{"SignedLinks", testSignedLinks}, {"Leave", testLeave}, {"Typing", testTyping}} {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					c.fn(t, s.open)
				})
			}
		})
	}
}

// testClock is a settable clock for the Service.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// anon sends a GET without Authorization (or with the given one) to a
// path as the API returned it (it begins with /api/v2).
func (e *env) anon(path string, hdr ...string) *rawResponse {
	e.t.Helper()
	return e.do(http.MethodGet, strings.TrimPrefix(path, "/api/v2"), "", "", append([]string{"Authorization", ""}, hdr...)...)
}

func testSignedLinks(t *testing.T, open storeFactory) {
	clk := &testClock{t: time.Now().UTC()}
	e := newEnv(t, open, func(_ *httpapi.Config, c *chat.Config) { c.Now = clk.Now })
	c := e.c
	_, err := c.CreateChannel(ctx(t), client.CreateChannelRequest{ChannelID: "ch", Type: chat.ChannelTypeStandard})
	require.NoError(t, err)
	img, err := c.CreateImageMessage(ctx(t), "ch", "photo.png", bytes.NewReader(pngImage(t, 800, 400, false)), &client.ImageOptions{ContentType: "image/png"})
	require.NoError(t, err)
	id, ok := img.Image()
	require.True(t, ok)
	require.Len(t, id.URLs, len(id.Sizes), "one link per kept size")
	file, err := c.CreateFileMessage(ctx(t), "ch", "notes.txt", strings.NewReader("0123456789"), &client.FileOptions{ContentType: "text/plain"})
	require.NoError(t, err)
	fd, ok := file.File()
	require.True(t, ok)
	require.True(t, strings.HasPrefix(fd.URL, "/api/v2/messages/"+file.MessageID+"/files?exp="), fd.URL)

	// Every size opens without a token, with the bytes and headers of the
	// authenticated download.
	for _, sz := range id.Sizes {
		link := id.URLs[sz.Size]
		require.True(t, strings.HasPrefix(link, "/api/v2/messages/"+img.MessageID+"/images?size="+sz.Size+"&exp="), link)
		r := e.anon(link)
		require.Equal(t, http.StatusOK, r.status, "%s: %s", link, r.body)
		d, err := c.GetImage(ctx(t), img.MessageID, sz.Size, nil)
		require.NoError(t, err)
		require.Equal(t, readAll(t, d), r.body)
		require.Equal(t, d.ContentType, r.header.Get("Content-Type"))
		require.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"))
		require.Equal(t, "default-src 'none'; sandbox", r.header.Get("Content-Security-Policy"))
		require.True(t, strings.HasPrefix(r.header.Get("Content-Disposition"), "inline; "))
	}
	r := e.anon(fd.URL)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "0123456789", string(r.body))
	require.True(t, strings.HasPrefix(r.header.Get("Content-Disposition"), "attachment; "))
	r = e.anon(fd.URL, "Range", "bytes=2-5")
	require.Equal(t, http.StatusPartialContent, r.status)
	require.Equal(t, "2345", string(r.body))
	// The link decides, whatever Authorization says.
	require.Equal(t, http.StatusOK, e.anon(fd.URL, "Authorization", "Bearer not-a-token").status)
	// The typed client opens links too.
	dl, err := c.OpenLink(ctx(t), fd.URL, nil)
	require.NoError(t, err)
	require.Equal(t, "0123456789", string(readAll(t, dl)))

	// Every response that carries the message carries the same links.
	raw := e.do("POST", "/messages", "application/json", `{"channelId":"ch"}`)
	require.Equal(t, http.StatusOK, raw.status)
	require.Contains(t, string(raw.body), jsonString(t, id.URLs[chat.ImageSmall]))
	require.Contains(t, string(raw.body), jsonString(t, fd.URL))
	got, err := c.GetMessage(ctx(t), img.MessageID)
	require.NoError(t, err)
	gd, _ := got.Image()
	require.Equal(t, id.URLs, gd.URLs)

	// Altered links: 403/400300.
	small := id.URLs[chat.ImageSmall]
	u, err := url.Parse(small)
	require.NoError(t, err)
	q := u.Query()
	sig := q.Get("sig")
	altered := func(f func(q url.Values) (path string)) *rawResponse {
		q := u.Query()
		p := f(q)
		if p == "" {
			p = u.Path
		}
		return e.anon(p + "?" + q.Encode())
	}
	flip := "A"
	if sig[0] == 'A' {
		flip = "B"
	}
	requireError(t, altered(func(q url.Values) string { q.Set("sig", flip+sig[1:]); return "" }), chat.CodeForbidden, "signature")
	requireError(t, altered(func(q url.Values) string { q.Set("sig", sig+"x"); return "" }), chat.CodeForbidden, "signature")
	requireError(t, altered(func(q url.Values) string { q.Set("size", chat.ImageLarge); return "" }), chat.CodeForbidden, "signature")
	requireError(t, altered(func(q url.Values) string { q.Set("size", "huge"); return "" }), chat.CodeForbidden, "signature")
	requireError(t, altered(func(q url.Values) string {
		return strings.Replace(u.Path, img.MessageID, file.MessageID, 1)
	}), chat.CodeForbidden, "signature")
	requireError(t, altered(func(q url.Values) string { q.Set("exp", q.Get("exp")+"0"); return "" }), chat.CodeForbidden, "signature")
	// Malformed: 400 naming the field.
	requireError(t, altered(func(q url.Values) string { q.Set("exp", "tomorrow"); return "" }), chat.CodeBadRequest, "exp")
	requireError(t, altered(func(q url.Values) string { q.Del("exp"); return "" }), chat.CodeBadRequest, "exp")
	_, err = c.OpenLink(ctx(t), strings.Replace(fd.URL, "sig=", "sig=x", 1), nil)
	requireCode(t, err, chat.CodeForbidden)

	// Without sig a token is needed: 401.
	requireError(t, altered(func(q url.Values) string { q.Del("sig"); return "" }), chat.CodeUnauthorized, "missing access token")
	requireError(t, e.anon("/messages/"+img.MessageID+"/images?size=small"), chat.CodeUnauthorized, "missing access token")
	// An empty or repeated sig is a link that fails, never a pass.
	requireError(t, e.anon(u.Path+"?sig="), chat.CodeBadRequest, "exp")
	requireError(t, e.anon(u.Path+"?sig"), chat.CodeBadRequest, "exp")
	requireError(t, e.anon(u.Path+"?size=small&exp="+q.Get("exp")+"&sig="), chat.CodeBadRequest, "sig")
	requireError(t, e.anon(u.Path+"?size=small&exp="+q.Get("exp")+"&sig="+sig+"&sig="+sig), chat.CodeBadRequest, "sig")
	requireError(t, e.anon("/messages/"+file.MessageID+"/files?sig=&exp="+q.Get("exp")), chat.CodeBadRequest, "sig")
	// sig opens nothing but the downloads.
	requireError(t, e.anon("/message/"+img.MessageID+"?"+q.Encode()), chat.CodeUnauthorized, "missing access token")

	// Expired: 403/400300.
	exp := time.Unix(mustAtoi(t, q.Get("exp")), 0)
	clk.Set(exp.Add(-time.Second))
	require.Equal(t, http.StatusOK, e.anon(small).status)
	clk.Set(exp)
	requireError(t, e.anon(small), chat.CodeForbidden, "expired")

	// A deleted message's links: 404.
	got, err = c.GetMessage(ctx(t), img.MessageID)
	require.NoError(t, err)
	gd, _ = got.Image()
	fresh := gd.URLs[chat.ImageSmall]
	require.NotEqual(t, small, fresh, "a later response has a later expiry")
	require.Equal(t, http.StatusOK, e.anon(fresh).status)
	require.NoError(t, c.DeleteMessage(ctx(t), img.MessageID))
	requireError(t, e.anon(fresh), chat.CodeNotFound, "")
	_, err = c.OpenLink(ctx(t), fresh, nil)
	requireCode(t, err, chat.CodeNotFound)
}

func jsonString(t *testing.T, s string) string {
	t.Helper()
	// encoding/json escapes & as \u0026 in strings.
	return strings.ReplaceAll(s, "&", `\u0026`)
}

func mustAtoi(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	for _, c := range s {
		require.True(t, c >= '0' && c <= '9', "not a number: %s", s)
		n = n*10 + int64(c-'0')
	}
	return n
}

func testLeave(t *testing.T, open storeFactory) {
	e := newEnv(t, open)
	c := e.c
	_, err := c.CreateChannel(ctx(t), client.CreateChannelRequest{ChannelID: "ch", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice", e.admin}})
	require.NoError(t, err)

	require.NoError(t, c.LeaveChannel(ctx(t), "ch"))
	ch, err := c.GetChannel(ctx(t), "ch")
	require.NoError(t, err)
	require.Equal(t, 1, ch.MemberCount)
	require.Len(t, ch.ChannelUsers, 1)
	require.Equal(t, "alice", ch.ChannelUsers[0].UserID)
	// Again: a no-op that succeeds; the raw shape is {"success":true}.
	r := e.do("POST", "/channel/ch/leave", "", "")
	require.Equal(t, http.StatusOK, r.status)
	require.JSONEq(t, `{"success":true}`, string(r.body))
	r = e.form("POST", "/channel/ch/leave", url.Values{"channelId": {"ch"}})
	require.Equal(t, http.StatusOK, r.status)

	requireCode(t, c.LeaveChannel(ctx(t), "nope"), chat.CodeNotFound)
	require.NoError(t, c.CloseChannel(ctx(t), "ch"))
	requireCode(t, c.LeaveChannel(ctx(t), "ch"), chat.CodeForbidden)
	requireError(t, e.do("POST", "/channel/ch/leave", "", "", "Authorization", ""), chat.CodeUnauthorized, "")
}

func testTyping(t *testing.T, open storeFactory) {
	clk := &testClock{t: time.Now().UTC()}
	e := newEnv(t, open, func(_ *httpapi.Config, c *chat.Config) { c.Now = clk.Now })
	c := e.c
	var mu sync.Mutex
	var evs []chat.EphemeralEvent
	t.Cleanup(e.svc.SubscribeEphemeral(func(ev chat.EphemeralEvent) {
		mu.Lock()
		evs = append(evs, ev)
		mu.Unlock()
	}))
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(evs)
	}
	// With Postgres the events come back through NOTIFY, after the call.
	waitFor := func(n int) {
		t.Helper()
		require.Eventually(t, func() bool { return count() >= n }, 10*time.Second, time.Millisecond)
	}
	_, err := c.CreateChannel(ctx(t), client.CreateChannelRequest{ChannelID: "ch", Type: chat.ChannelTypeStandard, UserIDs: []string{e.admin}})
	require.NoError(t, err)

	r := e.do("POST", "/channel/ch/typing", "", "")
	require.Equal(t, http.StatusOK, r.status)
	require.JSONEq(t, `{"success":true}`, string(r.body))
	waitFor(1)
	mu.Lock()
	require.Equal(t, chat.EventChannelDidStartTyping, evs[0].Event)
	require.JSONEq(t, `{"channelId":"ch","userId":"`+e.admin+`"}`, string(evs[0].Data))
	// Within 2 s: success, nothing published.
	mu.Unlock()
	require.NoError(t, c.Typing(ctx(t), "ch"))
	clk.Set(clk.Now().Add(chat.TypingInterval))
	require.NoError(t, c.Typing(ctx(t), "ch"))
	waitFor(2)
	mu.Lock()
	require.Len(t, evs, 2)
	require.True(t, evs[1].CreatedAt.Equal(clk.Now().Truncate(time.Millisecond)), "the second event is the call 2 s later, not the throttled one")
	mu.Unlock()

	requireCode(t, c.Typing(ctx(t), "nope"), chat.CodeNotFound)
	require.NoError(t, c.CloseChannel(ctx(t), "ch"))
	clk.Set(clk.Now().Add(time.Minute))
	requireCode(t, c.Typing(ctx(t), "ch"), chat.CodeForbidden)
	require.Equal(t, 2, count())
	requireError(t, e.do("POST", "/channel/ch/typing", "", "", "Authorization", ""), chat.CodeUnauthorized, "")
}

package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/console"
	"github.com/chatengine/chat/store/memory"
)

const rootPassword = "correct horse battery"

// fakeClock is the throttle's clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type panel struct {
	t     *testing.T
	svc   *chat.Service
	srv   *httptest.Server
	clock *fakeClock
	root  *chat.Admin
}

// newPanel serves the panel at /admin/ over a memory store with the admin
// "root" (password rootPassword). The sign-in throttle counts the address
// in the X-Test-Addr header, so tests can speak from several addresses.
func newPanel(t *testing.T, tls bool) *panel {
	t.Helper()
	return newPanelConfig(t, tls, chat.Config{}, console.Config{})
}

// newPanelConfig is newPanel with the Service's and the panel's
// configuration (their password cost, clock and client address are the
// tests').
func newPanelConfig(t *testing.T, tls bool, sc chat.Config, cc console.Config) *panel {
	t.Helper()
	ctx := context.Background()
	sc.AdminPasswordCost = bcrypt.MinCost
	svc, err := chat.New(ctx, memory.New(), sc)
	require.NoError(t, err)
	root, _, err := svc.CreateAdminWithPassword(ctx, "", "root", "", rootPassword)
	require.NoError(t, err)
	clk := &fakeClock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	cc.Now = clk.now
	cc.ClientAddr = func(r *http.Request) string { return r.Header.Get("X-Test-Addr") }
	h := console.New(svc, cc)
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", h))
	var srv *httptest.Server
	if tls {
		srv = httptest.NewTLSServer(mux)
	} else {
		srv = httptest.NewServer(mux)
	}
	t.Cleanup(srv.Close)
	return &panel{t: t, svc: svc, srv: srv, clock: clk, root: root}
}

// browser is a client with its own cookies that does not follow redirects.
type browser struct {
	p    *panel
	c    *http.Client
	addr string
}

func (p *panel) browser(addr string) *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(p.t, err)
	c := *p.srv.Client() // a copy: each browser has its own cookies
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &browser{p: p, c: &c, addr: addr}
}

func (b *browser) do(method, path string, form url.Values, hdr map[string]string) (*http.Response, string) {
	b.p.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.p.srv.URL+path, body)
	require.NoError(b.p.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("X-Test-Addr", b.addr)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := b.c.Do(req)
	require.NoError(b.p.t, err)
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	require.NoError(b.p.t, err)
	return res, string(out)
}

func (b *browser) get(path string) (*http.Response, string) { return b.do("GET", path, nil, nil) }

func (b *browser) post(path string, form url.Values) (*http.Response, string) {
	return b.do("POST", path, form, nil)
}

var (
	signinTokenRE = regexp.MustCompile(`name="signin" value="([^"]+)"`)
	csrfRE        = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
)

// signIn posts the sign-in form and returns the response.
func (b *browser) signIn(name, password string) (*http.Response, string) {
	b.p.t.Helper()
	_, page := b.get("/admin/signin")
	m := signinTokenRE.FindStringSubmatch(page)
	require.NotNil(b.p.t, m, "the sign-in form carries its token:\n%s", page)
	return b.post("/admin/signin", url.Values{"signin": {m[1]}, "name": {name}, "password": {password}})
}

// signedIn signs in as root and returns the session's CSRF token.
func (b *browser) signedIn() string {
	b.p.t.Helper()
	res, _ := b.signIn("root", rootPassword)
	require.Equal(b.p.t, http.StatusSeeOther, res.StatusCode)
	require.Equal(b.p.t, "/admin/", res.Header.Get("Location"))
	return b.csrf()
}

func (b *browser) csrf() string {
	b.p.t.Helper()
	res, page := b.get("/admin/channels")
	require.Equal(b.p.t, http.StatusOK, res.StatusCode, page)
	m := csrfRE.FindStringSubmatch(page)
	require.NotNil(b.p.t, m)
	return m[1]
}

func (p *panel) channelExists(id string) bool {
	_, err := p.svc.GetChannel(context.Background(), p.root.UserID, id)
	if chat.ErrorCode(err) == chat.CodeNotFound {
		return false
	}
	require.NoError(p.t, err)
	return true
}

func TestHeadersAndCookies(t *testing.T) {
	t.Parallel()
	for _, tls := range []bool{false, true} {
		p := newPanel(t, tls)
		b := p.browser("10.0.0.1")
		res, _ := b.get("/admin/signin")
		require.Equal(t, http.StatusOK, res.StatusCode)
		for _, path := range []string{"/admin/signin", "/admin/static/app.js"} {
			res, _ := b.get(path)
			csp := res.Header.Get("Content-Security-Policy")
			require.Contains(t, csp, "frame-ancestors 'none'", path)
			require.Contains(t, csp, "script-src 'self'", path)
			require.NotContains(t, csp, "unsafe-inline", path)
			require.NotContains(t, csp, "unsafe-eval", path)
			require.Equal(t, "DENY", res.Header.Get("X-Frame-Options"), path)
			require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"), path)
		}
		res, _ = b.signIn("root", rootPassword)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		var session *http.Cookie
		for _, c := range res.Cookies() {
			if c.Name == "chat_admin_session" {
				session = c
			}
		}
		require.NotNil(t, session, "the sign-in sets the session cookie")
		require.True(t, session.HttpOnly)
		require.Equal(t, http.SameSiteStrictMode, session.SameSite)
		require.Equal(t, tls, session.Secure, "Secure exactly under TLS")
		require.Equal(t, "/admin/", session.Path)
		res, page := b.get("/admin/")
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Contains(t, page, "Signed in as")
		require.Equal(t, "no-store", res.Header.Get("Cache-Control"))
	}
}

func TestSignedOutVisitorIsSentToSignIn(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)
	b := p.browser("10.0.0.2")
	for _, path := range []string{"/admin/", "/admin/channels", "/admin/admins", "/admin/users/root"} {
		res, _ := b.get(path)
		require.Equal(t, http.StatusSeeOther, res.StatusCode, path)
		require.Equal(t, "/admin/signin", res.Header.Get("Location"), path)
	}
	res, _ := b.do("GET", "/admin/channels/x/messages", nil, map[string]string{"X-Requested-With": "fetch"})
	require.Equal(t, http.StatusUnauthorized, res.StatusCode, "a script's fetch gets 401")
	res, _ = b.post("/admin/channels", url.Values{"csrf": {"x"}, "channelId": {"sneaky"}})
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	require.False(t, p.channelExists("sneaky"))
}

func TestCSRF(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)
	b := p.browser("10.0.0.3")
	token := b.signedIn()

	cases := []struct {
		name string
		form url.Values
		hdr  map[string]string
	}{
		{"no token", url.Values{"channelId": {"c1"}}, nil},
		{"empty token", url.Values{"channelId": {"c1"}, "csrf": {""}}, nil},
		{"forged token", url.Values{"channelId": {"c1"}, "csrf": {"forged-" + token[:10]}}, nil},
		{"token in the query only", url.Values{"channelId": {"c1"}}, nil},
		{"cross-site origin", url.Values{"channelId": {"c1"}, "csrf": {token}}, map[string]string{"Origin": "https://evil.example"}},
		{"null origin", url.Values{"channelId": {"c1"}, "csrf": {token}}, map[string]string{"Origin": "null"}},
		{"cross-site fetch metadata", url.Values{"channelId": {"c1"}, "csrf": {token}}, map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{"same-site fetch metadata", url.Values{"channelId": {"c1"}, "csrf": {token}}, map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "https://other.example"}},
	}
	for _, c := range cases {
		path := "/admin/channels"
		if c.name == "token in the query only" {
			path += "?csrf=" + url.QueryEscape(token)
		}
		res, body := b.do("POST", path, c.form, c.hdr)
		require.Equal(t, http.StatusForbidden, res.StatusCode, "%s: %s", c.name, body)
		require.False(t, p.channelExists("c1"), "%s: nothing changed", c.name)
	}
	// Other state-changing routes refuse a missing token the same way.
	for _, path := range []string{"/admin/users/root/ban", "/admin/admins/root/revoke", "/admin/rules/blacklist/add", "/admin/webhooks", "/admin/signout"} {
		res, _ := b.post(path, url.Values{"confirm": {"yes"}, "patterns": {"x"}, "url": {"https://example.com"}})
		require.Equal(t, http.StatusForbidden, res.StatusCode, path)
	}
	as, err := p.svc.ListAdmins(context.Background())
	require.NoError(t, err)
	require.Nil(t, as[0].RevokedAt, "nothing changed")
	rr, err := p.svc.QueryRules(context.Background(), p.root.UserID, chat.Blacklist, nil)
	require.NoError(t, err)
	require.Empty(t, rr.Records)

	// The same-origin form with the token works.
	res, _ := b.do("POST", "/admin/channels", url.Values{"channelId": {"c1"}, "csrf": {token}},
		map[string]string{"Origin": p.srv.URL, "Sec-Fetch-Site": "same-origin"})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.True(t, p.channelExists("c1"))
	// Behind a proxy that rewrites Host, the browser's same-origin mark
	// decides (the token still has to match).
	res, _ = b.do("POST", "/admin/channels", url.Values{"channelId": {"c2"}, "csrf": {token}},
		map[string]string{"Origin": "https://chat.example.com", "Sec-Fetch-Site": "same-origin"})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.True(t, p.channelExists("c2"))
}

func TestSignOutEndsTheSession(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)
	b := p.browser("10.0.0.4")
	token := b.signedIn()
	u, _ := url.Parse(p.srv.URL + "/admin/")
	stolen := b.c.Jar.Cookies(u)

	res, _ := b.post("/admin/signout", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/admin/signin", res.Header.Get("Location"))

	// An attacker replays the stolen cookie and the old CSRF token.
	thief := p.browser("10.0.0.5")
	thief.c.Jar.SetCookies(u, stolen)
	res, _ = thief.get("/admin/admins")
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/admin/signin", res.Header.Get("Location"))
	thief.c.Jar.SetCookies(u, stolen)
	res, _ = thief.post("/admin/channels", url.Values{"csrf": {token}, "channelId": {"after-signout"}})
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	require.False(t, p.channelExists("after-signout"))

	// Signing in again makes a new CSRF token; the old one is refused.
	fresh := b.signedIn()
	require.NotEqual(t, token, fresh)
	res, _ = b.post("/admin/channels", url.Values{"csrf": {token}, "channelId": {"old-token"}})
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.False(t, p.channelExists("old-token"))
}

func TestSignInFailures(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)
	b := p.browser("10.0.0.6")
	res, page := b.signIn("root", "wrong password!")
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	require.Contains(t, page, "wrong admin name or password")

	// A sign-in form posted without its cookie (another site's form).
	other := p.browser("10.0.0.6")
	res, _ = other.post("/admin/signin", url.Values{"signin": {"made-up"}, "name": {"root"}, "password": {rootPassword}})
	require.Equal(t, http.StatusForbidden, res.StatusCode)

	// A revoked admin cannot sign in.
	ctx := context.Background()
	_, _, err := p.svc.CreateAdminWithPassword(ctx, "", "gone", "", "a long enough password")
	require.NoError(t, err)
	require.NoError(t, p.svc.RevokeAdmin(ctx, "", "gone"))
	res, page = b.signIn("gone", "a long enough password")
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	require.Contains(t, page, "revoked")
}

func TestSignInThrottle(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)

	// Ten failures for one name, from ten addresses.
	for i := range 10 {
		res, _ := p.browser("10.1.0."+strconv.Itoa(i)).signIn("root", "wrong password!")
		require.Equal(t, http.StatusUnauthorized, res.StatusCode, "attempt %d", i+1)
	}
	res, page := p.browser("10.1.1.1").signIn("root", rootPassword)
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode, "even the right password waits")
	secs, err := strconv.Atoi(res.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.Equal(t, 600, secs, "until the first failure leaves the 10-minute window")
	require.Contains(t, page, "Too many failed sign-ins")
	p.clock.add(9 * time.Minute)
	res, _ = p.browser("10.1.1.2").signIn("root", rootPassword)
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	require.Equal(t, "60", res.Header.Get("Retry-After"))
	p.clock.add(time.Minute)
	res, _ = p.browser("10.1.1.3").signIn("root", rootPassword)
	require.Equal(t, http.StatusSeeOther, res.StatusCode, "the window passed")

	// Ten failures from one address, for ten names.
	for i := range 10 {
		res, _ := p.browser("10.2.0.1").signIn("nobody"+strconv.Itoa(i), "wrong password!")
		require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	}
	res, _ = p.browser("10.2.0.1").signIn("root", rootPassword)
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode, "the address is blocked")
	require.NotEmpty(t, res.Header.Get("Retry-After"))
	res, _ = p.browser("10.2.0.2").signIn("root", rootPassword)
	require.Equal(t, http.StatusSeeOther, res.StatusCode, "another address is not")
}

// TestInjectionIsEscaped stores a script in every field a user or an
// admin can set, renders every page, and checks that the only script
// element is the panel's own.
func TestInjectionIsEscaped(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)
	ctx := context.Background()
	actor := p.root.UserID
	const evil = `<script>alert(1)</script>`
	const evilID = `x<script>alert(1)</script>`
	name := evil + `"><img src=x onerror=alert(2)>`
	meta := map[string]any{"bio": evil, evil: "key"}
	_, err := p.svc.UpdateUser(ctx, actor, chat.UpdateUserInput{UserID: evilID, DisplayName: &name, Metadata: &meta})
	require.NoError(t, err)
	_, err = p.svc.PutRoles(ctx, actor, []string{evilID}, []string{evil})
	require.NoError(t, err)
	_, err = p.svc.CreateChannel(ctx, actor, chat.CreateChannelInput{ChannelID: evilID, Type: chat.ChannelTypeStandard,
		DisplayName: name, Tags: []string{evil}, Metadata: meta, UserIDs: []string{evilID}})
	require.NoError(t, err)
	_, err = p.svc.CreateMessage(ctx, actor, chat.CreateMessageInput{ChannelID: evilID, Type: chat.MessageTypeText, Data: map[string]any{"text": evil}})
	require.NoError(t, err)
	_, err = p.svc.CreateMessage(ctx, actor, chat.CreateMessageInput{ChannelID: evilID, Type: chat.MessageTypeCustom, Data: map[string]any{"html": evil}})
	require.NoError(t, err)
	_, err = p.svc.FlagUser(ctx, actor, evilID)
	require.NoError(t, err)
	_, err = p.svc.AddRules(ctx, actor, chat.Blacklist, []string{`<script>`}, false)
	require.NoError(t, err)
	_, err = p.svc.AddRules(ctx, actor, chat.Whitelist, []string{`example.com/<script>`}, false)
	require.NoError(t, err)
	wh, err := p.svc.CreateWebhook(ctx, actor, `https://example.com/<script>alert(1)</script>`, []string{"message.didCreate"})
	require.NoError(t, err)
	_, _, err = p.svc.CreateAdminWithPassword(ctx, "", evilID, evilID, "a long enough password")
	require.NoError(t, err)

	b := p.browser("10.3.0.1")
	token := b.signedIn()
	e := url.PathEscape(evilID)
	paths := []string{
		"/admin/", "/admin/channels", "/admin/channels?userId=" + url.QueryEscape(evilID), "/admin/channels/" + e,
		"/admin/channels/" + e + "/messages", "/admin/users", "/admin/users?filter=flagged", "/admin/users/" + e,
		"/admin/roles", "/admin/rules", "/admin/admins", "/admin/webhooks", "/admin/webhooks/" + url.PathEscape(wh.WebhookID),
		"/admin/channels/" + url.PathEscape(evil),
	}
	for _, path := range paths {
		res, page := b.get(path)
		require.Contains(t, []int{200, 404}, res.StatusCode, path)
		require.NotContains(t, page, "<script>alert", path)
		require.NotContains(t, page, "<img src=x", path)
		require.LessOrEqual(t, strings.Count(page, "<script"), 1, "%s: only the panel's own script", path)
		if strings.Contains(page, "<script") {
			require.Contains(t, page, `<script src="/admin/static/app.js" defer></script>`, path)
		}
	}
	// The rule tester echoes the tested text escaped.
	res, page := b.post("/admin/rules/test", url.Values{"csrf": {token}, "userId": {evilID}, "text": {evil}})
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.NotContains(t, page, "<script>alert")
	require.Contains(t, page, "Refused: text contains a blacklisted word")
	// A refused action's message (a flash) is escaped too.
	res, _ = b.post("/admin/channels", url.Values{"csrf": {token}, "channelId": {evilID}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	_, page = b.get("/admin/channels")
	require.Contains(t, page, "already")
	require.NotContains(t, page, "<script>alert")
}

func TestActionsGiveFeedback(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)
	b := p.browser("10.4.0.1")
	token := b.signedIn()

	res, _ := b.post("/admin/channels", url.Values{"csrf": {token}, "channelId": {"room"}, "userIds": {"ann, ben"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/admin/channels/room", res.Header.Get("Location"))
	_, page := b.get("/admin/channels/room")
	require.Contains(t, page, "Channel room created.")
	require.Contains(t, page, `data-user-id="ann"`)
	_, page = b.get("/admin/channels/room")
	require.NotContains(t, page, "Channel room created.", "a flash shows once")

	// Closing needs the confirmation box.
	_, _ = b.post("/admin/channels/room/close", url.Values{"csrf": {token}})
	_, page = b.get("/admin/channels/room")
	require.Contains(t, page, "tick the box to confirm")
	require.True(t, p.channelExists("room"))
	cl, err := p.svc.GetChannel(context.Background(), p.root.UserID, "room")
	require.NoError(t, err)
	require.False(t, cl.Channels[0].IsClosed, "not closed without confirmation")

	// A global ban that deletes messages needs the confirmation box.
	_, _ = b.post("/admin/users/ann/ban", url.Values{"csrf": {token}, "deleteMessages": {"yes"}})
	_, page = b.get("/admin/users/ann")
	require.Contains(t, page, "tick the box to confirm")
	ul, err := p.svc.GetUser(context.Background(), p.root.UserID, "ann")
	require.NoError(t, err)
	require.False(t, ul.Users[0].IsGlobalBan)
	_, _ = b.post("/admin/users/ann/ban", url.Values{"csrf": {token}})
	_, page = b.get("/admin/users/ann")
	require.Contains(t, page, "ann is banned everywhere.")

	// The API's message reaches the person on failure.
	_, _ = b.post("/admin/rules/blacklist/add", url.Values{"csrf": {token}, "patterns": {"(unclosed"}})
	_, page = b.get("/admin/rules")
	require.Contains(t, page, "flash-error")
	require.Contains(t, page, "(unclosed")

	// Creating an admin shows its token once, which works on the API.
	res, page = b.post("/admin/admins", url.Values{"csrf": {token}, "name": {"second"}, "password": {"second's password"}, "password2": {"second's password"}})
	require.Equal(t, http.StatusOK, res.StatusCode)
	m := regexp.MustCompile(`id="token-value" class="copy" value="([^"]+)"`).FindStringSubmatch(page)
	require.NotNil(t, m, page)
	a, err := p.svc.Authenticate(context.Background(), m[1])
	require.NoError(t, err)
	require.Equal(t, "second", a.Name)
	_, page = b.get("/admin/admins")
	require.NotContains(t, page, m[1], "shown only once")
	res, _ = p.browser("10.4.0.2").signIn("second", "second's password")
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
}

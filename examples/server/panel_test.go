package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/store/sqlite"
)

// cliWithInput runs one command with stdin.
func cliWithInput(ctx context.Context, stdin string, args ...string) (string, string, error) {
	var stdout, stderr bytes.Buffer
	c := &cli{env: envOf(nil), stdin: strings.NewReader(stdin), stdout: &stdout, stderr: &stderr}
	err := c.run(ctx, args)
	return stdout.String(), stderr.String(), err
}

func TestAdminPasswordCommands(t *testing.T) {
	t.Parallel()
	requireSQLite(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "chat.db")
	store := "sqlite:" + path

	// -password-stdin: the token alone on stdout, the password from stdin.
	out, errOut, err := cliWithInput(ctx, "first password 1\nignored\n", "-store", store, "admin", "create", "ops", "-password-stdin")
	require.NoError(t, err, errOut)
	token := strings.TrimSuffix(out, "\n")
	require.Regexp(t, `^chat_[A-Za-z0-9_-]{40,}$`, token)
	// Without the flag, create reads nothing.
	out, _, err = cliWithInput(ctx, "", "-store", store, "admin", "create", "plain")
	require.NoError(t, err)
	require.Regexp(t, `^chat_`, out)

	signIn := func(name, pw string) error {
		st, err := sqlite.Open(ctx, path, nil)
		require.NoError(t, err)
		defer st.Close()
		svc, err := chat.New(ctx, st, chat.Config{})
		require.NoError(t, err)
		_, _, _, err = svc.SignInAdmin(ctx, name, pw)
		return err
	}
	require.NoError(t, signIn("ops", "first password 1"))
	require.Equal(t, chat.CodeUnauthorized, chat.ErrorCode(signIn("ops", "ignored")))
	require.Equal(t, chat.CodeUnauthorized, chat.ErrorCode(signIn("plain", "")), "no password yet")

	_, errOut, err = cliWithInput(ctx, "second password 2\r\n", "-store", store, "admin", "passwd", "plain")
	require.NoError(t, err, errOut)
	require.Contains(t, errOut, "/admin/")
	require.NoError(t, signIn("plain", "second password 2"))

	_, _, err = cliWithInput(ctx, "short\n", "-store", store, "admin", "passwd", "plain")
	require.Equal(t, chat.CodeBadRequest, chat.ErrorCode(err))
	require.Contains(t, err.Error(), "at least 10 characters")
	require.NoError(t, signIn("plain", "second password 2"), "a refused password changes nothing")
	_, _, err = cliWithInput(ctx, "", "-store", store, "admin", "passwd", "plain")
	require.ErrorContains(t, err, "no password on standard input")
	_, _, err = cliWithInput(ctx, "a good password\n", "-store", store, "admin", "passwd", "nobody")
	require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err))
	_, _, err = cliWithInput(ctx, "a good password\n", "-store", store, "admin", "passwd")
	var u usageError
	require.ErrorAs(t, err, &u)
}

func TestPanelFlags(t *testing.T) {
	t.Parallel()
	c, err := parseConfig(t, nil, nil)
	require.NoError(t, err)
	require.True(t, c.panel, "the panel is on by default")
	require.Equal(t, 30*time.Minute, c.panelIdle)
	c, err = parseConfig(t, []string{"-admin-panel=false", "-admin-panel-idle", "5m"}, nil)
	require.NoError(t, err)
	require.False(t, c.panel)
	require.Equal(t, 5*time.Minute, c.panelIdle)
	c, err = parseConfig(t, nil, map[string]string{"CHAT_ADMIN_PANEL": "false"})
	require.NoError(t, err)
	require.False(t, c.panel)

	on := start(t, "-store", "memory")
	res, err := http.Get(on.base + "/admin/signin")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.Contains(t, on.stderr.String(), "admin passwd admin", "the first start says how to sign in")
	off := start(t, "-store", "memory", "-admin-panel=false")
	res, err = http.Get(off.base + "/admin/signin")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 404, res.StatusCode)
}

// apiAs calls the API with a bearer token and a JSON body.
func apiAs(t *testing.T, s *server, token, method, path string, body any) map[string]any {
	t.Helper()
	code, out := s.call(t, token, method, path, body)
	require.Equal(t, 200, code, "%s %s: %v", method, path, out)
	return out
}

// uploadImage posts an image message as the token's user.
func uploadImage(t *testing.T, s *server, token, channelID, path string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	require.NoError(t, mw.WriteField("channelId", channelID))
	require.NoError(t, mw.WriteField("caption", "a sunset"))
	fw, err := mw.CreateFormFile("file", filepath.Base(path))
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	_, err = fw.Write(b)
	require.NoError(t, err)
	require.NoError(t, mw.Close())
	req, err := http.NewRequest("POST", s.base+"/api/v2/messages/images", &buf)
	require.NoError(t, err)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	require.Equal(t, 200, res.StatusCode, "%s", out)
}

// settle waits until the JavaScript expression is true, evaluating it
// again through navigations (a submitted form loads a new page, which
// ends an evaluation in flight with an error).
func settle(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		deadline := time.Now().Add(60 * time.Second)
		for {
			ok, err := chromedp.Evaluate[bool](expr)(ctx, t)
			if err == nil && ok {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("still false: %s (last error: %v)", expr, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
}

// press clicks the element sel selects (a submit button or a link) as a
// person would, and waits until the page it leads to has loaded.
func press(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := settle(`(function () { var e = document.querySelector(`+jsString(sel)+`); if (!e) return false;
  window.leaving = true; setTimeout(function () { e.click(); }, 0); return true; })()`)(ctx, t); err != nil {
			return err
		}
		_, err := settle(`window.leaving === undefined && document.readyState === 'complete'`)(ctx, t)
		return err
	})
}

// allLabelled is true when every visible form control of the page has a
// label (hidden inputs carry tokens and ids only).
const allLabelled = `Array.from(document.querySelectorAll('input:not([type=hidden]), select, textarea')).every(function (e) { return e.labels && e.labels.length > 0; })`

// flashShows is true when the page's flash message contains text.
func flashShows(text string) string {
	return `(function () { var f = document.getElementById('flash'); return !!f && f.textContent.indexOf(` + jsString(text) + `) >= 0; })()`
}

// screenshot saves the tab's page as docs/NAME.png when CHAT_SCREENSHOTS
// is set (so that ordinary runs leave the tree alone).
func screenshot(t *testing.T, tb *tab, name string, width, height int64) {
	t.Helper()
	if os.Getenv("CHAT_SCREENSHOTS") == "" {
		return
	}
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.EmulateViewport(width, height))
	require.NoError(t, err)
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	_, err = chromedp.Run(ctx, chromedp.EmulateViewport(1200, 900))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join("..", "..", "docs", name+".png"), shot, 0o644))
}

func TestPanelInBrowser(t *testing.T) {
	chromium := findChromium(t)
	requireSQLite(t)
	ctx := context.Background()
	dir := t.TempDir()
	store := "sqlite:" + filepath.Join(dir, "chat.db")
	const opsPassword = "ops password 123"
	out, errOut, err := cliWithInput(ctx, opsPassword+"\n", "-store", store, "admin", "create", "ops", "-password-stdin")
	require.NoError(t, err, errOut)
	opsToken := strings.TrimSpace(out)

	// A webhook receiver on this machine.
	var received atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)

	s := start(t, "-store", store, "-allow-private-webhooks")
	panelURL := s.base + "/admin/"
	imgPath := filepath.Join(dir, "sunset.png")
	writePNG(t, imgPath, 80, 60)

	browser := newBrowser(t, chromium)
	ops := newTab(t, browser, "ops")

	// Sign in.
	ops.run(t, "sign in",
		chromedp.Navigate(panelURL),
		chromedp.WaitVisible(css(`#signin-name`)),
		settle(flashShows("Please sign in.")),
		settle(allLabelled),
		chromedp.SendKeys(css(`#signin-name`), "ops"),
		chromedp.SendKeys(css(`#signin-password`), opsPassword),
		press(`#signin-form button`),
		chromedp.WaitVisible(css(`#admin-name`)),
		settle(`document.getElementById('admin-name').textContent === "ops"`),
		settle(flashShows("Welcome, ops.")),
		settle(`document.querySelector('h1').textContent === "Dashboard"`),
		settle(allLabelled),
	)

	// Register a webhook first, so that what follows is delivered to it.
	ops.run(t, "register a webhook",
		press(`nav a[href="/admin/webhooks"]`),
		chromedp.WaitVisible(css(`#wh-url`)),
		chromedp.SendKeys(css(`#wh-url`), hook.URL+"/events"),
		press(`#webhook-create-form button`),
		chromedp.WaitVisible(css(`#secret-value`)),
		settle(flashShows("Webhook registered")),
		settle(`document.getElementById('secret-value').value.indexOf('whsec_') === 0`),
		present(`#webhook-list li a.url`),
		settle(allLabelled),
	)

	// Create a channel with two members.
	ops.run(t, "create a channel",
		press(`nav a[href="/admin/channels"]`),
		chromedp.WaitVisible(css(`#c-id`)),
		chromedp.SendKeys(css(`#c-id`), "lobby"),
		chromedp.SendKeys(css(`#c-name`), "The <Lobby>"),
		chromedp.SendKeys(css(`#c-members`), "alice, bob"),
		chromedp.SendKeys(css(`#c-tags`), "public"),
		press(`#channel-create-form button`),
		settle(flashShows("Channel lobby created.")),
		settle(`document.querySelector('h1').textContent === "The <Lobby>"`),
		present(`#member-list li[data-user-id="alice"]`),
		present(`#member-list li[data-user-id="bob"]`),
		settle(allLabelled),
	)

	// Post through the panel as the admin's user.
	ops.run(t, "post a message",
		chromedp.SendKeys(css(`#post-text`), "Welcome to the lobby"),
		press(`#post-form button`),
		settle(flashShows("Message sent as ops.")),
		settle(`Array.from(document.querySelectorAll('#messages li.message .text')).some(function (p) { return p.textContent === "Welcome to the lobby"; })`),
	)

	// The page is live from the event stream (not polling); a marker on
	// the window tells that what follows arrives without a reload.
	ops.run(t, "the channel page is live",
		settle(`document.getElementById('messages').getAttribute('data-mode') === 'stream'`),
		settle(`document.getElementById('live-state').getAttribute('data-state') === 'live' && document.getElementById('live-state').textContent === 'live'`),
		chromedp.Evaluate[chromedp.Void](`window.sameLivePage = true`),
	)

	// Alice writes through the API; the open page shows it without a
	// reload (pushed by the event stream), and her image inline through
	// its signed link.
	alice := apiAs(t, s, opsToken, "POST", "/api/v2/users/alice/token", map[string]any{"ttl": 3600})
	aliceToken := alice["token"].(string)
	apiAs(t, s, aliceToken, "POST", "/api/v2/message", map[string]any{
		"channelId": "lobby", "type": "text", "data": map[string]any{"text": "hi, alice here <b>bold?</b>"}})
	uploadImage(t, s, aliceToken, "lobby", imgPath)
	aliceMsg := `#messages li.message[data-message-id]`
	ops.run(t, "see alice's messages live",
		settle(`Array.from(document.querySelectorAll('#messages li.message .text')).some(function (p) { return p.textContent === "hi, alice here <b>bold?</b>"; })`),
		settle(`document.querySelectorAll('#messages b').length === 0`),
		settle(`(function () { var i = document.querySelector('#messages li.message img'); return !!i && i.complete && i.naturalWidth === 80; })()`),
		settle(`window.sameLivePage === true`),
		settle(`document.getElementById('messages').getAttribute('data-mode') === 'stream'`),
		settle(`document.getElementById('live-state').getAttribute('data-state') === 'live'`),
	)
	src := evaluate[string](t, ops, `document.querySelector('#messages li.message img').getAttribute('src')`)
	require.Contains(t, src, "/api/v2/messages/")
	require.Contains(t, src, "sig=")
	screenshot(t, ops, "panel-channel", 1200, 900)

	// Delete alice's text message.
	aliceText := evaluate[string](t, ops, `Array.from(document.querySelectorAll('`+aliceMsg+`')).filter(function (li) {
  var p = li.querySelector('.text'); return p && p.textContent === "hi, alice here <b>bold?</b>"; })[0].getAttribute('data-message-id')`)
	ops.run(t, "delete a message",
		press(`#m-`+aliceText+` button.delete`),
		settle(flashShows("Message deleted.")),
		settle(`document.querySelector('#m-`+aliceText+`').classList.contains('deleted')`),
	)
	code, got := s.call(t, opsToken, "GET", "/api/v2/message/"+aliceText, nil)
	require.Equal(t, 200, code)
	require.Equal(t, true, got["messages"].([]any)[0].(map[string]any)["isDeleted"])

	// Ban bob from the channel.
	ops.run(t, "ban a member",
		press(`#member-list li[data-user-id="bob"] button.ban`),
		settle(flashShows("bob banned from the channel")),
		settle(`document.querySelector('#member-list li[data-user-id="bob"] .state').textContent.indexOf('banned') === 0`),
		present(`#member-list li[data-user-id="bob"] button.unban`),
	)

	// Add a blacklist word, test a text, and see a message refused.
	ops.run(t, "blacklist a word",
		press(`nav a[href="/admin/rules"]`),
		chromedp.WaitVisible(css(`#b-patterns`)),
		chromedp.SendKeys(css(`#b-patterns`), "darn"),
		chromedp.Click(css(`#b-exact`)),
		press(`#blacklist-add-form button`),
		settle(flashShows("Added to the blacklist.")),
		present(`#blacklist-entries li[data-rule-id="darn"]`),
		chromedp.SendKeys(css(`#t-user`), "alice"),
		chromedp.SendKeys(css(`#t-text`), "oh DARN it"),
		press(`#rule-test-form button`),
		settle(`document.getElementById('rule-verdict').textContent.indexOf('Refused: text contains a blacklisted word (rule "darn")') === 0`),
		settle(`document.getElementById('rule-named').textContent.indexOf('blacklist rule darn') >= 0`),
		settle(allLabelled),
	)
	// The dry run with a channel: alice may post there, bob is banned.
	ops.run(t, "dry runs in a channel",
		chromedp.SetValue(css(`#t-channel`), "lobby"),
		chromedp.SetValue(css(`#t-text`), "hello all"),
		press(`#rule-test-form button`),
		settle(`document.getElementById('rule-verdict').textContent === 'Allowed: alice could post this message in lobby.'`),
		chromedp.SetValue(css(`#t-user`), "bob"),
		press(`#rule-test-form button`),
		settle(`document.getElementById('rule-verdict').textContent.indexOf('Refused: ') === 0`),
		settle(`document.getElementById('t-user').value === 'bob' && document.getElementById('t-channel').value === 'lobby'`),
	)
	ops.run(t, "a message with the word is refused",
		chromedp.Navigate(panelURL+"channels/lobby"),
		chromedp.WaitVisible(css(`#post-text`)),
		chromedp.SendKeys(css(`#post-text`), "darn it"),
		press(`#post-form button`),
		settle(`document.querySelector('#flash .flash-error') !== null`),
		settle(flashShows(`text contains a blacklisted word (rule "darn")`)),
	)
	code, _ = s.call(t, aliceToken, "POST", "/api/v2/message", map[string]any{"channelId": "lobby", "type": "text", "data": map[string]any{"text": "darn"}})
	require.Equal(t, 403, code, "the API refuses it too")

	// The audit log shows the ban and the blacklist entry, done by ops.
	ops.run(t, "read the audit log",
		press(`nav a[href="/admin/audit"]`),
		chromedp.WaitVisible(css(`#au-action`)),
		present(`#audit-list tr[data-action="channel.banUsers"][data-target-id="bob"][data-actor-id="ops"]`),
		present(`#audit-list tr[data-action="blacklist.add"][data-target-id="darn"][data-actor-id="ops"]`),
		settle(`document.querySelector('#audit-list tr[data-action="blacklist.add"] td.actor a').textContent === 'ops'`),
		settle(allLabelled),
		chromedp.SetValue(css(`#au-action`), "channel.banUsers"),
		press(`#audit-filter-form button`),
		present(`#audit-list tr[data-action="channel.banUsers"]`),
		settle(`Array.from(document.querySelectorAll('#audit-list tbody tr')).every(function (r) { return r.getAttribute('data-action') === 'channel.banUsers'; })`),
		settle(`document.querySelector('#audit-list tr td.target a').getAttribute('href') === '/admin/users/bob'`),
	)

	// Delete alice's messages in the lobby: a page says what will happen,
	// the confirmed form does it and says how many.
	apiAs(t, s, aliceToken, "POST", "/api/v2/message", map[string]any{"channelId": "lobby", "type": "text", "data": map[string]any{"text": "one more"}})
	ops.run(t, "delete a user's messages",
		chromedp.Navigate(panelURL+"users/alice"),
		chromedp.WaitVisible(css(`#pg-channel`)),
		settle(allLabelled),
		chromedp.SendKeys(css(`#pg-channel`), "lobby"),
		press(`#purge-form button`),
		chromedp.WaitVisible(css(`#purge-summary`)),
		settle(`document.getElementById('purge-summary').textContent.indexOf('in the channel lobby') >= 0`),
		settle(allLabelled),
		chromedp.Click(css(`#purge-confirm`)),
		press(`#purge-confirm-form button`),
		settle(flashShows("Deleted 2 messages of alice.")),
		press(`a[href="/admin/audit?targetId=alice"]`),
		present(`#audit-list tr[data-action="user.purgeMessages"][data-actor-id="ops"]`),
		settle(`document.querySelector('#audit-list tr[data-action="user.purgeMessages"] dl.details').textContent.indexOf('deleted2') >= 0`),
	)
	// Alice's phone registers for pushes; her page lists it (never its
	// token) and deletes it.
	dev := apiAs(t, s, aliceToken, "POST", "/api/v2/users/alice/devices",
		map[string]any{"provider": "firebase", "token": "fcm-alice-phone"})["devices"].([]any)[0].(map[string]any)["deviceId"].(string)
	ops.run(t, "a user's devices",
		chromedp.Navigate(panelURL+"users/alice"),
		present(`#devices-table tr[data-device="`+dev+`"]`),
		settle(allLabelled),
		settle(`document.body.textContent.indexOf('fcm-alice-phone') < 0`),
		press(`#devices-table tr[data-device="`+dev+`"] button`),
		settle(flashShows("Device "+dev+" deleted.")),
		present(`#no-devices`),
	)
	ops.run(t, "the whole audit log", chromedp.Navigate(panelURL+"audit"), present(`#audit-list tr[data-action="user.purgeMessages"]`))
	screenshot(t, ops, "panel-audit", 1200, 900)
	purged := apiAs(t, s, opsToken, "GET", "/api/v2/audit?action=user.purgeMessages", nil)["audit"].([]any)
	require.Len(t, purged, 1)
	require.Equal(t, "ops", purged[0].(map[string]any)["actorId"])
	require.EqualValues(t, 2, purged[0].(map[string]any)["details"].(map[string]any)["deleted"])

	// The webhook's delivery log shows the deliveries.
	ops.run(t, "read the delivery log",
		chromedp.Navigate(panelURL+"webhooks"),
		press(`#webhook-list li a.url`),
		chromedp.WaitVisible(css(`h1`)),
		settle(`(function () {
  var rows = Array.from(document.querySelectorAll('#delivery-list tbody tr'));
  var ok = rows.some(function (r) { return r.querySelector('code').textContent === 'message.didCreate' && r.querySelector('.state').textContent === 'delivered'; });
  if (!ok) { window.location.reload(); }
  return ok;
})()`),
	)
	require.Positive(t, received.Load())

	// Reports: carol reports alice's message and alice; the review queue
	// shows both, deletes the message once confirmed and dismisses the
	// other; the resolutions are audited as ops.
	apiAs(t, s, opsToken, "POST", "/api/v2/channel/lobby/users", map[string]any{"userIds": []string{"carol"}})
	carolToken := apiAs(t, s, opsToken, "POST", "/api/v2/users/carol/token", map[string]any{"ttl": 3600})["token"].(string)
	pill := apiAs(t, s, aliceToken, "POST", "/api/v2/message", map[string]any{"channelId": "lobby", "type": "text",
		"data": map[string]any{"text": "cheap pills"}})["messages"].([]any)[0].(map[string]any)["messageId"].(string)
	msgRep := apiAs(t, s, carolToken, "POST", "/api/v2/reports", map[string]any{"targetType": "message", "targetId": pill,
		"reason": "spam", "note": "<b>again</b>"})["reports"].([]any)[0].(map[string]any)["reportId"].(string)
	userRep := apiAs(t, s, carolToken, "POST", "/api/v2/reports", map[string]any{"targetType": "user", "targetId": "alice",
		"reason": "abuse"})["reports"].([]any)[0].(map[string]any)["reportId"].(string)
	mrow, urow := `#report-list li[data-report-id="`+msgRep+`"]`, `#report-list li[data-report-id="`+userRep+`"]`
	ops.run(t, "resolve reports in the review queue",
		press(`nav a[href="/admin/reports"]`),
		chromedp.WaitVisible(css(`#reports-help`)),
		present(mrow),
		present(urow),
		settle(allLabelled),
		settle(`document.querySelector(`+jsString(mrow+` blockquote.note`)+`).textContent === '<b>again</b>'`),
		settle(`document.querySelector(`+jsString(mrow+` q.text`)+`).textContent === 'cheap pills'`),
		chromedp.Click(css(mrow+` .resolve-delete input[name=confirm]`)),
		press(mrow+` .resolve-delete button`),
		settle(flashShows("the message is deleted")),
		settle(`document.querySelector(`+jsString(mrow)+`) === null`),
		press(urow+` .resolve-dismiss button`),
		settle(flashShows("Report dismissed.")),
		chromedp.WaitVisible(css(`#reports-empty`)),
		chromedp.SetValue(css(`#rp-state`), "resolved"),
		press(`#report-filter-form button`),
		present(mrow+`[data-state="resolved"]`),
		present(urow+`[data-state="resolved"]`),
		settle(allLabelled),
	)
	screenshot(t, ops, "panel-reports", 1200, 900)
	require.Equal(t, true, apiAs(t, s, opsToken, "GET", "/api/v2/message/"+pill, nil)["messages"].([]any)[0].(map[string]any)["isDeleted"])
	resolutions := apiAs(t, s, opsToken, "GET", "/api/v2/audit?action=report.resolve", nil)["audit"].([]any)
	require.Len(t, resolutions, 2)
	require.Equal(t, "ops", resolutions[0].(map[string]any)["actorId"])

	// Users: search, screenshots.
	ops.run(t, "find a user",
		chromedp.Navigate(panelURL+"users"),
		chromedp.WaitVisible(css(`#u-search`)),
		chromedp.SendKeys(css(`#u-search`), "ali"),
		press(`#user-search-form button`),
		present(`#user-list tr[data-user-id="alice"]`),
		settle(`document.querySelector('#user-list tr[data-user-id="bob"]') === null`),
		settle(allLabelled),
	)
	ops.run(t, "all users", chromedp.Navigate(panelURL+"users"), present(`#user-list tr[data-user-id="bob"]`))
	screenshot(t, ops, "panel-users", 1200, 800)
	ops.run(t, "channels", chromedp.Navigate(panelURL+"channels"), present(`#channel-list tr[data-channel-id="lobby"]`), settle(allLabelled))
	ops.run(t, "find a channel by a word of its name",
		chromedp.SendKeys(css(`#f-search`), "LOB"),
		press(`#channel-filter-form button`),
		present(`#channel-list tr[data-channel-id="lobby"]`),
		settle(`document.getElementById('f-search').value === 'LOB'`),
		chromedp.Navigate(panelURL+"channels?search=nothing-like-it"),
		settle(`document.querySelector('#channel-list') === null && document.querySelector('main').textContent.indexOf('No channel matches.') >= 0`),
		settle(allLabelled),
	)
	ops.run(t, "dashboard shows the activity", chromedp.Navigate(panelURL), settle(`Array.from(document.querySelectorAll('main table code')).some(function (c) { return c.textContent === 'message.didCreate'; })`))
	ops.run(t, "roles and reactions pages", chromedp.Navigate(panelURL+"roles"), settle(allLabelled), chromedp.Navigate(panelURL+"reactions"), settle(allLabelled))
	ops.run(t, "the channel list again", chromedp.Navigate(panelURL+"channels"), present(`#channel-list tr[data-channel-id="lobby"]`))
	screenshot(t, ops, "panel-channels", 1200, 900)
	ops.run(t, "a channel on a phone", chromedp.Navigate(panelURL+"channels/lobby"), present(`#messages li.message`))
	screenshot(t, ops, "panel-phone", 390, 844)

	// Create a second admin; its token is shown once and works.
	ops.run(t, "create an admin",
		chromedp.Navigate(panelURL+"admins"),
		chromedp.WaitVisible(css(`#a-name`)),
		chromedp.SendKeys(css(`#a-name`), "second"),
		chromedp.SendKeys(css(`#a-pw`), "second's password"),
		chromedp.SendKeys(css(`#a-pw2`), "second's password"),
		press(`#admin-create-form button`),
		chromedp.WaitVisible(css(`#token-value`)),
		settle(flashShows("Admin second created")),
		present(`#admin-list li[data-admin="second"]`),
		settle(allLabelled),
	)
	secondToken := evaluate[string](t, ops, `document.getElementById('token-value').value`)
	apiAs(t, s, secondToken, "GET", "/api/v2/roles", nil)

	// Sign out, and sign in as the new admin.
	ops.run(t, "sign out and in as the new admin",
		press(`.signout button`),
		chromedp.WaitVisible(css(`#signin-name`)),
		settle(flashShows("You are signed out.")),
		chromedp.SendKeys(css(`#signin-name`), "second"),
		chromedp.SendKeys(css(`#signin-password`), "second's password"),
		press(`#signin-form button`),
		chromedp.WaitVisible(css(`#admin-name`)),
		settle(`document.getElementById('admin-name').textContent === "second"`),
	)
	ops.noErrors(t)
}

// TestPanelMountKeepsEscapedIDs checks that an id with a slash reaches the
// panel whole through the server's router and prefix stripping.
func TestPanelMountKeepsEscapedIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, err := chat.New(ctx, memory.New(), chat.Config{AdminPasswordCost: bcrypt.MinCost})
	require.NoError(t, err)
	a, _, err := svc.CreateAdminWithPassword(ctx, "", "ops", "", "ops password 123")
	require.NoError(t, err)
	_, err = svc.CreateChannel(ctx, a.UserID, chat.CreateChannelInput{ChannelID: "team/one", Type: chat.ChannelTypeStandard})
	require.NoError(t, err)
	r := chi.NewRouter()
	cfg := defaults
	mountPanel(r, svc, nil, &cfg, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar}

	res, err := c.Get(srv.URL + "/admin/signin")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := regexp.MustCompile(`name="signin" value="([^"]+)"`).FindSubmatch(body)
	require.NotNil(t, m)
	res, err = c.PostForm(srv.URL+"/admin/signin", url.Values{"signin": {string(m[1])}, "name": {"ops"}, "password": {"ops password 123"}})
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	res, err = c.Get(srv.URL + "/admin/channels/team%2Fone")
	require.NoError(t, err)
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode, "%s", body)
	require.Contains(t, string(body), `<code id="channel-id">team/one</code>`)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err = noRedirect.Get(srv.URL + "/admin")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, "/admin/", res.Header.Get("Location"))
}

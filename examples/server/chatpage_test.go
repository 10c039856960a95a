package main

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// findChromium returns the path of a Chromium binary. Without one the test
// is skipped, unless CHAT_REQUIRE_BROWSER is set (as in CI), where it fails.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CHAT_REQUIRE_BROWSER") != "" {
		t.Fatal("no chromium binary on PATH and CHAT_REQUIRE_BROWSER is set: install Debian's chromium package (apt-get install -y chromium)")
	}
	t.Skip("skipping the browser test: no chromium binary on PATH (apt-get install -y chromium; CHAT_REQUIRE_BROWSER=1 makes this a failure)")
	return ""
}

// newBrowser starts one headless Chromium with a fresh user data directory
// and returns its context; every tab made from it with newTab is a
// separate browser context (its own storage, like a private window). Its
// TMPDIR is the test's too: Chromium puts its singleton socket in a
// directory there, which it removes only on a clean exit, and the test
// kills it.
func newBrowser(t *testing.T, chromium string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Env("TMPDIR=" + t.TempDir()),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1200, 900),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	// Start the browser now, so a failure to launch is reported here.
	require.NoError(t, chromedp.Do(browser), "starting %s", chromium)
	return browser
}

// tab is one browser context with one page, recording every JavaScript
// exception, console error and CSP violation the page causes.
type tab struct {
	name string
	ctx  context.Context
	mu   sync.Mutex
	errs []string
	// netOK, while set, lets errors of the browser's network log pass
	// (connections refused while a server restarts); exceptions, console
	// errors of the page and CSP violations are still recorded.
	netOK bool
}

// reportViolations turns every CSP violation into a console error, which
// the tab records (Chromium also logs them; this makes sure).
const reportViolations = `document.addEventListener('securitypolicyviolation', function (e) {
  console.error('CSP violation: ' + e.violatedDirective + ' blocked ' + e.blockedURI);
});`

func newTab(t *testing.T, browser context.Context, name string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	tb := &tab{name: name, ctx: ctx}
	// Console subscribes when it returns: nothing the page logs from now
	// on is missed.
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return // the tab closed
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException {
				tb.record(m)
			}
		}
	}()
	require.NoError(t, chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: reportViolations})
		return err
	})))
	return tb
}

func (tb *tab) record(m chromedp.ConsoleMessage) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if tb.netOK && m.Type == chromedp.ConsoleError && m.Source == "network" {
		return
	}
	tb.errs = append(tb.errs, fmt.Sprintf("%s: %s %s (source %q)", m.Type, m.Text, m.URL, m.Source))
}

// allowNetworkErrors sets whether errors of the network log are let pass.
func (tb *tab) allowNetworkErrors(ok bool) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.netOK = ok
}

// run runs actions in the tab within a generous time limit, then fails
// the test on any error the page reported so far.
func (tb *tab) run(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 90*time.Second)
	defer cancel()
	err := chromedp.Do(ctx, actions...)
	tb.noErrors(t)
	if err != nil {
		// What the page shows, to tell why.
		dctx, dcancel := context.WithTimeout(tb.ctx, 10*time.Second)
		defer dcancel()
		shown, _ := chromedp.Run(dctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("%s: %s: %v\nthe page shows:\n%s", tb.name, what, err, shown)
	}
}

func (tb *tab) noErrors(t *testing.T) {
	t.Helper()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	require.Empty(t, tb.errs, "%s: the page reported errors", tb.name)
}

// poll waits until the JavaScript expression is true in the page.
func poll(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[bool](expr, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second))(ctx, t)
		return err
	})
}

// css selects the first element matching a CSS selector.
func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// present waits until an element sel selects exists (see clickLive for
// why list items are not waited on with chromedp.WaitVisible).
func present(sel string) chromedp.Action[chromedp.Void] {
	return poll(`document.querySelector(` + jsString(sel) + `) !== null`)
}

// clickLive clicks the element sel selects once it exists, finding and
// clicking it in one JavaScript turn. The page re-renders its channel
// lists on every refresh, so a node found by one DevTools call may be gone
// by the next (chromedp.Click on a list item raced with that).
func clickLive(sel string) chromedp.Action[chromedp.Void] {
	return poll(`(() => { const e = document.querySelector(` + jsString(sel) + `); if (!e) return false; e.click(); return true; })()`)
}

// evaluate returns the value of a JavaScript expression in the tab.
func evaluate[T any](t *testing.T, tb *tab, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, "%s: %s", tb.name, expr)
	return v
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == '<' || r == '>':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// messageShown is a JavaScript expression true when a message of author
// with exactly text is in the open channel.
func messageShown(author, text string) string {
	return fmt.Sprintf(`Array.from(document.querySelectorAll('#messages li.message')).some(function (li) {
  var a = li.querySelector('.author'), x = li.querySelector('.text');
  return a && x && a.textContent === %s && x.textContent === %s;
})`, jsString(author), jsString(text))
}

// writePNG writes a small opaque PNG for the upload.
func writePNG(t *testing.T, path string, w, h int) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(x * 255 / w), uint8(y * 255 / h), 160, 255})
		}
	}
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, png.Encode(f, img))
	require.NoError(t, f.Close())
}

func TestChatPageTwoUsersInBrowser(t *testing.T) {
	chromium := findChromium(t)
	dir := t.TempDir()
	s := start(t, "-store", "memory", "-unsafe-dev-sign-in")
	pageURL := s.base + "/chat/"

	imgPath := filepath.Join(dir, "sunset.png")
	writePNG(t, imgPath, 64, 48)

	browser := newBrowser(t, chromium)
	alice := newTab(t, browser, "alice")
	bob := newTab(t, browser, "bob")

	const (
		channelID   = "meeting"
		channelName = "Meeting <b>room</b>"
		aliceText   = `hello from alice <img src=x onerror="console.error('injected')"> & <script>alert(1)</script>`
		bobText     = "hi alice, bob here"
	)
	chanItem := `#my-channels li[data-channel-id="` + channelID + `"]`

	signIn := func(tb *tab, userID string) {
		t.Helper()
		tb.run(t, "sign in",
			chromedp.Navigate(pageURL),
			chromedp.WaitVisible(css(`#dev-user`)),
			chromedp.SendKeys(css(`#dev-user`), userID),
			chromedp.Click(css(`#dev-signin-form button`)),
			chromedp.WaitVisible(css(`#app`)),
			poll(`document.getElementById('me')?.textContent === `+jsString(userID)),
		)
	}
	// Alice signs in through the development sign-in; bob pastes a token
	// that the host application minted with the admin API.
	signIn(alice, "alice")
	code, minted := s.call(t, s.token(t), "POST", "/api/v2/users/bob/token", map[string]any{"ttl": 3600})
	require.Equal(t, 200, code, "%v", minted)
	bobToken, _ := minted["token"].(string)
	require.NotEmpty(t, bobToken)
	bob.run(t, "sign in with a token",
		chromedp.Navigate(pageURL),
		chromedp.WaitVisible(css(`#token-input`)),
		chromedp.SetValue(css(`#token-input`), bobToken),
		chromedp.Click(css(`#token-signin-form button`)),
		chromedp.WaitVisible(css(`#app`)),
		poll(`document.getElementById('me')?.textContent === "bob"`),
	)

	// Alice creates the channel (it opens) and writes into it.
	alice.run(t, "create a channel and send",
		chromedp.SendKeys(css(`#create-id`), channelID),
		chromedp.SendKeys(css(`#create-name`), channelName),
		chromedp.Click(css(`#create-form button`)),
		present(chanItem),
		chromedp.WaitVisible(css(`#composer`)),
		poll(`document.getElementById('channel-title')?.textContent === `+jsString(channelName)),
		chromedp.SendKeys(css(`#send-text`), aliceText),
		chromedp.Click(css(`#send-form button`)),
		poll(messageShown("alice", aliceText)),
	)

	// Bob finds it among the public channels (no event tells about
	// channels of others: he refreshes the list) and joins; before he
	// opens it, it shows one unread message.
	joinButton := `#public-channels li[data-channel-id="` + channelID + `"] button.join`
	bob.run(t, "join and see the unread count",
		clickLive(`#public-refresh`),
		present(joinButton),
		poll(`document.querySelector('#public-channels li[data-channel-id="`+channelID+`"] .name')?.textContent === `+jsString(channelName)),
		clickLive(joinButton),
		present(chanItem+` .unread`),
		poll(`document.querySelector('`+chanItem+` .unread')?.textContent === "1"`),
	)

	// Opening the channel shows alice's message, as text, and marks it
	// read: after a reload (the server's state) the count is gone.
	bob.run(t, "open the channel",
		clickLive(chanItem+` button.name`),
		poll(messageShown("alice", aliceText)),
		poll(`document.querySelectorAll('#messages img, #messages script, #messages b').length === 0`),
		poll(`document.querySelector('`+chanItem+` .unread') === null`),
	)
	bob.run(t, "reload: the channel is read",
		chromedp.Reload(),
		present(chanItem),
		// The list came from the server after the reload (nothing is open).
		poll(`document.getElementById('channel-title')?.textContent === "Pick a channel"`),
		poll(`document.querySelector('`+chanItem+`') !== null && document.querySelector('`+chanItem+` .unread') === null`),
	)

	// Alice mentions bob while he has no channel open: the channel shows
	// one unread mention beside its unread count, from the stream, and
	// again from the server after a reload. Opening the channel
	// highlights the message that mentions him and reads the mention.
	code, minted = s.call(t, s.token(t), "POST", "/api/v2/users/alice/token", map[string]any{"ttl": 3600})
	require.Equal(t, 200, code, "%v", minted)
	aliceToken, _ := minted["token"].(string)
	const mentionText = "@bob, the agenda?"
	// freshLive reloads bob's page and waits for the new document's stream
	// (a marker set before the reload tells the old document apart).
	freshLive := []chromedp.Action[chromedp.Void]{
		chromedp.Evaluate[chromedp.Void](`window.beforeReload = 1`),
		chromedp.Reload(),
		poll(`window.beforeReload === undefined && document.getElementById('connection').dataset.state === "live"`),
	}
	bob.run(t, "reload, stream live", freshLive...)
	code, posted := s.call(t, aliceToken, "POST", "/api/v2/message", map[string]any{"channelId": channelID, "type": "text", "data": map[string]any{"text": mentionText}})
	require.Equal(t, 200, code, "%v", posted)
	mentionBadge := chanItem + ` .mention-count`
	bob.run(t, "see the mention count",
		present(mentionBadge),
		poll(`document.querySelector('`+mentionBadge+`')?.textContent === "@1"`),
		poll(`document.querySelector('`+chanItem+` .unread')?.textContent === "1"`),
	)
	bob.run(t, "reload: the mention count from the server", append(freshLive,
		present(mentionBadge),
		poll(`document.querySelector('`+mentionBadge+`')?.textContent === "@1"`),
	)...)
	highlighted := `Array.from(document.querySelectorAll('#messages li.message.mentions-me .text')).map(function (x) { return x.textContent; })`
	bob.run(t, "open: the mention is highlighted and read",
		clickLive(chanItem+` button.name`),
		poll(messageShown("alice", mentionText)),
		poll(highlighted+`.length === 1`),
		poll(`document.querySelector('`+mentionBadge+`') === null`),
	)
	require.Equal(t, []string{mentionText}, evaluate[[]string](t, bob, highlighted), "only the message that mentions bob")
	require.Equal(t, "rgb(217, 164, 0)", evaluate[string](t, bob,
		`getComputedStyle(document.querySelector('#messages li.message.mentions-me')).borderLeftColor`), "styled as a mention")
	alice.run(t, "see her message", poll(messageShown("alice", mentionText)))
	require.Zero(t, evaluate[int](t, alice, `document.querySelectorAll('#messages li.message.mentions-me').length`),
		"alice's own message mentions bob, not her")
	bob.run(t, "reload: the mention is read", append(freshLive,
		present(chanItem),
		poll(`document.getElementById('channel-title')?.textContent === "Pick a channel"`),
		poll(`document.querySelector('`+chanItem+`') !== null && document.querySelector('`+mentionBadge+`') === null`),
	)...)

	// Bob answers; alice, still in the channel, sees it.
	bob.run(t, "send",
		clickLive(chanItem+` button.name`),
		chromedp.WaitVisible(css(`#composer`)),
		chromedp.SendKeys(css(`#send-text`), bobText),
		chromedp.Click(css(`#send-form button`)),
		poll(messageShown("bob", bobText)),
	)
	alice.run(t, "see bob's message", poll(messageShown("bob", bobText)))

	// Alice sends an image; bob sees it, loaded through its signed link.
	alice.run(t, "upload an image",
		chromedp.SetUploadFiles(css(`#image-file`), []string{imgPath}),
		poll(`(function () { var i = document.querySelector('#messages li.mine img'); return !!i && i.complete && i.naturalWidth > 0; })()`),
	)
	bob.run(t, "see the image",
		poll(`(function () { var i = document.querySelector('#messages li.message img'); return !!i && i.complete && i.naturalWidth > 0; })()`),
	)
	src := evaluate[string](t, bob, `document.querySelector('#messages li.message img').getAttribute('src')`)
	natural := evaluate[int](t, bob, `document.querySelector('#messages li.message img').naturalWidth`)
	require.Contains(t, src, "/api/v2/messages/", "the image is served by the API")
	require.Contains(t, src, "sig=", "through a signed link")
	require.Equal(t, 64, natural, "the medium rendition of a 64x48 image keeps its size")

	// Alice blocks bob from his message: his messages go, here and on the
	// stream (a message posted after his shows, his does not); unblocking
	// brings them back.
	alice.run(t, "block bob",
		clickLive(`#messages li.message:not(.mine) button.block`),
		present(`#blocked-users li[data-user-id="bob"]`),
		poll(`!(`+messageShown("bob", bobText)+`)`),
	)
	bob.run(t, "send while blocked",
		chromedp.SendKeys(css(`#send-text`), "are you there?"),
		chromedp.Click(css(`#send-form button`)),
		poll(messageShown("bob", "are you there?")),
	)
	code, body := s.call(t, s.token(t), "POST", "/api/v2/message", map[string]any{"channelId": channelID, "type": "text", "data": map[string]any{"text": "after bob"}})
	require.Equal(t, 200, code, "%v", body)
	shownText := func(text string) string {
		return `Array.from(document.querySelectorAll('#messages li.message .text')).some(function (x) { return x.textContent === ` + jsString(text) + `; })`
	}
	alice.run(t, "the stream leaves bob out", poll(shownText("after bob")))
	require.False(t, evaluate[bool](t, alice, shownText("are you there?")), "bob's message reached his blocker")
	alice.run(t, "unblock bob",
		clickLive(`#blocked-users li[data-user-id="bob"] button.unblock`),
		poll(messageShown("bob", "are you there?")),
		poll(messageShown("bob", bobText)),
		poll(`document.querySelector('#blocked-users li') === null`),
	)

	// CHAT_SCREENSHOT_DIR keeps what each of them sees, for the docs.
	if dir := os.Getenv("CHAT_SCREENSHOT_DIR"); dir != "" {
		for _, tb := range []*tab{alice, bob} {
			ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
			shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
			cancel()
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "chatpage-"+tb.name+".png"), shot, 0o644))
		}
	}

	alice.noErrors(t)
	bob.noErrors(t)
}

// TestChatPageReportsViolations shows that the browser test notices a CSP
// violation: an inline script injected into the page is refused and
// reported.
func TestChatPageReportsViolations(t *testing.T) {
	chromium := findChromium(t)
	s := start(t, "-store", "memory")
	browser := newBrowser(t, chromium)
	tb := newTab(t, browser, "visitor")
	tb.run(t, "load the page",
		chromedp.Navigate(s.base+"/chat/"),
		chromedp.WaitVisible(css(`#token-signin`)),
	)
	// Without -unsafe-dev-sign-in the page offers only the token box.
	require.True(t, evaluate[bool](t, tb, `document.getElementById('dev-signin').hidden`))

	ctx, cancel := context.WithTimeout(tb.ctx, 60*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`(function () { var s = document.createElement('script'); s.textContent = 'window.injected = 1'; document.body.append(s); })()`),
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			for {
				tb.mu.Lock()
				n := len(tb.errs)
				tb.mu.Unlock()
				if n > 0 {
					return nil
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(50 * time.Millisecond):
				}
			}
		}),
	))
	injected, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.injected === 1`))
	require.NoError(t, err)
	require.False(t, injected, "the inline script must not run")
	tb.mu.Lock()
	defer tb.mu.Unlock()
	require.NotEmpty(t, tb.errs)
	require.Contains(t, strings.Join(tb.errs, "\n"), "script-src", "the violation names the directive")
}

func TestChatPageFlags(t *testing.T) {
	t.Parallel()
	c, err := parseConfig(t, nil, nil)
	require.NoError(t, err)
	require.True(t, c.chatPage, "the page is on by default")
	require.False(t, c.unsafeDevSignIn, "the development sign-in is off by default")

	c, err = parseConfig(t, []string{"-chat-page=false"}, nil)
	require.NoError(t, err)
	require.False(t, c.chatPage)

	c, err = parseConfig(t, nil, map[string]string{"CHAT_UNSAFE_DEV_SIGN_IN": "true", "CHAT_CHAT_PAGE": "1"})
	require.NoError(t, err)
	require.True(t, c.unsafeDevSignIn)
	require.True(t, c.chatPage)

	_, err = parseConfig(t, []string{"-unsafe-dev-sign-in", "-chat-page=false"}, nil)
	var u usageError
	require.ErrorAs(t, err, &u)
	require.Contains(t, err.Error(), "-unsafe-dev-sign-in needs the chat page")
}

func TestChatPageServed(t *testing.T) {
	t.Parallel()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(c *http.Client, url string) *http.Response {
		t.Helper()
		resp, err := c.Get(url)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	devToken := func(base string) int {
		t.Helper()
		resp, err := http.Post(base+"/chat/dev-token", "application/json", strings.NewReader(`{"userId":"mallory"}`))
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}

	on := start(t, "-store", "memory")
	resp := get(http.DefaultClient, on.base+"/chat/")
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'")
	resp = get(noRedirect, on.base+"/chat")
	require.Equal(t, http.StatusMovedPermanently, resp.StatusCode)
	require.Equal(t, "/chat/", resp.Header.Get("Location"))
	require.Equal(t, 404, devToken(on.base), "no development sign-in without the flag")
	require.NotContains(t, on.stderr.String(), "UNSAFE")

	dev := start(t, "-store", "memory", "-unsafe-dev-sign-in")
	require.Equal(t, 200, devToken(dev.base))
	require.Contains(t, dev.stderr.String(), "UNSAFE", "the development sign-in is announced")

	off := start(t, "-store", "memory", "-chat-page=false")
	require.Equal(t, 404, get(http.DefaultClient, off.base+"/chat/").StatusCode)
	require.Equal(t, 200, get(http.DefaultClient, off.base+"/livez").StatusCode)
}

// TestChatPageCountsWhileListing: a message that the stream brings while
// the page reads its channel lists, whose answer was made before the
// message, still counts once the lists are applied; one the answer
// includes does not count twice.
func TestChatPageCountsWhileListing(t *testing.T) {
	chromium := findChromium(t)
	s := start(t, "-store", "memory")
	admin := s.token(t)
	code, body := s.call(t, admin, "POST", "/api/v2/channel", map[string]any{"channelId": "room", "type": "standard",
		"userIds": []string{"alice", "bob"}})
	require.Equal(t, 200, code, "%v", body)
	userToken := func(id string) string {
		code, minted := s.call(t, admin, "POST", "/api/v2/users/"+id+"/token", map[string]any{"ttl": 3600})
		require.Equal(t, 200, code, "%v", minted)
		tok, _ := minted["token"].(string)
		require.NotEmpty(t, tok)
		return tok
	}
	aliceToken, bobToken := userToken("alice"), userToken("bob")
	mention := func(text string) {
		code, posted := s.call(t, aliceToken, "POST", "/api/v2/message", map[string]any{"channelId": "room", "type": "text",
			"data": map[string]any{"text": text}})
		require.Equal(t, 200, code, "%v", posted)
	}

	bob := newTab(t, newBrowser(t, chromium), "bob")
	chanItem := `#my-channels li[data-channel-id="room"]`
	badge := `document.querySelector('` + chanItem + ` .mention-count')?.textContent`
	loads := `Number(document.getElementById('my-channels').dataset.loads || 0)`
	bob.run(t, "sign in",
		chromedp.Navigate(s.base+"/chat/"),
		chromedp.WaitVisible(css(`#token-input`)),
		chromedp.SetValue(css(`#token-input`), bobToken),
		chromedp.Click(css(`#token-signin-form button`)),
		present(chanItem),
		poll(`document.getElementById('connection').dataset.state === "live"`),
		poll(loads+` > 0`),
	)
	// The page's reads of its lists are answered by the server and then
	// held in the page until released.
	bob.run(t, "hold the lists", chromedp.Evaluate[chromedp.Void](`(function () {
		window.holdLists = true;
		window.listsAnswered = 0;
		const fetchNow = window.fetch;
		window.fetch = async function (url, init) {
			const res = await fetchNow(url, init);
			if (String(url).endsWith('/channels')) {
				window.listsAnswered++;
				while (window.holdLists) {
					await new Promise(function (ok) { setTimeout(ok, 10); });
				}
			}
			return res;
		};
	})()`))

	// A change of the channel makes the page read its lists again; the
	// server answers before the mention exists.
	before := evaluate[int](t, bob, loads)
	code, body = s.call(t, admin, "PUT", "/api/v2/channel/room", map[string]any{"displayName": "Room"})
	require.Equal(t, 200, code, "%v", body)
	bob.run(t, "the lists answered", poll(`window.listsAnswered === 2`))
	mention("@bob, one")
	bob.run(t, "the mention counted from the stream", poll(badge+` === "@1"`))
	bob.run(t, "the lists applied",
		chromedp.Evaluate[chromedp.Void](`window.holdLists = false`),
		poll(loads+` > `+strconv.Itoa(before)),
	)
	require.Equal(t, "@1", evaluate[string](t, bob, badge), "the lists' older counts do not drop the mention")

	// Now the answer is made after a mention the stream brought before
	// it: counted once.
	bob.run(t, "hold again", chromedp.Evaluate[chromedp.Void](`window.holdLists = true; window.listsAnswered = 0`))
	before = evaluate[int](t, bob, loads)
	mention("@bob, two")
	bob.run(t, "the second mention counted from the stream", poll(badge+` === "@2"`))
	code, body = s.call(t, admin, "PUT", "/api/v2/channel/room", map[string]any{"displayName": "Room 2"})
	require.Equal(t, 200, code, "%v", body)
	bob.run(t, "the lists answered again", poll(`window.listsAnswered === 2`))
	bob.run(t, "the lists applied again",
		chromedp.Evaluate[chromedp.Void](`window.holdLists = false`),
		poll(loads+` > `+strconv.Itoa(before)),
	)
	require.Equal(t, "@2", evaluate[string](t, bob, badge), "the lists include both mentions, counted once")
}

package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/sqlite"
)

// postWhileDown writes a message into the SQLite file of a stopped server,
// as another process sharing the file would: its event is in the log when
// the next server starts. With expire, every event of the log is then
// deleted, as the retention job deletes those older than -event-retention.
func postWhileDown(t *testing.T, path, userID, channelID, text string, expire bool) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	svc, err := chat.New(ctx, st, chat.Config{})
	require.NoError(t, err)
	_, err = svc.CreateMessage(ctx, userID, chat.CreateMessageInput{ChannelID: channelID, Type: "text", Data: map[string]any{"text": text}})
	require.NoError(t, err)
	if expire {
		require.NoError(t, st.Update(ctx, func(tx chat.Tx) error {
			for {
				n, err := tx.DeleteEventsBefore(ctx, time.Now().Add(time.Hour), 1000)
				if err != nil || n == 0 {
					return err
				}
			}
		}))
	}
}

// TestChatPageLiveThroughRestart: two people in one channel see each
// other's messages and typing from the event stream without reloading the
// page, and the pages catch up by themselves after the server restarts:
// by resuming after the last event seen, or, when the restarted server no
// longer has those events, by reading the channel again. A person's
// second tab clears its unread counts when the first one reads; the other
// member's "Seen by" comes from the stored markers, read when a message
// arrives or the channel opens (the stream carries no markers of others).
func TestChatPageLiveThroughRestart(t *testing.T) {
	chromium := findChromium(t)
	if !cgoEnabled {
		t.Skip("the restart keeps its state in SQLite, which needs cgo")
	}
	for _, tc := range []struct {
		name    string
		resumed bool // what stream.didConnect says after the restart
	}{
		{name: "resume", resumed: true},
		// The events written before the restart are gone from the log,
		// as when they are older than the retention: the page's after=
		// is no longer there and it must read the channel again.
		{name: "reread", resumed: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testLiveThroughRestart(t, chromium, tc.resumed)
		})
	}
}

func testLiveThroughRestart(t *testing.T, chromium string, wantResumed bool) {
	dbPath := t.TempDir() + "/chat.db"
	args := []string{"-store", "sqlite:" + dbPath, "-unsafe-dev-sign-in"}
	s := start(t, args...)
	admin := s.token(t)
	pageURL := s.base + "/chat/"

	browser := newBrowser(t, chromium)
	alice := newTab(t, browser, "alice")
	bob := newTab(t, browser, "bob")

	const (
		channelID  = "live"
		firstText  = "hello bob, this is live"
		replyText  = "got it"
		downText   = "written while the server was down"
		secondText = "back again"
	)
	chanItem := `#my-channels li[data-channel-id="` + channelID + `"]`
	typingIs := func(text string) chromedp.Action[chromedp.Void] {
		return poll(`document.getElementById('typing')?.textContent === ` + jsString(text))
	}
	seenUnderMine := func(text, seen string) chromedp.Action[chromedp.Void] {
		return poll(`Array.from(document.querySelectorAll('#messages li.message.mine')).some(function (li) {
  var x = li.querySelector('.text'), s = li.querySelector('.seen');
  return x && s && x.textContent === ` + jsString(text) + ` && s.textContent === ` + jsString(seen) + `;
})`)
	}
	connection := func(state string) chromedp.Action[chromedp.Void] {
		return poll(`document.getElementById('connection').dataset.state === ` + jsString(state))
	}

	for _, tb := range []*tab{alice, bob} {
		tb.run(t, "sign in",
			chromedp.Navigate(pageURL),
			chromedp.WaitVisible(css(`#dev-user`)),
			chromedp.SendKeys(css(`#dev-user`), tb.name),
			chromedp.Click(css(`#dev-signin-form button`)),
			chromedp.WaitVisible(css(`#app`)),
			poll(`document.getElementById('me')?.textContent === `+jsString(tb.name)),
			connection("live"),
			// Set once per page load: a reload would lose it.
			chromedp.Evaluate[chromedp.Void](`window.loadedOnce = 'yes'`),
		)
	}

	// The channel made by the admin appears in both lists by itself
	// (channel.didCreate about them), and both open it.
	code, body := s.call(t, admin, "POST", "/api/v2/channel", map[string]any{
		"channelId": channelID, "type": "standard", "userIds": []string{"alice", "bob"}})
	require.Equal(t, 200, code, "%v", body)
	for _, tb := range []*tab{alice, bob} {
		tb.run(t, "see the new channel and open it",
			clickLive(chanItem+` button.name`),
			chromedp.WaitVisible(css(`#composer`)),
		)
	}

	// Alice types: bob sees it, and sees it go away after a few seconds
	// without news.
	alice.run(t, "type", chromedp.SendKeys(css(`#send-text`), "hello"))
	bob.run(t, "see alice typing", typingIs("alice is typing…"))
	bob.run(t, "see the typing go away", typingIs(""))

	// Alice types on and sends: bob sees the message, and the typing ends.
	alice.run(t, "type and send",
		chromedp.SendKeys(css(`#send-text`), " bob, this is live"),
	)
	bob.run(t, "see alice typing again", typingIs("alice is typing…"))
	alice.run(t, "send",
		poll(`document.getElementById('send-text').value === `+jsString(firstText)),
		chromedp.Click(css(`#send-form button`)),
		poll(messageShown("alice", firstText)),
	)
	bob.run(t, "see the message live",
		poll(messageShown("alice", firstText)),
		typingIs(""),
	)
	// Bob's page, visible, marked it read; his answer brings the marker
	// to alice's page with it.
	waitMarker(t, s, admin, channelID, "bob", 1)
	bob.run(t, "answer",
		chromedp.SendKeys(css(`#send-text`), replyText),
		chromedp.Click(css(`#send-form button`)),
		poll(messageShown("bob", replyText)),
	)
	alice.run(t, "see bob's answer and read marker",
		poll(messageShown("bob", replyText)),
		seenUnderMine(firstText, "Seen by bob"),
	)

	// The server stops: both pages say they are reconnecting.
	addr := strings.TrimPrefix(s.base, "http://")
	for _, tb := range []*tab{alice, bob} {
		tb.allowNetworkErrors(true) // refused connections while it is down
	}
	require.NoError(t, s.stop(t))
	for _, tb := range []*tab{alice, bob} {
		tb.run(t, "see the connection lost",
			connection("reconnecting"),
			poll(`document.getElementById('connection')?.textContent === "Reconnecting…" && !document.getElementById('connection').hidden`),
		)
	}

	// A message is written while it is down; a new server starts on the
	// same file and address.
	postWhileDown(t, dbPath, "alice", channelID, downText, !wantResumed)
	s2 := start(t, append(append([]string{}, args...), "-addr", addr)...)
	require.Equal(t, s.base, s2.base)

	// Both pages reconnect and show the missed message, without reload.
	for _, tb := range []*tab{alice, bob} {
		tb.run(t, "catch up after the restart",
			connection("live"),
			poll(messageShown("alice", downText)),
		)
		tb.allowNetworkErrors(false)
	}
	for _, tb := range []*tab{alice, bob} {
		require.Equal(t, fmt.Sprint(wantResumed), evaluate[string](t, tb, `document.getElementById('connection').dataset.resumed`),
			"%s: stream.didConnect's resumed after the restart", tb.name)
	}
	// Bob's page marked the missed message (segment 3) read. Alice,
	// opening another channel and coming back, sees his marker.
	waitMarker(t, s2, admin, channelID, "bob", 3)
	const side = "side"
	sideItem := `#my-channels li[data-channel-id="` + side + `"]`
	code, body = s2.call(t, admin, "POST", "/api/v2/channel", map[string]any{
		"channelId": side, "type": "standard", "userIds": []string{"alice", "bob"}})
	require.Equal(t, 200, code, "%v", body)
	alice.run(t, "reopen the channel and see bob's marker",
		clickLive(sideItem+` button.name`),
		poll(`document.getElementById('channel-title')?.textContent === `+jsString(side)),
		clickLive(chanItem+` button.name`),
		poll(`document.getElementById('channel-title')?.textContent === `+jsString(channelID)),
		poll(messageShown("alice", downText)),
		seenUnderMine(downText, "Seen by bob"),
	)

	// Live again: bob answers, alice sees it.
	bob.run(t, "send after the restart",
		chromedp.SendKeys(css(`#send-text`), secondText),
		chromedp.Click(css(`#send-form button`)),
		poll(messageShown("bob", secondText)),
	)
	alice.run(t, "see bob's answer", poll(messageShown("bob", secondText)))

	// Bob opens a second tab, where no channel is open.
	bob2 := newTab(t, browser, "bob")
	bob2.run(t, "sign in again in a second tab",
		chromedp.Navigate(pageURL),
		chromedp.WaitVisible(css(`#dev-user`)),
		chromedp.SendKeys(css(`#dev-user`), "bob"),
		chromedp.Click(css(`#dev-signin-form button`)),
		chromedp.WaitVisible(css(`#app`)),
		connection("live"),
		present(sideItem),
		poll(`document.title === "Chat"`),
		chromedp.Evaluate[chromedp.Void](`window.loadedOnce = 'yes'`),
	)

	// News of another channel raises its unread badge in both of bob's
	// tabs.
	badge := func(n int) chromedp.Action[chromedp.Void] {
		return poll(`(function () { var b = document.querySelector('` + sideItem + ` .unread'); return !!b && b.textContent === ` + jsString(fmt.Sprint(n)) + `; })()`)
	}
	bob.run(t, "see the other channel appear", present(sideItem))
	for i := 1; i <= 2; i++ {
		code, body = s2.call(t, admin, "POST", "/api/v2/message", map[string]any{
			"channelId": side, "type": "text", "data": map[string]any{"text": fmt.Sprint("news ", i)}})
		require.Equal(t, 200, code, "%v", body)
		bob.run(t, "see the unread badge count", badge(i))
		bob2.run(t, "see the unread badge count", badge(i))
	}
	// The open channel shows no badge: its news is read as it comes. The
	// tab's title counts the unread messages.
	bob.run(t, "no badge on the open channel",
		poll(`document.querySelector('`+chanItem+` .unread') === null`),
		poll(`document.title === "(2) Chat"`),
	)
	bob2.run(t, "the title counts the news", poll(`document.title === "(2) Chat"`))

	for _, tb := range []*tab{alice, bob} {
		require.Equal(t, "yes", evaluate[string](t, tb, `window.loadedOnce || ''`), "%s: the page did not reload", tb.name)
		require.Equal(t, 1, evaluate[int](t, tb, `Array.from(document.querySelectorAll('#messages li.message .text')).filter(function (x) { return x.textContent === `+jsString(downText)+`; }).length`),
			"%s: the missed message shows once", tb.name)
		tb.noErrors(t)
	}

	// Bob opens the other channel: its news shows, its badge and the
	// title's count go, and in his second tab too, which did not reload.
	bob.run(t, "open the other channel",
		clickLive(sideItem+` button.name`),
		poll(messageShown("admin", "news 2")),
		poll(`document.querySelector('`+sideItem+` .unread') === null`),
		poll(`document.title === "Chat"`),
	)
	bob2.run(t, "see the other tab's reading",
		poll(`document.querySelector('`+sideItem+` .unread') === null`),
		poll(`document.title === "Chat"`),
		poll(`document.querySelector('#my-channels li.active') === null`),
	)
	require.Equal(t, "yes", evaluate[string](t, bob2, `window.loadedOnce || ''`), "bob's second tab did not reload")

	// Removed from the open channel: alice's page says so and drops it.
	code, body = s2.call(t, admin, "DELETE", "/api/v2/channel/"+channelID+"/users", map[string]any{"userIds": []string{"alice"}})
	require.Equal(t, 200, code, "%v", body)
	alice.run(t, "see the removal",
		poll(`document.querySelector('`+chanItem+`') === null`),
		poll(`document.getElementById('channel-title')?.textContent === "Pick a channel"`),
		poll(`document.getElementById('status')?.textContent === "You are no longer a member of `+channelID+`."`),
		connection("live"),
	)

	// Globally banned: the stream closes with 4003 and bob's page says
	// so and stops, signed out, instead of reconnecting.
	code, body = s2.call(t, admin, "POST", "/api/v2/users/ban", map[string]any{"userId": "bob"})
	require.Equal(t, 200, code, "%v", body)
	for _, tb := range []*tab{bob, bob2} {
		tb.run(t, "see the ban",
			connection("closed"),
			poll(`document.getElementById('connection')?.textContent === "Disconnected: this user was banned." && !document.getElementById('connection').hidden`),
			poll(`!document.getElementById('signin').hidden && document.getElementById('app').hidden`),
			poll(`document.getElementById('status')?.textContent === "This user was banned: this page no longer receives messages."`),
		)
	}
	for _, tb := range []*tab{alice, bob, bob2} {
		require.Equal(t, "yes", evaluate[string](t, tb, `window.loadedOnce || ''`), "%s: the page did not reload", tb.name)
		tb.noErrors(t)
	}
}

// waitMarker waits until the stored read marker of userID in channelID
// reaches segment (the page moves it by itself when it shows a message).
func waitMarker(t *testing.T, s *server, token, channelID, userID string, segment int64) {
	t.Helper()
	want := fmt.Sprintf("%s=%d", userID, segment)
	var got []string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		code, body := s.call(t, token, "GET", "/api/v2/channel/"+channelID, nil)
		require.Equal(t, 200, code, "%v", body)
		if got = readMarkers(body); slices.Contains(got, want) {
			return
		}
	}
	t.Fatalf("the read marker %s was not stored: %v", want, got)
}

// readMarkers lists "userId=readToSegment" of a channel's channelUsers.
func readMarkers(body map[string]any) []string {
	var out []string
	cus, _ := body["channelUsers"].([]any)
	for _, c := range cus {
		cu, _ := c.(map[string]any)
		seg, _ := cu["readToSegment"].(float64)
		out = append(out, fmt.Sprintf("%v=%d", cu["userId"], int64(seg)))
	}
	return out
}

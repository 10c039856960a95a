package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/console"
)

// countingHook is a pre-send hook that flags the messages whose text
// contains "spam", allows the others, and counts its calls.
type countingHook struct{ calls atomic.Int64 }

func (h *countingHook) PreSend(_ context.Context, m *chat.PreSendMessage) chat.PreSendVerdict {
	h.calls.Add(1)
	if s, _ := m.Data["text"].(string); strings.Contains(s, "spam") {
		return chat.PreSendVerdict{Action: chat.PreSendFlag, Reason: "looks like spam"}
	}
	return chat.PreSendVerdict{Action: chat.PreSendAllow}
}

func TestRulesPageWithoutPreSendHook(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)
	b := p.browser("10.8.0.1")
	b.signedIn()
	_, page := b.get("/admin/rules")
	require.Contains(t, page, `id="presend-help"`)
	require.Contains(t, page, "No pre-send hook is configured for this server")
	require.NotContains(t, page, `id="presend-host"`)
	require.Contains(t, page, "does not call the hook")
}

func TestRulesPageDescribesThePreSendHook(t *testing.T) {
	t.Parallel()
	hook := &countingHook{}
	p := newPanelConfig(t, false, chat.Config{PreSendHook: hook}, console.Config{PreSendHook: &console.PreSendHookInfo{
		URL: "https://ops:hunter2@classifier.example:8443/check?key=s3cret", Timeout: 500 * time.Millisecond, RejectOnError: true,
	}})
	ctx := context.Background()
	b := p.browser("10.8.0.2")
	token := b.signedIn()
	_, page := b.get("/admin/rules")
	require.Contains(t, page, "This server asks a pre-send hook")
	require.Contains(t, page, `<code id="presend-host">classifier.example:8443</code>`)
	require.Contains(t, page, `<strong id="presend-timeout">500ms</strong>`)
	require.Contains(t, page, `<strong id="presend-policy">refused</strong>`)
	for _, secret := range []string{"hunter2", "s3cret", "/check"} {
		require.NotContains(t, page, secret, "only the host is shown")
	}
	require.Contains(t, page, "400313")

	// The "Test a message" box runs the rules only: the hook is not asked,
	// neither for the content alone nor for a post in a channel.
	_, err := p.svc.CreateChannel(ctx, p.root.UserID, chat.CreateChannelInput{ChannelID: "room", Type: chat.ChannelTypeStandard, UserIDs: []string{"ann"}})
	require.NoError(t, err)
	for _, form := range []url.Values{
		{"csrf": {token}, "text": {"spam spam"}},
		{"csrf": {token}, "text": {"spam spam"}, "userId": {"ann"}, "channelId": {"room"}},
	} {
		res, page := b.post("/admin/rules/test", form)
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Contains(t, page, "Allowed:")
	}
	require.Zero(t, hook.calls.Load(), "the test box does not call the hook")

	// A message the hook flagged is marked so on the channel page; one a
	// user flagged is not.
	spam, err := p.svc.CreateMessage(ctx, "ann", chat.CreateMessageInput{ChannelID: "room", Type: chat.MessageTypeText, Data: chat.TextData("buy spam")})
	require.NoError(t, err)
	plain, err := p.svc.CreateMessage(ctx, "ann", chat.CreateMessageInput{ChannelID: "room", Type: chat.MessageTypeText, Data: chat.TextData("hello")})
	require.NoError(t, err)
	require.EqualValues(t, 2, hook.calls.Load(), "the hook is wired: posting asks it")
	_, err = p.svc.FlagMessage(ctx, p.root.UserID, plain.Messages[0].MessageID)
	require.NoError(t, err)
	_, page = b.get("/admin/channels/room")
	require.Equal(t, "flagged by the pre-send hook", messageHead(t, page, spam.Messages[0].MessageID, "hook-flag"))
	require.Empty(t, messageHead(t, page, plain.Messages[0].MessageID, "hook-flag"))
	require.Contains(t, page, "1 flag(s)")
}

// messageHead returns the text of the span of class cls in the message
// mid of a channel page ("" when there is none).
func messageHead(t *testing.T, page, mid, cls string) string {
	t.Helper()
	i := strings.Index(page, `id="m-`+mid+`"`)
	require.GreaterOrEqual(t, i, 0, "message %s on the page", mid)
	item := page[i:]
	if j := strings.Index(item, "</li>"); j >= 0 {
		item = item[:j]
	}
	m := regexp.MustCompile(`<span class="` + cls + `">([^<]*)</span>`).FindStringSubmatch(item)
	if m == nil {
		return ""
	}
	return m[1]
}

func TestRulesPageHookDefaultTimeout(t *testing.T) {
	t.Parallel()
	p := newPanelConfig(t, false, chat.Config{}, console.Config{PreSendHook: &console.PreSendHookInfo{URL: "https://hook.example/"}})
	b := p.browser("10.8.0.3")
	b.signedIn()
	_, page := b.get("/admin/rules")
	require.Contains(t, page, `<strong id="presend-timeout">2s</strong>`)
	require.Contains(t, page, `<strong id="presend-policy">stored</strong>`)
}

// blockedIDs returns the blocked ids the blocks card of a user page lists.
func blockedIDs(page string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<li data-blocked="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestUserBlocksCard(t *testing.T) {
	t.Parallel()
	p := newPanel(t, false)
	ctx := context.Background()
	const evilID = `x<script>alert(1)</script>`
	for _, blocked := range []string{"mallory", evilID} {
		_, err := p.svc.BlockUser(ctx, "ann", "ann", blocked)
		require.NoError(t, err)
	}
	b := p.browser("10.8.0.4")
	token := b.signedIn()

	_, page := b.get("/admin/users/ann")
	require.Contains(t, page, `id="blocks-help"`)
	require.Equal(t, []string{"mallory", `x&lt;script&gt;alert(1)&lt;/script&gt;`}, blockedIDs(page))
	require.NotContains(t, page, "<script>alert")
	_, page = b.get("/admin/users/mallory")
	require.Contains(t, page, `<p id="no-blocks">mallory blocks nobody.</p>`)

	blocks := func() []string {
		bl, err := p.svc.ListBlocks(ctx, p.root.UserID, "ann")
		require.NoError(t, err)
		var ids []string
		for _, b := range bl.Blocks {
			ids = append(ids, b.BlockedID)
		}
		return ids
	}
	// Without the session's CSRF token, or with a forged one, nothing changes.
	for _, form := range []url.Values{
		{"blockedId": {"mallory"}},
		{"blockedId": {"mallory"}, "csrf": {"forged" + token}},
	} {
		res, _ := b.post("/admin/users/ann/unblock", form)
		require.Equal(t, http.StatusForbidden, res.StatusCode)
	}
	require.Equal(t, []string{"mallory", evilID}, blocks())

	res, _ := b.post("/admin/users/ann/unblock", url.Values{"csrf": {token}, "blockedId": {evilID}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/admin/users/ann", res.Header.Get("Location"))
	_, page = b.get(res.Header.Get("Location"))
	require.Contains(t, page, "ann no longer blocks x&lt;script&gt;alert(1)&lt;/script&gt;.")
	require.NotContains(t, page, "<script>alert")
	require.Equal(t, []string{"mallory"}, blockedIDs(page))
	require.Equal(t, []string{"mallory"}, blocks())

	res, _ = b.post("/admin/users/ann/unblock", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	_, page = b.get(res.Header.Get("Location"))
	require.Contains(t, page, "name the user to unblock")
	require.Equal(t, []string{"mallory"}, blocks())
}

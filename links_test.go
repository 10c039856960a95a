package chat_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
)

// imageMessage posts an image message with the named renditions.
func (e *env) imageMessage(channel string, sizes ...string) *chat.Message {
	e.t.Helper()
	var rs []chat.ImageRendition
	for _, s := range sizes {
		rs = append(rs, chat.ImageRendition{Name: s, ContentType: "image/jpeg", Width: 1, Height: 1, Data: []byte("bytes of " + s)})
	}
	out, err := e.svc.CreateImageMessage(e.ctx, e.admin, chat.CreateImageMessageInput{ChannelID: channel, FileName: "p.jpg", MimeType: "image/jpeg",
		Width: 1, Height: 1, Renditions: rs})
	require.NoError(e.t, err)
	return &out.Messages[0]
}

func (e *env) fileMessage(channel, content string) *chat.Message {
	e.t.Helper()
	out, err := e.svc.CreateFileMessage(e.ctx, e.admin, chat.CreateFileMessageInput{ChannelID: channel, FileName: "a.txt", MimeType: "text/plain", Data: []byte(content)})
	require.NoError(e.t, err)
	return &out.Messages[0]
}

// signedLink is a link split into what OpenLink takes.
type signedLink struct {
	messageID, name, exp, sig string
}

func parseLink(t *testing.T, link string) signedLink {
	t.Helper()
	u, err := url.Parse(link)
	require.NoError(t, err)
	parts := strings.Split(strings.TrimPrefix(u.EscapedPath(), "/api/v2/messages/"), "/")
	require.Len(t, parts, 2, "link %s", link)
	id, err := url.PathUnescape(parts[0])
	require.NoError(t, err)
	q := u.Query()
	name := q.Get("size")
	if parts[1] == "files" {
		name = "file"
	}
	return signedLink{messageID: id, name: name, exp: q.Get("exp"), sig: q.Get("sig")}
}

func (e *env) open(l signedLink) ([]byte, error) {
	b, _, err := e.svc.OpenLink(e.ctx, l.messageID, l.name, l.exp, l.sig)
	if err != nil {
		return nil, err
	}
	return b.Data, nil
}

func imageURLs(t *testing.T, m *chat.Message) map[string]string {
	t.Helper()
	d, ok := m.Image()
	require.True(t, ok)
	return d.URLs
}

func TestFileLinks(t *testing.T) {
	e := newEnv(t)
	e.channel("c")
	im := e.imageMessage("c", chat.ImageSmall, chat.ImageMedium, chat.ImageLarge)
	urls := imageURLs(t, im)
	require.Len(t, urls, 3, "one link per kept size")
	// The clock reads 2026-01-02 03:04:05.006: 24 h later, rounded up to
	// the hour.
	exp := time.Date(2026, 1, 3, 4, 0, 0, 0, time.UTC).Unix()
	for _, size := range []string{chat.ImageSmall, chat.ImageMedium, chat.ImageLarge} {
		l := parseLink(t, urls[size])
		require.Equal(t, im.MessageID, l.messageID)
		require.Equal(t, size, l.name)
		require.Equal(t, exp, mustInt(t, l.exp))
		b, err := e.open(l)
		require.NoError(t, err)
		require.Equal(t, "bytes of "+size, string(b))
	}
	fm := e.fileMessage("c", "file bytes")
	fd, ok := fm.File()
	require.True(t, ok)
	fl := parseLink(t, fd.URL)
	require.Equal(t, "file", fl.name)
	b, err := e.open(fl)
	require.NoError(t, err)
	require.Equal(t, "file bytes", string(b))

	// Altered parts: 403 (400300), before the store is asked.
	small := parseLink(t, urls[chat.ImageSmall])
	alter := func(f func(l *signedLink)) error {
		l := small
		f(&l)
		_, err := e.open(l)
		return err
	}
	flip := func(s string) string {
		c := byte('A')
		if s[0] == 'A' {
			c = 'B'
		}
		return string(c) + s[1:]
	}
	requireCode(t, alter(func(l *signedLink) { l.sig = flip(l.sig) }), chat.CodeForbidden)
	requireCode(t, alter(func(l *signedLink) { l.sig = l.sig[:len(l.sig)-1] }), chat.CodeForbidden)
	requireCode(t, alter(func(l *signedLink) { l.name = chat.ImageLarge }), chat.CodeForbidden)
	requireCode(t, alter(func(l *signedLink) { l.messageID = fm.MessageID }), chat.CodeForbidden)
	requireCode(t, alter(func(l *signedLink) { l.exp = l.exp + "0" }), chat.CodeForbidden)
	requireCode(t, alter(func(l *signedLink) { l.sig = parseLink(t, fd.URL).sig }), chat.CodeForbidden)
	// Malformed or missing parameters: 400 naming the field.
	err = alter(func(l *signedLink) { l.exp = "soon" })
	requireCode(t, err, chat.CodeBadRequest)
	require.Contains(t, err.Error(), "exp")
	err = alter(func(l *signedLink) { l.sig = "" })
	requireCode(t, err, chat.CodeBadRequest)
	require.Contains(t, err.Error(), "sig")

	// The same links within the hour; new ones after it.
	e.clk.Add(55 * time.Minute) // 03:59:05
	again, err := e.svc.GetMessage(e.ctx, e.admin, im.MessageID)
	require.NoError(t, err)
	require.Equal(t, urls, imageURLs(t, &again.Messages[0]))
	e.clk.Add(time.Minute) // 04:00:05
	later, err := e.svc.GetMessage(e.ctx, e.admin, im.MessageID)
	require.NoError(t, err)
	laterURLs := imageURLs(t, &later.Messages[0])
	require.NotEqual(t, urls[chat.ImageSmall], laterURLs[chat.ImageSmall])
	require.Equal(t, exp+3600, mustInt(t, parseLink(t, laterURLs[chat.ImageSmall]).exp))

	// Expired: valid until exp, refused from exp on.
	e.clk.Add(time.Duration(exp-e.svc.Now().Unix())*time.Second - time.Second)
	_, err = e.open(small)
	require.NoError(t, err, "one second before the expiry")
	e.clk.Add(time.Second)
	_, err = e.open(small)
	requireCode(t, err, chat.CodeForbidden)
	require.Contains(t, err.Error(), "expired")

	// A deleted message's links: 404.
	fresh, err := e.svc.GetMessage(e.ctx, e.admin, im.MessageID)
	require.NoError(t, err)
	freshSmall := parseLink(t, imageURLs(t, &fresh.Messages[0])[chat.ImageSmall])
	require.NoError(t, e.svc.DeleteMessage(e.ctx, e.admin, im.MessageID))
	_, err = e.open(freshSmall)
	requireCode(t, err, chat.CodeNotFound)
	gone, err := e.svc.GetMessage(e.ctx, e.admin, im.MessageID)
	require.NoError(t, err)
	require.Equal(t, map[string]any{}, gone.Messages[0].Data, "a deleted message has no links")
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, json.Unmarshal([]byte(s), &n))
	return n
}

// TestFileLinksEverywhere checks that every response and event that
// carries messages carries the links, and that nothing is stored.
func TestFileLinksEverywhere(t *testing.T) {
	e := newEnv(t)
	w, err := e.svc.CreateWebhook(e.ctx, e.admin, "https://hooks.example.com/x", nil)
	require.NoError(t, err)
	e.channel("c")
	im := e.imageMessage("c", chat.ImageSmall)
	want := imageURLs(t, im)[chat.ImageSmall]
	require.NotEmpty(t, want)
	check := func(what string, ms []chat.Message) {
		t.Helper()
		for _, m := range ms {
			if m.MessageID == im.MessageID {
				require.Equal(t, want, imageURLs(t, &m)[chat.ImageSmall], what)
				return
			}
		}
		t.Fatalf("%s: the image message is missing", what)
	}
	got, err := e.svc.GetMessage(e.ctx, e.admin, im.MessageID)
	require.NoError(t, err)
	check("GetMessage", got.Messages)
	q, err := e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c"})
	require.NoError(t, err)
	check("QueryMessages", q.Messages)
	_, err = e.svc.AddReaction(e.ctx, e.admin, im.MessageID, chat.ReferenceTypeMessage, "like")
	require.NoError(t, err)
	most, err := e.svc.MostReacted(e.ctx, e.admin, chat.MostReactedQuery{ReactionName: "like"})
	require.NoError(t, err)
	check("MostReacted", most.Messages)
	fl, err := e.svc.FlagMessage(e.ctx, e.admin, im.MessageID)
	require.NoError(t, err)
	check("FlagMessage", fl.Messages)
	caption := "edited"
	ed, err := e.svc.UpdateMessage(e.ctx, e.admin, chat.UpdateMessageInput{MessageID: im.MessageID, Caption: &caption})
	require.NoError(t, err)
	check("UpdateMessage", ed.Messages)

	// Webhook events carry them too (documented: valid from the event's time).
	var ds []*chat.Delivery
	require.NoError(t, e.store.View(e.ctx, func(tx chat.Tx) error {
		ds, err = tx.ListDeliveries(e.ctx, w.WebhookID, "", 100)
		return err
	}))
	seen := map[string]bool{}
	for _, d := range ds {
		var env chat.Envelope
		require.NoError(t, json.Unmarshal(d.Body, &env))
		var data struct {
			Messages []chat.Message `json:"messages"`
		}
		require.NoError(t, json.Unmarshal(env.Data, &data))
		if len(data.Messages) > 0 {
			check(env.Event, data.Messages)
			seen[env.Event] = true
		}
	}
	for _, ev := range []string{chat.EventMessageDidCreate, chat.EventReactionDidAdd, chat.EventMessageDidFlag, chat.EventMessageDidUpdate} {
		require.True(t, seen[ev], "no %s with the message", ev)
	}

	// The store keeps the data without links.
	require.NoError(t, e.store.View(e.ctx, func(tx chat.Tx) error {
		m, err := tx.GetMessage(e.ctx, im.MessageID)
		require.NoError(t, err)
		require.NotContains(t, m.Data, "urls")
		require.Equal(t, "edited", m.Data["caption"])
		return nil
	}))
}

// TestFileLinkKey checks that the generated key is shared through the
// store, that a configured key replaces it, and the prefix.
func TestFileLinkKey(t *testing.T) {
	st := memory.New()
	e := newEnvStore(t, st)
	e.channel("c")
	l := parseLink(t, imageURLs(t, e.imageMessage("c", chat.ImageSmall))[chat.ImageSmall])

	// A second Service on the same store opens the first one's link.
	other, err := chat.New(e.ctx, st, chat.Config{Now: e.clk.Now})
	require.NoError(t, err)
	_, _, err = other.OpenLink(e.ctx, l.messageID, l.name, l.exp, l.sig)
	require.NoError(t, err)

	// One with another key does not.
	keyed, err := chat.New(e.ctx, st, chat.Config{Now: e.clk.Now, LinkKey: []byte("another key"), APIPrefix: "https://chat.example.com/api/v2/"})
	require.NoError(t, err)
	_, _, err = keyed.OpenLink(e.ctx, l.messageID, l.name, l.exp, l.sig)
	requireCode(t, err, chat.CodeForbidden)
	got, err := keyed.GetMessage(e.ctx, e.admin, l.messageID)
	require.NoError(t, err)
	link := imageURLs(t, &got.Messages[0])[chat.ImageSmall]
	require.True(t, strings.HasPrefix(link, "https://chat.example.com/api/v2/messages/"+l.messageID+"/images?size=small&exp="), link)
	q, err := url.Parse(link)
	require.NoError(t, err)
	_, _, err = keyed.OpenLink(e.ctx, l.messageID, l.name, q.Query().Get("exp"), q.Query().Get("sig"))
	require.NoError(t, err)
}

// TestFileLinkTTL checks a configured lifetime, still rounded up to the hour.
func TestFileLinkTTL(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)}
	svc, err := chat.New(t.Context(), memory.New(), chat.Config{Now: clk.Now, LinkTTL: 90 * time.Minute})
	require.NoError(t, err)
	admin, _, err := svc.CreateAdmin(t.Context(), "", "root", "")
	require.NoError(t, err)
	_, err = svc.CreateChannel(t.Context(), admin.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard})
	require.NoError(t, err)
	out, err := svc.CreateFileMessage(t.Context(), admin.UserID, chat.CreateFileMessageInput{ChannelID: "c", FileName: "f", Data: []byte("x")})
	require.NoError(t, err)
	fd, ok := out.Messages[0].File()
	require.True(t, ok)
	// 03:00 + 1 h 30 min = 04:30, rounded up to 05:00.
	require.Equal(t, time.Date(2026, 1, 2, 5, 0, 0, 0, time.UTC).Unix(), mustInt(t, parseLink(t, fd.URL).exp))
}

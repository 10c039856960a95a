package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/client"
	"github.com/chatengine/chat/httpapi"
)

// multipartBody builds a multipart/form-data body (boundary B) from raw
// parts: each is the Content-Disposition parameters after "form-data; "
// and the part's content.
func multipartBody(parts ...[2]string) string {
	var b strings.Builder
	for _, p := range parts {
		fmt.Fprintf(&b, "--B\r\nContent-Disposition: form-data; %s\r\n\r\n%s\r\n", p[0], p[1])
	}
	b.WriteString("--B--\r\n")
	return b.String()
}

const multipartB = "multipart/form-data; boundary=B"

// The parts beside the file share one budget (MaxBodyBytes), names
// included: many small fields are refused with 413 like one large one,
// before they can fill memory.
func TestUploadFieldsBudget(t *testing.T) {
	e := newEnv(t, memoryStore, func(c *httpapi.Config, _ *chat.Config) {
		c.MaxBodyBytes = 1024
		c.MaxUploadBytes = 64 << 10
	})
	_, err := e.c.CreateChannel(ctx(t), client.CreateChannelRequest{ChannelID: "ch", Type: "standard"})
	require.NoError(t, err)
	file := [2]string{`name="file"; filename="a.txt"`, "hello"}
	channel := [2]string{`name="channelId"`, "ch"}

	// Hundreds of empty fields.
	parts := [][2]string{channel}
	for range 800 {
		parts = append(parts, [2]string{`name="x"`, ""})
	}
	parts = append(parts, file)
	requireError(t, e.do("POST", "/messages/files", multipartB, multipartBody(parts...)), chat.CodeTooLarge, "fields")

	// A few fields, each under the limit, over it together.
	parts = [][2]string{channel}
	for i := range 6 {
		parts = append(parts, [2]string{fmt.Sprintf(`name="f%d"`, i), strings.Repeat("v", 200)})
	}
	parts = append(parts, file)
	requireError(t, e.do("POST", "/messages/files", multipartB, multipartBody(parts...)), chat.CodeTooLarge, "fields")
	// The same after the file.
	imgFile := [2]string{`name="file"; filename="a.png"`, string(pngImage(t, 4, 4, false))}
	parts = append([][2]string{channel, imgFile}, parts[1:len(parts)-1]...)
	requireError(t, e.do("POST", "/messages/images", multipartB, multipartBody(parts...)), chat.CodeTooLarge, "fields")

	// Under the budget: accepted, unknown fields ignored.
	parts = [][2]string{channel, {`name="caption"`, strings.Repeat("c", 500)}, {`name="tags"`, "t1"}, file}
	r := e.do("POST", "/messages/files", multipartB, multipartBody(parts...))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)

	// Nothing was stored by the refused requests.
	n := 0
	require.NoError(t, e.c.QueryMessagesAll(ctx(t), client.QueryMessagesRequest{ChannelID: "ch"}, func(chat.Message) error { n++; return nil }))
	require.Equal(t, 1, n)
}

// File names with path tricks, quotes and control characters are reduced to
// a safe base name, stored so, and sent back in a Content-Disposition that
// parses to that name and cannot break out of its parameter.
func TestUploadFileNames(t *testing.T) {
	e := newEnv(t, memoryStore)
	_, err := e.c.CreateChannel(ctx(t), client.CreateChannelRequest{ChannelID: "ch", Type: "standard"})
	require.NoError(t, err)
	for _, tc := range []struct{ param, want string }{
		{`filename="../../etc/passwd"`, "passwd"},
		{`filename="..\\..\\windows\\evil.bat"`, "evil.bat"},
		{`filename="C:\\Users\\me\\report.pdf"`, "report.pdf"},
		{`filename="a\"b;c.txt"`, "abc.txt"},
		{`filename*=UTF-8''..%2F..%2Fx.sh`, "x.sh"},
		{`filename*=UTF-8''evil%0D%0AX-Injected%3A%201.txt`, "evilX-Injected: 1.txt"},
		{`filename*=UTF-8''nul%00byte.txt`, "nulbyte.txt"},
		{`filename*=UTF-8''r%C3%A9sum%C3%A9%E2%80%AEfdp.exe`, "résuméfdp.exe"},
		{`filename=".."`, "file"},
		{`filename="/"`, "file"},
	} {
		t.Run(tc.param, func(t *testing.T) {
			body := multipartBody([2]string{`name="channelId"`, "ch"}, [2]string{`name="file"; ` + tc.param, "data"})
			r := e.do("POST", "/messages/files", multipartB, body)
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			m := r.json["messages"].([]any)[0].(map[string]any)
			require.Equal(t, tc.want, m["data"].(map[string]any)["fileName"])

			d := e.do("GET", "/messages/"+m["messageId"].(string)+"/files", "", "")
			require.Equal(t, http.StatusOK, d.status)
			require.Equal(t, "data", string(d.body))
			cd := d.header.Get("Content-Disposition")
			require.NotContains(t, cd, "\r")
			require.NotContains(t, cd, "\n")
			require.NotContains(t, cd, "/")
			require.NotContains(t, cd, `\`)
			disp, ps, err := mime.ParseMediaType(cd)
			require.NoError(t, err, cd)
			require.Equal(t, "attachment", disp)
			require.Equal(t, tc.want, ps["filename"], "filename* decodes to the stored name: %s", cd)
			require.Equal(t, "nosniff", d.header.Get("X-Content-Type-Options"))
			require.Equal(t, "default-src 'none'; sandbox", d.header.Get("Content-Security-Policy"))
		})
	}
}

// Uploads go through the Service's posting rules like any message (ban,
// blacklist and whitelist on captions, closed channel) and emit
// message.didCreate.
func TestUploadRulesAndEvent(t *testing.T) {
	e := newEnv(t, memoryStore)
	c := e.c
	bg := context.Background()
	hook, err := e.svc.CreateWebhook(bg, e.admin, "https://hooks.example.com/chat", []string{chat.EventMessageDidCreate})
	require.NoError(t, err)
	for _, id := range []string{"ch", "banned", "shut"} {
		_, err := c.CreateChannel(ctx(t), client.CreateChannelRequest{ChannelID: id, Type: "standard"})
		require.NoError(t, err)
	}
	img := pngImage(t, 20, 10, false)

	out, err := c.CreateImageMessage(ctx(t), "ch", "p.png", strings.NewReader(string(img)), &client.ImageOptions{Caption: "fine"})
	require.NoError(t, err)
	imageID := out.MessageID
	out, err = c.CreateFileMessage(ctx(t), "ch", "a.txt", strings.NewReader("abc"), nil)
	require.NoError(t, err)
	fileID := out.MessageID

	// message.didCreate for both, with the message as the API returned it.
	var ds []*chat.Delivery
	require.NoError(t, e.store.View(bg, func(tx chat.Tx) error {
		ds, err = tx.ListDeliveries(bg, hook.WebhookID, "", 100)
		return err
	}))
	types := map[string]string{}
	for _, d := range ds {
		require.Equal(t, chat.EventMessageDidCreate, d.Event)
		var env chat.Envelope
		require.NoError(t, json.Unmarshal(d.Body, &env))
		var data chat.MessageEventData
		require.NoError(t, json.Unmarshal(env.Data, &data))
		require.Len(t, data.Messages, 1)
		require.Equal(t, []string{e.admin}, []string{data.Users[0].UserID})
		types[data.Messages[0].MessageID] = string(data.Messages[0].Type)
	}
	require.Equal(t, map[string]string{imageID: "image", fileID: "file"}, types)

	// Blacklist and whitelist apply to captions.
	_, err = c.AddRules(ctx(t), chat.Blacklist, []string{"forbidden"}, true)
	require.NoError(t, err)
	_, err = c.CreateImageMessage(ctx(t), "ch", "p.png", strings.NewReader(string(img)), &client.ImageOptions{Caption: "a forbidden view"})
	requireCode(t, err, chat.CodeBlacklisted)
	_, err = c.AddRules(ctx(t), chat.Whitelist, []string{"example.com"}, false)
	require.NoError(t, err)
	_, err = c.CreateImageMessage(ctx(t), "ch", "p.png", strings.NewReader(string(img)), &client.ImageOptions{Caption: "see https://evil.test/x"})
	requireCode(t, err, chat.CodeLinkNotAllowed)

	// A user banned from a channel cannot upload there.
	require.NoError(t, c.BanUsers(ctx(t), "banned", []string{e.admin}))
	_, err = c.CreateImageMessage(ctx(t), "banned", "p.png", strings.NewReader(string(img)), nil)
	requireCode(t, err, chat.CodeUserBanned)
	_, err = c.CreateFileMessage(ctx(t), "banned", "a.txt", strings.NewReader("abc"), nil)
	requireCode(t, err, chat.CodeUserBanned)
	// Nor in a closed channel.
	require.NoError(t, c.CloseChannel(ctx(t), "shut"))
	_, err = c.CreateImageMessage(ctx(t), "shut", "p.png", strings.NewReader(string(img)), nil)
	requireCode(t, err, chat.CodeForbidden)

	// The refused uploads made no message and no event.
	require.NoError(t, e.store.View(bg, func(tx chat.Tx) error {
		ds, err = tx.ListDeliveries(bg, hook.WebhookID, "", 100)
		return err
	}))
	require.Len(t, ds, 2)

	// Closing a channel purges its files: the bytes are gone from the store.
	require.NoError(t, c.CloseChannel(ctx(t), "ch"))
	for id, name := range map[string]string{imageID: "small", fileID: "file"} {
		require.NoError(t, e.store.View(bg, func(tx chat.Tx) error {
			_, err := tx.GetBlob(bg, id, name)
			require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err), "blob %s/%s purged", id, name)
			return nil
		}))
	}
	_, err = c.GetFile(ctx(t), fileID, nil)
	requireCode(t, err, chat.CodeNotFound)
}

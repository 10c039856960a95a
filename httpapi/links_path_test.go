package httpapi_test

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/client"
)

// TestSignedLinkOpensOnlyItsPath rewrites signed links the way an attacker
// would: a file link sent to /images (which serves inline), an image link
// sent to another size or to /files, a link moved to another message, and
// size spelled in other cases and encodings. Each is 403/400300 (400 where
// the query itself is malformed) and none serves a byte.
func TestSignedLinkOpensOnlyItsPath(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memoryStore)
	c := e.c
	_, err := c.CreateChannel(ctx(t), client.CreateChannelRequest{ChannelID: "ch", Type: chat.ChannelTypeStandard})
	require.NoError(t, err)

	const page = `<html><body><script>document.title="owned"</script></body></html>`
	const svg = `<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`
	html, err := c.CreateFileMessage(ctx(t), "ch", "page.html", strings.NewReader(page), &client.FileOptions{ContentType: "text/html"})
	require.NoError(t, err)
	vec, err := c.CreateFileMessage(ctx(t), "ch", "logo.svg", strings.NewReader(svg), &client.FileOptions{ContentType: "image/svg+xml"})
	require.NoError(t, err)
	img, err := c.CreateImageMessage(ctx(t), "ch", "photo.png", bytes.NewReader(pngImage(t, 800, 400, false)), &client.ImageOptions{ContentType: "image/png"})
	require.NoError(t, err)
	other, err := c.CreateImageMessage(ctx(t), "ch", "other.png", bytes.NewReader(pngImage(t, 300, 200, false)), &client.ImageOptions{ContentType: "image/png"})
	require.NoError(t, err)

	// split returns a link's path (below /api/v2) and its exp and sig.
	split := func(link string) (string, string, string) {
		u, err := url.Parse(link)
		require.NoError(t, err)
		return strings.TrimPrefix(u.Path, "/api/v2"), u.Query().Get("exp"), u.Query().Get("sig")
	}
	// refused asserts that a rewritten link opens nothing.
	refused := func(path string, code chat.Code, body string) {
		t.Helper()
		r := e.do(http.MethodGet, path, "", "", "Authorization", "")
		require.NotEqual(t, http.StatusOK, r.status, "%s served %q", path, r.body[:min(len(r.body), 40)])
		require.NotContains(t, string(r.body), body, path)
		requireError(t, r, code, "")
	}

	for _, f := range []struct {
		msg  *client.Message
		body string
		ct   string
	}{{html, page, "text/html"}, {vec, svg, "image/svg+xml"}} {
		fd, ok := f.msg.File()
		require.True(t, ok)
		p, exp, sig := split(fd.URL)
		require.Equal(t, "/messages/"+f.msg.MessageID+"/files", p)
		ls := "&exp=" + exp + "&sig=" + sig
		images := "/messages/" + f.msg.MessageID + "/images"

		// The link itself downloads, never inline, with headers that keep
		// a browser from running it even if it were shown.
		r := e.anon(fd.URL)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.Equal(t, f.body, string(r.body))
		requireSafeDownload(t, r, f.ct)
		// The same download with a token, too.
		r = e.do(http.MethodGet, p, "", "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		requireSafeDownload(t, r, f.ct)

		// The file link on /images, as size=file (the rendition name the
		// signature covers) and as every image size.
		refused(images+"?size=file"+ls, chat.CodeForbidden, f.body)
		refused(images+"?"+strings.TrimPrefix(ls, "&"), chat.CodeForbidden, f.body)
		for _, size := range []string{"small", "medium", "large", "full"} {
			refused(images+"?size="+size+ls, chat.CodeForbidden, f.body)
		}
		// size in other cases and encodings.
		for _, size := range []string{"FILE", "File", "fIlE", "%66ile", "fil%65", "%66%69%6C%65", "%66%69%6c%65",
			"file%20", "%20file", "file+", "file%0A", "file%09", "file/", "./file", "files", "file%2F", "%EF%BD%86ile"} {
			refused(images+"?size="+size+ls, chat.CodeForbidden, f.body)
		}
		// Where size comes twice, or as an array, the query is malformed.
		refused(images+"?size=file&size=file"+ls, chat.CodeBadRequest, f.body)
		refused(images+"?size=file%00"+ls, chat.CodeBadRequest, f.body)
		refused(images+"?size[]=file"+ls, chat.CodeBadRequest, f.body)
		refused(images+"?size[0]=file"+ls, chat.CodeBadRequest, f.body)
		// A differently spelled parameter name is not size: the default
		// size (medium) is asked for, which the link does not sign.
		refused(images+"?SIZE=file"+ls, chat.CodeForbidden, f.body)
		refused(images+"?Size=file"+ls, chat.CodeForbidden, f.body)
		// The file link on another message.
		refused("/messages/"+img.MessageID+"/files?"+strings.TrimPrefix(ls, "&"), chat.CodeForbidden, f.body)
	}

	// An image link opens its own size only.
	id, ok := img.Image()
	require.True(t, ok)
	p, exp, sig := split(id.URLs[chat.ImageSmall])
	ls := "&exp=" + exp + "&sig=" + sig
	const jpegMagic = "\xff\xd8\xff"
	r := e.anon(id.URLs[chat.ImageSmall])
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "image/jpeg", r.header.Get("Content-Type")) // an opaque image
	require.True(t, strings.HasPrefix(r.header.Get("Content-Disposition"), "inline; "))
	for _, size := range []string{"medium", "large", "full", "SMALL", "Small", "small%20", "file"} {
		refused(p+"?size="+size+ls, chat.CodeForbidden, jpegMagic)
	}
	refused(p+"?"+strings.TrimPrefix(ls, "&"), chat.CodeForbidden, jpegMagic) // medium by default
	// Percent-encoding spells the same size: that is the link itself.
	require.Equal(t, http.StatusOK, e.anon("/api/v2"+p+"?size=%73mall"+ls).status)
	// On /files of the same message, and of a file message.
	refused("/messages/"+img.MessageID+"/files?size=small"+ls, chat.CodeForbidden, jpegMagic)
	refused("/messages/"+html.MessageID+"/files?size=small"+ls, chat.CodeForbidden, page)
	refused("/messages/"+html.MessageID+"/images?size=small"+ls, chat.CodeForbidden, page)
	// On another image message (message A's link used on message B).
	refused("/messages/"+other.MessageID+"/images?size=small"+ls, chat.CodeForbidden, jpegMagic)
	// And B's own link still opens B.
	od, _ := other.Image()
	require.Equal(t, http.StatusOK, e.anon(od.URLs[chat.ImageSmall]).status)
}

// requireSafeDownload asserts the headers every file download carries: an
// attachment with the stored type, no sniffing, and a policy under which
// the document can run nothing and load nothing.
func requireSafeDownload(t *testing.T, r *rawResponse, contentType string) {
	t.Helper()
	require.Equal(t, contentType, r.header.Get("Content-Type"))
	require.True(t, strings.HasPrefix(r.header.Get("Content-Disposition"), "attachment; "), r.header.Get("Content-Disposition"))
	require.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"))
	csp := r.header.Get("Content-Security-Policy")
	require.Contains(t, csp, "default-src 'none'")
	require.Contains(t, csp, "sandbox")
}

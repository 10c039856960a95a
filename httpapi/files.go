package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"path"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/media"
)

// upload is a parsed multipart upload: its fields and its one file.
type upload struct {
	fields      *params
	fileName    string
	contentType string // of the file part, as declared
	data        []byte
	hasFile     bool
}

// readUpload streams a multipart/form-data body. Fields are read as they
// come (all of them together, names included, at most MaxBodyBytes, so
// many small fields cannot fill memory either); the part named "file" is read into
// memory, at most MaxUploadBytes (413 as soon as the limit is crossed).
// Before the file is read, check is called with the fields seen so far, so
// a client that sends channelId before the file is refused early; check
// may be nil. sniff, when not nil, is called with the first bytes of the
// file and may refuse it before the rest is read.
func (h *handler) readUpload(w http.ResponseWriter, r *http.Request, check func(*params) error, sniff func([]byte) error) (*upload, error) {
	mt, ps, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || ps["boundary"] == "" {
		return nil, chat.Errorf(chat.CodeUnsupportedMedia, "Content-Type must be multipart/form-data with a boundary")
	}
	if err := checkEncoding(r); err != nil {
		return nil, err
	}
	total := h.cfg.MaxUploadBytes + h.cfg.MaxBodyBytes
	if r.ContentLength > total {
		return nil, uploadTooLarge(h.cfg.MaxUploadBytes)
	}
	mr := multipart.NewReader(http.MaxBytesReader(serverWriter(r, w), r.Body, total), ps["boundary"])
	vals := url.Values{}
	up := &upload{}
	fieldBudget := h.cfg.MaxBodyBytes // what the fields may still use
	partErr := func(err error) error {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return uploadTooLarge(h.cfg.MaxUploadBytes)
		}
		return badRequest("body", "malformed multipart/form-data")
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, partErr(err)
		}
		name := part.FormName()
		if name != "file" {
			// Each field costs its name and value plus one byte, so that
			// empty fields count too.
			fieldBudget -= int64(len(name)) + 1
			if fieldBudget < 0 {
				return nil, fieldsTooLarge(h.cfg.MaxBodyBytes)
			}
			b, err := io.ReadAll(io.LimitReader(part, fieldBudget+1))
			if err != nil {
				return nil, partErr(err)
			}
			if fieldBudget -= int64(len(b)); fieldBudget < 0 {
				return nil, fieldsTooLarge(h.cfg.MaxBodyBytes)
			}
			if name != "" {
				vals.Add(name, string(b))
			}
			continue
		}
		if up.hasFile {
			return nil, badRequest("file", "send only one file")
		}
		up.hasFile = true
		up.fileName = part.FileName()
		up.contentType = part.Header.Get("Content-Type")
		if check != nil {
			p, err := fieldParams(vals)
			if err != nil {
				return nil, err
			}
			if err := check(p); err != nil {
				return nil, err
			}
		}
		var buf bytes.Buffer
		limit := h.cfg.MaxUploadBytes
		if sniff != nil {
			n, err := io.CopyN(&buf, part, min(512, limit+1))
			if err != nil && err != io.EOF {
				return nil, partErr(err)
			}
			if err := sniff(buf.Bytes()[:min(n, limit)]); err != nil {
				return nil, err
			}
		}
		if _, err := io.Copy(&buf, io.LimitReader(part, limit+1-int64(buf.Len()))); err != nil {
			return nil, partErr(err)
		}
		if int64(buf.Len()) > limit {
			return nil, uploadTooLarge(limit)
		}
		up.data = buf.Bytes()
	}
	p, err := fieldParams(vals)
	if err != nil {
		return nil, err
	}
	if !up.hasFile {
		return nil, badRequest("file", "is required (a multipart part named file)")
	}
	up.fields = p
	return up, nil
}

func fieldParams(vals url.Values) (*params, error) {
	v, err := decodeValues(vals, "body")
	if err != nil {
		return nil, err
	}
	return newParams(v), nil
}

func fieldsTooLarge(limit int64) *chat.Error {
	return chat.Errorf(chat.CodeTooLarge, "the form fields beside the file are larger than %d bytes in all", limit)
}

func uploadTooLarge(limit int64) *chat.Error {
	return chat.Errorf(chat.CodeTooLarge, "file: the upload is larger than %d bytes", limit)
}

// checkPost returns an early check for readUpload: the Service's posting
// rules for the channel and parent given so far.
func (h *handler) checkPost(r *http.Request) func(*params) error {
	return func(p *params) error {
		ch, parent := p.str("channelId"), p.str("parentId")
		if err := p.Err(); err != nil || ch == "" {
			return err
		}
		return h.svc.CheckPost(r.Context(), actor(r), ch, parent)
	}
}

// createImageMessage serves POST /messages/images (multipart: channelId,
// file, caption, tags, parentId, fullImage).
func (h *handler) createImageMessage(w http.ResponseWriter, r *http.Request) error {
	sniff := func(b []byte) error {
		if _, ok := media.Sniff(b); !ok {
			return notAnImage()
		}
		return nil
	}
	up, err := h.readUpload(w, r, h.checkPost(r), sniff)
	if err != nil {
		return err
	}
	p := up.fields
	in := chat.CreateImageMessageInput{
		ChannelID: p.str("channelId"),
		Caption:   p.str("caption"),
		Tags:      p.strs("tags"),
		ParentID:  p.str("parentId"),
		FileName:  up.fileName,
	}
	keepFull := p.boolean("fullImage")
	if err := p.Err(); err != nil {
		return err
	}
	opt := media.Options{
		MaxPixels:       h.cfg.MaxImagePixels,
		MaxDecodedBytes: h.cfg.MaxImageMemory,
		MaxBytes:        h.cfg.MaxUploadBytes,
		KeepFull:        keepFull,
		JPEGQuality:     h.cfg.JPEGQuality,
	}
	// The header decides the limits, and the memory to wait for, before
	// any pixel is decoded.
	hd, err := media.ReadHeader(up.data, opt)
	if err != nil {
		return imageError(err)
	}
	release, err := h.images.acquire(r.Context(), hd.Memory)
	if err != nil {
		if r.Context().Err() == nil {
			w.Header().Set("Retry-After", strconv.Itoa(h.images.retryAfter()))
		}
		return err
	}
	res, err := func() (*media.Result, error) {
		defer release() // even if decoding panics
		res, err := media.ProcessBytes(up.data, opt)
		if hd.Memory >= collectAfter {
			// The decoded pixels are garbage now. Collect them before the
			// next upload may start, so that it reuses their memory: a
			// process running with a high GOGC (the example server uses
			// 400) would otherwise grow its heap to several times the
			// budget before collecting.
			runtime.GC()
		}
		return res, err
	}()
	if err != nil {
		return imageError(err)
	}
	in.MimeType, in.Width, in.Height = res.SourceMIME, res.Width, res.Height
	for _, rd := range res.Renditions {
		in.Renditions = append(in.Renditions, chat.ImageRendition{Name: rd.Name, ContentType: rd.ContentType, Width: rd.Width, Height: rd.Height, Data: rd.Data})
	}
	out, err := h.svc.CreateImageMessage(r.Context(), actor(r), in)
	return h.reply(w, out, err)
}

// imageError translates an error of package media.
func imageError(err error) error {
	switch {
	case errors.Is(err, media.ErrNotImage):
		return notAnImage()
	case errors.Is(err, media.ErrTooLarge):
		why := strings.TrimPrefix(strings.TrimPrefix(err.Error(), media.ErrTooLarge.Error()), ": ")
		return chat.Errorf(chat.CodeTooLarge, "file: the image is too large (%s)", why)
	}
	return err
}

// collectAfter is the estimated memory of an image above which the
// garbage collector runs once the image is processed: one collection
// costs milliseconds, decoding such an image seconds.
const collectAfter = 64 << 20

// imageGate bounds the estimated memory of the images a handler decodes
// at once (Config.ImageMemoryBudget). An upload that does not fit waits
// for its share in arrival order, at most Config.ImageQueueTimeout.
type imageGate struct {
	sem    *semaphore.Weighted
	budget int64
	wait   time.Duration
	// waiting counts the uploads waiting now.
	waiting atomic.Int64
}

func newImageGate(budget int64, wait time.Duration) *imageGate {
	return &imageGate{sem: semaphore.NewWeighted(budget), budget: budget, wait: wait}
}

// acquire takes n bytes of the budget (all of it when n is larger),
// waiting at most the queue timeout. The caller must call release once
// done. A wait that times out is CodeUnavailable; a request whose client
// went away returns its context's error.
func (g *imageGate) acquire(ctx context.Context, n int64) (release func(), err error) {
	n = min(max(n, 1), g.budget)
	if !g.sem.TryAcquire(n) {
		g.waiting.Add(1)
		wctx, cancel := context.WithTimeout(ctx, g.wait)
		err := g.sem.Acquire(wctx, n)
		cancel()
		g.waiting.Add(-1)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, chat.Errorf(chat.CodeUnavailable, "file: the server is decoding other images; retry after %d s", g.retryAfter())
		}
	}
	return func() { g.sem.Release(n) }, nil
}

// retryAfter is the Retry-After of a refused upload, in whole seconds: the
// queue timeout, at least 1 and at most 5 (a retry queues again).
func (g *imageGate) retryAfter() int {
	return min(max(int((g.wait+time.Second-1)/time.Second), 1), 5)
}

func notAnImage() *chat.Error {
	return chat.Errorf(chat.CodeUnsupportedMedia, "file: not a supported image (JPEG, PNG, GIF or WebP)")
}

// createFileMessage serves POST /messages/files (multipart: channelId,
// file, tags, parentId).
func (h *handler) createFileMessage(w http.ResponseWriter, r *http.Request) error {
	up, err := h.readUpload(w, r, h.checkPost(r), nil)
	if err != nil {
		return err
	}
	p := up.fields
	in := chat.CreateFileMessageInput{
		ChannelID: p.str("channelId"),
		Tags:      p.strs("tags"),
		ParentID:  p.str("parentId"),
		FileName:  up.fileName,
		MimeType:  fileContentType(up.contentType, up.data),
		Data:      up.data,
	}
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.CreateFileMessage(r.Context(), actor(r), in)
	return h.reply(w, out, err)
}

// fileContentType returns the declared content type of a file part when
// it is a well-formed, specific media type, else the sniffed one.
func fileContentType(declared string, data []byte) string {
	if declared != "" && len(declared) <= 255 {
		if mt, ps, err := mime.ParseMediaType(declared); err == nil && strings.Contains(mt, "/") && mt != "application/octet-stream" {
			if s := mime.FormatMediaType(mt, ps); s != "" {
				return s
			}
		}
	}
	return http.DetectContentType(data)
}

// imageSizes are the renditions GET /messages/{messageId}/images serves.
var imageSizes = map[string]bool{"small": true, "medium": true, "large": true, media.FullName: true}

// getImage serves GET /messages/{messageId}/images?size=small|medium|large|full.
// size defaults to medium; full exists only for images uploaded with
// fullImage=true (else 404).
func (h *handler) getImage(w http.ResponseWriter, r *http.Request) error {
	id, p, err := h.pathAndParams(w, r, "messageId")
	if err != nil {
		return err
	}
	size := p.str("size")
	link := signedLink(r, p)
	if err := p.Err(); err != nil {
		return err
	}
	if size == "" {
		size = "medium"
	}
	if !imageSizes[size] {
		if link != nil {
			// The signature covers the rendition's name, and a name opens
			// one path only: "file" is the /files download, never an
			// inline image. Any other size is an altered link.
			return errLinkPath()
		}
		return badRequest("size", "must be small, medium, large or full")
	}
	return h.serveBlob(w, r, id, size, "inline", link)
}

// errLinkPath refuses a signed link used on a path or size other than
// its own (docs/api.md, signed links).
func errLinkPath() error {
	return chat.Errorf(chat.CodeForbidden, "the link is not valid for this path: its signature opens only the download it was made for (links must be used exactly as the API returned them)")
}

// getFile serves GET /messages/{messageId}/files.
func (h *handler) getFile(w http.ResponseWriter, r *http.Request) error {
	id, p, err := h.pathAndParams(w, r, "messageId")
	if err != nil {
		return err
	}
	link := signedLink(r, p)
	if err := p.Err(); err != nil {
		return err
	}
	return h.serveBlob(w, r, id, "file", "attachment", link)
}

// linkParams are the exp and sig parameters of a signed link.
type linkParams struct{ exp, sig string }

// signedLink returns the link parameters of a signed link request, or nil
// for a request that linkOrAuth authenticated with a token. Both decide by
// isLinkRequest, so a request let through without a token is always
// verified as a link.
func signedLink(r *http.Request, p *params) *linkParams {
	if !isLinkRequest(r) {
		return nil
	}
	return &linkParams{exp: p.str("exp"), sig: p.str("sig")}
}

// serveBlob writes a stored file or image rendition with safe download
// headers: nosniff, a Content-Security-Policy under which the response
// can run and load nothing (default-src 'none'; sandbox), and the
// disposition (inline only for raster image types); http.ServeContent
// answers Range, If-None-Match and If-Modified-Since. With link set the signed link is verified instead of
// the caller's rights.
func (h *handler) serveBlob(w http.ResponseWriter, r *http.Request, messageID, name, disposition string, link *linkParams) error {
	var b *chat.Blob
	var m *chat.Message
	var err error
	if link != nil {
		b, m, err = h.svc.OpenLink(r.Context(), messageID, name, link.exp, link.sig)
	} else {
		b, m, err = h.svc.GetMessageBlob(r.Context(), actor(r), messageID, name)
	}
	if err != nil {
		return err
	}
	fileName, _ := m.Data["fileName"].(string)
	if fileName == "" {
		fileName = "file"
	}
	if name != "file" {
		fileName = withExtension(fileName, b.ContentType)
	}
	sum := sha256.Sum256(b.Data)
	hd := w.Header()
	ct := b.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	if disposition == "inline" && !inlineTypes[ct] {
		disposition = "attachment"
	}
	hd.Set("Content-Type", ct)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	hd.Set("Content-Disposition", contentDisposition(disposition, fileName))
	hd.Set("ETag", `"`+hex.EncodeToString(sum[:16])+`"`)
	hd.Set("Cache-Control", "private, no-cache")
	http.ServeContent(w, r, "", m.CreatedAt.Time, bytes.NewReader(b.Data))
	return nil
}

// inlineTypes are the content types shown inline: the raster formats of
// image renditions, which cannot carry script. Anything else is served as
// an attachment, even under /images.
var inlineTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// withExtension replaces the extension of an image's file name with the
// one of the rendition's content type (renditions may be re-encoded).
func withExtension(name, contentType string) string {
	ext := ""
	switch contentType {
	case "image/jpeg":
		ext = ".jpg"
	case "image/png":
		ext = ".png"
	default:
		return name
	}
	if e := path.Ext(name); e != "" && len(e) <= 6 {
		name = strings.TrimSuffix(name, e)
	}
	return name + ext
}

// contentDisposition builds a Content-Disposition value with an ASCII
// fallback filename and the exact UTF-8 name (RFC 6266, RFC 8187).
func contentDisposition(disposition, name string) string {
	var ascii strings.Builder
	for _, c := range name {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '%' {
			ascii.WriteByte('_')
		} else {
			ascii.WriteRune(c)
		}
	}
	var enc strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0 {
			enc.WriteByte(c)
		} else {
			fmt.Fprintf(&enc, "%%%02X", c)
		}
	}
	return fmt.Sprintf(`%s; filename="%s"; filename*=UTF-8''%s`, disposition, ascii.String(), enc.String())
}

package chat

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// Signed file links (docs/api.md section 1 (Permissions of end users)). Every image message returned by
// the Service carries data.urls, a map from each kept size to a path that
// serves that rendition without an access token, and every file message
// carries data.url. A link is
//
//	<APIPrefix>/messages/<messageId>/images?size=<size>&exp=<unix seconds>&sig=<signature>
//	<APIPrefix>/messages/<messageId>/files?exp=<unix seconds>&sig=<signature>
//
// where the signature is the unpadded base64url HMAC-SHA256, keyed with
// Config.LinkKey, of the message id, the rendition name ("file" for a
// file) and the expiry. The links are computed each time a message is
// returned, never stored; the expiry is the time of the response plus
// Config.LinkTTL rounded up to the next whole hour, so every response
// within one hour repeats the same links (and browsers can cache them).

// DefaultLinkTTL is the default lifetime of a signed file link.
const DefaultLinkTTL = 24 * time.Hour

// DefaultAPIPrefix is the default public path prefix of the HTTP API.
const DefaultAPIPrefix = "/api/v2"

// linkSigner computes and checks link signatures. Keyed HMAC states are
// pooled: hmac.New hashes the key into the inner and outer pads on every
// call, while a pooled hash keeps them and Reset restores them.
type linkSigner struct {
	key    []byte
	prefix string
	ttl    time.Duration
	pool   sync.Pool // of *linkMAC
}

// linkMAC is a keyed HMAC with scratch space for its input and output.
type linkMAC struct {
	h   hash.Hash
	in  []byte
	sum []byte
}

func newLinkSigner(key []byte, prefix string, ttl time.Duration) *linkSigner {
	l := &linkSigner{key: key, prefix: prefix, ttl: ttl}
	l.pool.New = func() any {
		return &linkMAC{h: hmac.New(sha256.New, l.key), in: make([]byte, 0, 128), sum: make([]byte, 0, sha256.Size)}
	}
	return l
}

// sigLen is the length of an encoded signature: 32 bytes in unpadded
// base64url.
var sigLen = base64.RawURLEncoding.EncodedLen(sha256.Size)

// sign appends the encoded signature of (messageID, name, exp) to dst.
// The three are joined with NUL bytes, which ids and names cannot contain,
// so different triples never sign the same input.
func (l *linkSigner) sign(dst []byte, messageID, name string, exp int64) []byte {
	m := l.pool.Get().(*linkMAC)
	m.in = append(m.in[:0], messageID...)
	m.in = append(m.in, 0)
	m.in = append(m.in, name...)
	m.in = append(m.in, 0)
	m.in = strconv.AppendInt(m.in, exp, 10)
	m.h.Reset()
	m.h.Write(m.in)
	m.sum = m.h.Sum(m.sum[:0])
	dst = base64.RawURLEncoding.AppendEncode(dst, m.sum)
	l.pool.Put(m)
	return dst
}

// expiry returns the expiry of links made at now: now plus the TTL,
// rounded up to the whole hour, in Unix seconds.
func (l *linkSigner) expiry(now time.Time) int64 {
	t := now.Add(l.ttl)
	e := t.Truncate(time.Hour)
	if e.Before(t) {
		e = e.Add(time.Hour)
	}
	return e.Unix()
}

// link appends the signed path of a message's rendition (name "file" for a
// file message) to dst.
func (l *linkSigner) link(dst []byte, messageID, name string, exp int64) []byte {
	dst = append(dst, l.prefix...)
	dst = append(dst, "/messages/"...)
	dst = append(dst, url.PathEscape(messageID)...)
	if name == "file" {
		dst = append(dst, "/files?exp="...)
	} else {
		dst = append(dst, "/images?size="...)
		dst = append(dst, url.QueryEscape(name)...)
		dst = append(dst, "&exp="...)
	}
	dst = strconv.AppendInt(dst, exp, 10)
	dst = append(dst, "&sig="...)
	return l.sign(dst, messageID, name, exp)
}

// addLinks sets data.urls of a live image message and data.url of a live
// file message, with links expiring at exp. m.Data must be the message's
// own map (the Service's copy of what the store returned or was given).
func (l *linkSigner) addLinks(m *Message, exp int64, buf []byte) []byte {
	if m.IsDeleted || m.Data == nil {
		return buf
	}
	switch m.Type {
	case MessageTypeImage:
		sizes, _ := m.Data["sizes"].([]any)
		urls := make(map[string]any, len(sizes))
		for _, s := range sizes {
			sz, _ := s.(map[string]any)
			name, _ := sz["size"].(string)
			if name == "" {
				continue
			}
			buf = l.link(buf[:0], m.MessageID, name, exp)
			urls[name] = string(buf)
		}
		m.Data["urls"] = urls
	case MessageTypeFile:
		buf = l.link(buf[:0], m.MessageID, "file", exp)
		m.Data["url"] = string(buf)
	}
	return buf
}

// verify checks a link's signature in constant time, then its expiry.
func (l *linkSigner) verify(messageID, name string, exp int64, sig string, now time.Time) error {
	var want [64]byte
	w := l.sign(want[:0], messageID, name, exp)
	if len(sig) != sigLen || !hmac.Equal(w, []byte(sig)) {
		return Errorf(CodeForbidden, "the link is not valid: its signature does not match (links must be used exactly as the API returned them)")
	}
	if now.Unix() >= exp {
		return Errorf(CodeForbidden, "the link expired at %s: read the message again for a fresh link", time.Unix(exp, 0).UTC().Format(time.RFC3339))
	}
	return nil
}

// present fills the derived fields of messages about to be returned: empty
// collections instead of nil, and the signed file links. Every response
// and event that carries messages goes through it.
func (s *Service) present(ms ...*Message) {
	exp := s.links.expiry(s.now())
	var buf []byte
	for _, m := range ms {
		presentMessage(m)
		if m.Type == MessageTypeImage || m.Type == MessageTypeFile {
			if buf == nil {
				buf = make([]byte, 0, 256)
			}
			buf = s.links.addLinks(m, exp, buf)
		}
	}
}

// OpenLink serves a signed file link: it checks the signature of
// (messageID, name, exp) against sig in constant time, then the expiry,
// and returns the blob as GetMessageBlob does. name is the image size
// (small, medium, large, full) or "file"; exp is the link's exp parameter
// (Unix seconds, decimal). No access token is involved: the link is the
// permission. The signature covers the name, and each name has one path:
// a caller serves "file" only as the file download (an attachment) and an
// image size only as that size, and refuses any other pairing of path and
// name with CodeForbidden before calling OpenLink, as package httpapi does. Errors: CodeBadRequest (exp or sig missing, exp not an
// integer), CodeForbidden (altered or expired link), CodeNotFound
// (the message was deleted, or the rendition not kept).
func (s *Service) OpenLink(ctx context.Context, messageID, name, exp, sig string) (*Blob, *Message, error) {
	if exp == "" {
		return nil, nil, invalid("exp", "is required in a signed link")
	}
	e, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		return nil, nil, invalid("exp", "must be an integer (Unix seconds)")
	}
	if sig == "" {
		return nil, nil, invalid("sig", "is required in a signed link")
	}
	if err := s.links.verify(messageID, name, e, sig, s.now()); err != nil {
		return nil, nil, err
	}
	return s.messageBlob(ctx, "", messageID, name, true)
}

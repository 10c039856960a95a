package chat

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"
)

// benchPage returns a page of 20 image messages with three sizes each,
// with data as the stores return it (decoded JSON).
func benchPage() []*Message {
	ms := make([]*Message, 20)
	for i := range ms {
		d := ImageData{Caption: "a picture", FileID: fmt.Sprintf("01a2055124680007377b%04x", i), FileName: "cat.png", MimeType: "image/png",
			Width: 800, Height: 600, Sizes: []ImageSize{
				{Size: ImageSmall, Width: 160, Height: 120, MimeType: "image/jpeg", FileSize: 8924},
				{Size: ImageMedium, Width: 600, Height: 450, MimeType: "image/jpeg", FileSize: 65326},
				{Size: ImageLarge, Width: 800, Height: 600, MimeType: "image/jpeg", FileSize: 95087},
			}}
		now := NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		ms[i] = &Message{MessageID: fmt.Sprintf("01a2055124710008ed0b%04x", i), ChannelID: "general", UserID: "alice",
			Type: MessageTypeImage, Data: dataOf(d), CreatedAt: now, UpdatedAt: now, ChannelSegment: int64(i + 1)}
	}
	return ms
}

// signNew is sign without the pool: a new keyed HMAC per link.
func signNew(key, dst []byte, messageID, name string, exp int64) []byte {
	h := hmac.New(sha256.New, key)
	in := make([]byte, 0, 128)
	in = append(in, messageID...)
	in = append(in, 0)
	in = append(in, name...)
	in = append(in, 0)
	in = strconv.AppendInt(in, exp, 10)
	h.Write(in)
	return base64.RawURLEncoding.AppendEncode(dst, h.Sum(nil))
}

func TestSignNewMatchesSign(t *testing.T) {
	l := newLinkSigner([]byte("bench key"), DefaultAPIPrefix, DefaultLinkTTL)
	if a, b := string(l.sign(nil, "m1", "small", 42)), string(signNew(l.key, nil, "m1", "small", 42)); a != b {
		t.Fatalf("pooled %s, new %s", a, b)
	}
}

// BenchmarkFileLinks measures the links of a page of 20 image messages
// (60 links): pooled keyed HMACs (what present does), a new HMAC per
// link, and, as the ceiling they are weighed against, encoding the same
// page as the response's JSON.
func BenchmarkFileLinks(b *testing.B) {
	key := []byte("0123456789abcdef0123456789abcdef")
	l := newLinkSigner(key, DefaultAPIPrefix, DefaultLinkTTL)
	s := &Service{links: l, now: time.Now}
	b.Run("page20/pooled", func(b *testing.B) {
		ms := benchPage()
		b.ReportAllocs()
		for b.Loop() {
			s.present(ms...)
		}
	})
	b.Run("page20/newHMAC", func(b *testing.B) {
		ms := benchPage()
		exp := l.expiry(time.Now())
		b.ReportAllocs()
		for b.Loop() {
			for _, m := range ms {
				presentMessage(m)
				sizes := m.Data["sizes"].([]any)
				urls := make(map[string]any, len(sizes))
				for _, sz := range sizes {
					name := sz.(map[string]any)["size"].(string)
					buf := []byte(l.prefix + "/messages/" + m.MessageID + "/images?size=" + name + "&exp=" + strconv.FormatInt(exp, 10) + "&sig=")
					urls[name] = string(signNew(key, buf, m.MessageID, name, exp))
				}
				m.Data["urls"] = urls
			}
		}
	})
	b.Run("sign/pooled", func(b *testing.B) {
		buf := make([]byte, 0, 64)
		b.ReportAllocs()
		for b.Loop() {
			buf = l.sign(buf[:0], "01a2055124710008ed0b0001", "small", 1767412800)
		}
	})
	b.Run("sign/newHMAC", func(b *testing.B) {
		buf := make([]byte, 0, 64)
		b.ReportAllocs()
		for b.Loop() {
			buf = signNew(key, buf[:0], "01a2055124710008ed0b0001", "small", 1767412800)
		}
	})
	b.Run("page20/ceiling-json", func(b *testing.B) {
		ms := benchPage()
		s.present(ms...)
		list := MessageList{Users: []User{}}
		for _, m := range ms {
			list.Messages = append(list.Messages, *m)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(&list); err != nil {
				b.Fatal(err)
			}
		}
	})
}

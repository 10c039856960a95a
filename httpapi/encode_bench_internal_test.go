package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
)

// BenchmarkEncodeMessagePage measures what the handler spends writing the
// answer of POST /messages for a page of 50 text messages by 4 authors
// (the users side-loaded), on the *chat.MessageList the Service returns:
// "cached" is writeResult, as reply calls it, for a page read before
// (every message's encoding is in messageCache); "uncached" is
// writeResult of the page with every message changed since the last one
// (every message encoded, and its cache entry replaced); "reflect" is encoding/json
// on the list itself, for comparison in the same run. On a busy machine
// cpu-ns/op (the process's CPU time per page) is steadier than ns/op.
//
//	go test -run '^$' -bench EncodeMessagePage -benchmem ./httpapi
func BenchmarkEncodeMessagePage(b *testing.B) {
	page := benchMessagePage(b, 50)
	for _, v := range []struct {
		name  string
		write func(http.ResponseWriter)
	}{
		{"cached", func(w http.ResponseWriter) { writeResult(w, page) }},
		{"uncached", func(w http.ResponseWriter) {
			for i := range page.Messages {
				page.Messages[i].ChildrenNumber++ // every message changed since it was last written
			}
			writeResult(w, page)
		}},
		{"reflect", func(w http.ResponseWriter) { normalize(page); writeJSON(w, http.StatusOK, page) }},
	} {
		got := &bodyWriter{h: http.Header{}}
		v.write(got)
		if want, _ := json.Marshal(page); got.b.String() != string(want)+"\n" {
			b.Fatalf("%s: not the bytes of json.Marshal", v.name)
		}
		b.Run(v.name, func(b *testing.B) {
			w := &countingWriter{h: http.Header{}}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			for i := 0; i < b.N; i++ {
				clear(w.h)
				w.n = 0
				v.write(w)
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(w.n), "bytes")
		})
	}
}

// benchMessagePage returns the newest n messages of a channel as the
// Service answers a query for them.
func benchMessagePage(tb testing.TB, n int) *chat.MessageList {
	tb.Helper()
	ctx := context.Background()
	svc, err := chat.New(ctx, memory.New(), chat.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	authors := []string{"alice", "bob", "carol", "dave"}
	admin, _, err := svc.CreateAdmin(ctx, "", "ops", "")
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "general", Type: "standard", UserIDs: authors}); err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < n; i++ {
		in := chat.CreateMessageInput{ChannelID: "general", Type: chat.MessageTypeText,
			Data: map[string]any{"text": fmt.Sprintf("message %d: about as long as a short line of chat, with a \"quote\"", i)}}
		if i%5 == 0 {
			in.Tags = []string{"news", "team"}
		}
		if _, err := svc.CreateMessage(ctx, authors[i%len(authors)], in); err != nil {
			tb.Fatal(err)
		}
	}
	page, err := svc.QueryMessages(ctx, "alice", chat.MessageQuery{ChannelID: "general", Last: n})
	if err != nil {
		tb.Fatal(err)
	}
	if len(page.Messages) != n || len(page.Users) != len(authors) {
		tb.Fatalf("%d messages, %d users", len(page.Messages), len(page.Users))
	}
	return page
}

// countingWriter is a ResponseWriter that counts the bytes written.
type countingWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *countingWriter) Header() http.Header         { return w.h }
func (w *countingWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }
func (w *countingWriter) WriteHeader(code int)        { w.status = code }

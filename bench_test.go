package chat_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
)

// benchText is a 300-character message with one allowed link.
var benchText = func() string {
	s := "Hello team, the release notes for this week are ready. Please read them at https://docs.example.com/pub/notes " +
		"before the meeting and bring your questions. We will go through the open items one by one and decide who takes " +
		"which task next. Thanks again for all the good work on the new search!"
	for len(s) < 300 {
		s += " ok"
	}
	return s[:300]
}()

func benchService(b *testing.B, blackWords int) (*chat.Service, string) {
	b.Helper()
	ctx := context.Background()
	svc, err := chat.New(ctx, memory.New(), chat.Config{})
	if err != nil {
		b.Fatal(err)
	}
	a, _, err := svc.CreateAdmin(ctx, "", "bench", "")
	if err != nil {
		b.Fatal(err)
	}
	var words []string
	for i := 0; i < blackWords; i++ {
		words = append(words, fmt.Sprintf("badword%d", i))
	}
	// A few regex and exact-word rules among the plain words.
	for i := 0; i < blackWords-5; i += 1000 {
		if _, err := svc.AddRules(ctx, a.UserID, chat.Blacklist, words[i:min(i+1000, blackWords-5)], false); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := svc.AddRules(ctx, a.UserID, chat.Blacklist, []string{"darn", "heck", "b[a4]dw[o0]rd", "fr[i1]ck", "sh[o0]ot"}, true); err != nil {
		b.Fatal(err)
	}
	var white []string
	for i := 0; i < 19; i++ {
		white = append(white, fmt.Sprintf("site%d.example.org", i))
	}
	white = append(white, "docs.example.com")
	if _, err := svc.AddRules(ctx, a.UserID, chat.Whitelist, white, false); err != nil {
		b.Fatal(err)
	}
	if _, err := svc.CreateChannel(ctx, a.UserID, chat.CreateChannelInput{ChannelID: "bench", Type: "standard"}); err != nil {
		b.Fatal(err)
	}
	return svc, a.UserID
}

// BenchmarkCreateMessage measures message creation on the memory store
// with 100 blacklist and 20 whitelist rules and a 300-character text.
func BenchmarkCreateMessage(b *testing.B) {
	svc, admin := benchService(b, 100)
	ctx := context.Background()
	in := chat.CreateMessageInput{ChannelID: "bench", Type: "text", Data: map[string]any{"text": benchText}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := svc.CreateMessage(ctx, admin, in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkStoredMessageHeap reports what the memory store keeps per
// posted message: the live heap bytes and objects after a collection,
// divided by the messages posted. Every collection marks all of it, so
// fewer objects and pointers per message make each request's allocations
// cheaper to collect.
func BenchmarkStoredMessageHeap(b *testing.B) {
	svc, admin := benchService(b, 0)
	ctx := context.Background()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// A fresh text and ids per message, as from a request body.
		in := chat.CreateMessageInput{ChannelID: strings.Clone("bench"), Type: chat.MessageType(strings.Clone("text")),
			Data: map[string]any{strings.Clone("text"): fmt.Sprintf("a message of about fifty bytes, number %d", i)}}
		if _, err := svc.CreateMessage(ctx, admin, in); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(svc)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "heapB/msg")
	b.ReportMetric(float64(int64(after.HeapObjects)-int64(before.HeapObjects))/float64(b.N), "objects/msg")
}

// BenchmarkQueryMessages measures a page of 20 from a 10,000-message
// channel.
func BenchmarkQueryMessages(b *testing.B) {
	svc, admin := benchService(b, 100)
	ctx := context.Background()
	in := chat.CreateMessageInput{ChannelID: "bench", Type: "text", Data: map[string]any{"text": benchText}}
	for i := 0; i < 10000; i++ {
		if _, err := svc.CreateMessage(ctx, admin, in); err != nil {
			b.Fatal(err)
		}
	}
	before := int64(5000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := svc.QueryMessages(ctx, admin, chat.MessageQuery{ChannelID: "bench", Before: &before, Last: 20})
		if err != nil || len(out.Messages) != 20 {
			b.Fatal(err)
		}
	}
}

// BenchmarkBlacklistScale shows that plain-word matching does not grow
// with the number of words: compare the ns/op of the sub-benchmarks.
func BenchmarkBlacklistScale(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("words=%d", n), func(b *testing.B) {
			svc, admin := benchService(b, n)
			ctx := context.Background()
			text := strings.Repeat("lorem ipsum dolor sit amet ", 11)
			in := chat.CreateMessageInput{ChannelID: "bench", Type: "text", Data: map[string]any{"text": text}}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := svc.CreateMessage(ctx, admin, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

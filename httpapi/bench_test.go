package httpapi_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/httpapi"
	"github.com/chatengine/chat/store/memory"
)

// discardWriter is a ResponseWriter that keeps only the status.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }

// BenchmarkCreateMessageHTTP measures POST /message through the handler
// (authentication, decoding, the Service, the memory store, encoding)
// without a network connection, as bench/loadgen's memory target
// configures it. Compare allocs/op between changes; the rate is better
// measured with bench/http.sh.
func BenchmarkCreateMessageHTTP(b *testing.B) {
	ctx := context.Background()
	svc, err := chat.New(ctx, memory.New(), chat.Config{})
	if err != nil {
		b.Fatal(err)
	}
	_, token, err := svc.CreateAdmin(ctx, "bench", "bench")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := svc.CreateChannel(ctx, "bench", chat.CreateChannel{ChannelID: "bench", Type: "standard", UserIDs: []string{"bench"}}); err != nil {
		b.Fatal(err)
	}
	h := httpapi.New(svc, httpapi.Config{Logger: slog.New(slog.DiscardHandler)})
	body := []byte(`{"channelId":"bench","type":"text","data":{"text":"a message of about fifty bytes from the load test"}}`)
	req, err := http.NewRequest("POST", "http://127.0.0.1/message", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.ContentLength = int64(len(body))
	rd := bytes.NewReader(body)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rd.Reset(body)
		req.Body = io.NopCloser(rd)
		clear(w.h)
		w.status = 0
		h.ServeHTTP(w, req)
		if w.status != http.StatusOK && w.status != 0 {
			b.Fatalf("status %d", w.status)
		}
	}
}

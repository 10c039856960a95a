package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/httpapi"
	"github.com/chatengine/chat/store/memory"
)

// BenchmarkRateLimitOverhead measures what the per-caller buckets add to a
// request: GET /users/{userId} on the memory store through two handlers of
// one Service, one with rate limits (never reached) and one without, the
// requests alternating so both see the same load. Reported: nanoseconds
// per request with and without, and their ratio.
func BenchmarkRateLimitOverhead(b *testing.B) {
	ctx := context.Background()
	svc, err := chat.New(ctx, memory.New(), chat.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	_, token, err := svc.CreateAdmin(ctx, "", "root", "admin")
	if err != nil {
		b.Fatal(err)
	}
	huge := httpapi.RateLimit{Rate: 1e9, Burst: 1 << 30}
	on := httpapi.New(svc, httpapi.Config{Logger: slog.New(slog.DiscardHandler), AdminRateLimit: huge})
	off := httpapi.New(svc, httpapi.Config{Logger: slog.New(slog.DiscardHandler)})
	req := httptest.NewRequest("GET", "/users/admin", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	serve := func(h http.Handler) time.Duration {
		w := &discardWriter{h: http.Header{}}
		start := time.Now()
		h.ServeHTTP(w, req)
		d := time.Since(start)
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
		return d
	}
	var tOn, tOff time.Duration
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			tOn += serve(on)
			tOff += serve(off)
		} else {
			tOff += serve(off)
			tOn += serve(on)
		}
	}
	b.ReportMetric(float64(tOn.Nanoseconds())/float64(b.N), "ns/limited")
	b.ReportMetric(float64(tOff.Nanoseconds())/float64(b.N), "ns/unlimited")
	b.ReportMetric(float64(tOn)/float64(tOff), "ratio")
}

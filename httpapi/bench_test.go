package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/httpapi"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/store/sqlite"
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
	benchHTTP(b, memory.New(), "create", "admin")
}

// BenchmarkHTTP measures create-message and query-messages (the newest
// page of 20 from a channel of 1,000 messages) through the handler on the
// memory store and on SQLite (a file in a temporary directory, default
// options: WAL, synchronous=FULL), as bench/loadgen's targets configure
// them, one request at a time. Its CPU time and allocations per request
// are what the server spends in the handler, without the network.
func BenchmarkHTTP(b *testing.B) {
	for _, store := range []string{"memory", "sqlite"} {
		for _, op := range []string{"create", "query"} {
			b.Run(store+"/"+op, func(b *testing.B) {
				var st chat.Store = memory.New()
				if store == "sqlite" {
					s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), nil)
					if errors.Is(err, sqlite.ErrNeedsCgo) {
						b.Skip(err.Error()) // a build without cgo has no SQLite driver
					}
					if err != nil {
						b.Fatal(err)
					}
					st = s
				}
				benchHTTP(b, st, op, "admin")
			})
		}
	}
}

// BenchmarkHTTPCaller measures the same requests on SQLite made by the
// admin token and by an end user's token (a member of the channels): the
// difference is what verifying the JWT, the user's revocation and ban
// check, and deciding its rights cost. The admin rows are the ceiling of
// the same run.
func BenchmarkHTTPCaller(b *testing.B) {
	for _, op := range []string{"create", "query"} {
		for _, caller := range []string{"admin", "user"} {
			b.Run(op+"/"+caller, func(b *testing.B) {
				st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), nil)
				if err != nil {
					b.Fatal(err)
				}
				benchHTTP(b, st, op, caller)
			})
		}
	}
}

// benchHTTP serves op as caller: "admin" (an admin access token) or
// "user" (a user token of a member).
func benchHTTP(b *testing.B, st chat.Store, op, caller string) {
	ctx := context.Background()
	defer st.Close()
	svc, err := chat.New(ctx, st, chat.Config{})
	if err != nil {
		b.Fatal(err)
	}
	_, token, err := svc.CreateAdmin(ctx, "", "bench", "bench")
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []string{"bench", "query"} {
		if _, err := svc.CreateChannel(ctx, "bench", chat.CreateChannelInput{ChannelID: c, Type: "standard", UserIDs: []string{"bench", "member"}}); err != nil {
			b.Fatal(err)
		}
	}
	if caller == "user" {
		ut, err := svc.IssueUserToken(ctx, "", "member", time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		token = ut.Token
	}
	path := "/message"
	body := []byte(`{"channelId":"bench","type":"text","data":{"text":"a message of about fifty bytes from the load test"}}`)
	if op == "query" {
		for i := 0; i < 1000; i++ {
			if _, err := svc.CreateMessage(ctx, "bench", chat.CreateMessageInput{ChannelID: "query", Type: "text",
				Data: map[string]any{"text": fmt.Sprintf("seed message %d", i)}}); err != nil {
				b.Fatal(err)
			}
		}
		path = "/messages"
		body = []byte(`{"channelId":"query","options":{"last":20}}`)
	}
	h := httpapi.New(svc, httpapi.Config{Logger: slog.New(slog.DiscardHandler)})
	// net/http serves each request with a cancellable context (ended when
	// the connection closes); so does the benchmark.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, "POST", "http://127.0.0.1"+path, nil)
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
	cpu0 := cpuTime()
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
	// CPU time of the whole process (the store's writer goroutine and
	// SQLite included) per request: on SQLite a create-message mostly
	// waits for its fsync, so ns/op is the disk's latency, not the cost.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the user and system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

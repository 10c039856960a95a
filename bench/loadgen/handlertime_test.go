package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Every value falls in a bucket whose lower edge is at most the value and
// within 1/16 of it, and the buckets are in order.
func TestHandlerTimeBuckets(t *testing.T) {
	prev := -1
	for _, ns := range []uint64{0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 1000, 123456, 1e9, 7e10, 1 << 62} {
		i := bucket(ns)
		if i < prev {
			t.Fatalf("bucket(%d) = %d, below the previous value's %d", ns, i, prev)
		}
		prev = i
		lo := lower(i)
		if lo > ns || float64(ns-lo) > float64(ns)/16 {
			t.Errorf("bucket(%d) = %d with lower edge %d", ns, i, lo)
		}
		if i+1 < 64*16 && lower(i+1) <= ns {
			t.Errorf("value %d is at or past the next bucket's edge %d", ns, lower(i+1))
		}
	}
}

// The handler's times are recorded and reported by /debug/handler-time,
// which starts afresh after each report and is not counted itself.
func TestHandlerTimeEndpoint(t *testing.T) {
	var ht handlerTimes
	h := ht.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(20 * time.Millisecond)
		}
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(path string) string {
		t.Helper()
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	for i := 0; i < 98; i++ {
		get("/fast")
	}
	get("/slow")
	get("/slow")
	report := get("/debug/handler-time")
	if !strings.HasPrefix(report, "requests=100 ") {
		t.Fatalf("report %q, want 100 requests", report)
	}
	var n int
	var p50, p90, p99, pmax float64
	if _, err := fmtSscan(report, &n, &p50, &p90, &p99, &pmax); err != nil {
		t.Fatalf("report %q: %v", report, err)
	}
	if p50 >= 10 || p99 < 18 || pmax < 18 || pmax > 1000 {
		t.Errorf("report %q: want p50 under 10 ms and p99 and max near 20 ms", report)
	}
	if again := get("/debug/handler-time"); !strings.HasPrefix(again, "requests=0 ") {
		t.Errorf("second report %q, want it to start afresh", again)
	}
}

func fmtSscan(s string, n *int, p50, p90, p99, pmax *float64) (int, error) {
	return fmt.Sscanf(strings.TrimSpace(s), "requests=%d p50=%fms p90=%fms p99=%fms max=%fms", n, p50, p90, p99, pmax)
}

package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestCheckLoopback(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:8080/api/v2", "http://127.0.0.1:1"} {
		if _, _, err := checkLoopback(u); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
	for _, u := range []string{"http://localhost:8080/", "https://127.0.0.1:8080/", "http://10.0.0.1:80/",
		"http://127.0.0.1/", "http://example.com:80/", "http://127.0.0.1.example.com:80/"} {
		if _, _, err := checkLoopback(u); err == nil {
			t.Errorf("%s: accepted", u)
		}
	}
}

// The fixed-rate client sends about rate x duration requests over its
// connections, reads every response, counts non-200 answers as errors
// and reports latencies for every request it sent.
func TestRunRate(t *testing.T) {
	var paths = make(chan string, 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		select {
		case paths <- r.URL.Path:
		default:
		}
		if strings.HasSuffix(r.URL.Path, "/message") {
			w.WriteHeader(http.StatusBadRequest)
		}
		_, _ = w.Write([]byte(`{"success":true}`))
	}))
	defer srv.Close()
	r, err := runRate(rateRun{base: srv.URL + "/api/v2", token: "tok", op: "query", rate: 200, conns: 4, duration: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.sent < 80 || r.sent > 101 || r.errors != 0 || int64(len(r.lat)) != r.sent {
		t.Fatalf("query: sent %d, errors %d (%s), %d latencies; want about 100, 0", r.sent, r.errors, r.firstErr, len(r.lat))
	}
	if p := <-paths; p != "/api/v2/messages" {
		t.Fatalf("path %q", p)
	}
	if r.pct(50) <= 0 || r.pct(50) > r.pct(99) || r.pct(99) > r.pct(100) {
		t.Fatalf("percentiles not ordered: %v %v %v", r.pct(50), r.pct(99), r.pct(100))
	}
	r, err = runRate(rateRun{base: srv.URL + "/api/v2", token: "tok", op: "create", rate: 100, conns: 2, duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.sent == 0 || r.errors != r.sent || r.firstErr != "status 400" {
		t.Fatalf("create: sent %d, errors %d (%q); want every request counted as an error", r.sent, r.errors, r.firstErr)
	}
}

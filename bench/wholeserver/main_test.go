package main

import (
	"testing"
	"time"
)

func TestParseWrk(t *testing.T) {
	out := `Running 5s test @ http://127.0.0.1:40000/api/v2
  1 threads and 16 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     3.61ms    2.03ms  30.12ms   80.00%
    Req/Sec     4.47k   312.00     4.90k    72.00%
  Latency Distribution
     50%    3.20ms
     75%    4.50ms
     90%    6.01ms
     99%   10.50ms
  22265 requests in 5.00s, 14.80MB read
  Non-2xx or 3xx responses: 12
Requests/sec:   4452.10
Transfer/sec:      2.96MB
`
	r, err := parseWrk(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.rate != 4452.10 || r.p99 != 10500*time.Microsecond || r.requests != 22265 || r.non2xx != 12 {
		t.Fatalf("got %+v", r)
	}
	if _, err := parseWrk("no numbers"); err == nil {
		t.Fatal("parsed output without a rate")
	}
	for s, want := range map[string]time.Duration{"512.00us": 512 * time.Microsecond, "2.01s": 2010 * time.Millisecond, "1.00m": time.Minute} {
		if d, err := parseWrkDuration(s); err != nil || d != want {
			t.Fatalf("%s: %v %v", s, d, err)
		}
	}
	if median([]float64{3, 1, 2}) != 2 || median([]float64{4, 1, 3, 2}) != 2.5 {
		t.Fatal("median")
	}
}

package main

import (
	"math"
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

// A run's rate counted until its last delivery spreads its requests over
// the run and the deliveries after it; the median is over the runs.
func TestDoneRates(t *testing.T) {
	rs := []result{
		{rate: 1000, catchUp: time.Second},           // 5,000 requests in 6 s
		{rate: 1200, catchUp: 0},                     // all delivered within the run
		{rate: 900, catchUp: 500 * time.Millisecond}, // 4,500 in 5.5 s
	}
	got := doneRates(rs, 5*time.Second)
	if math.Abs(got-5000.0/6) > 1e-9 {
		t.Fatalf("doneRates = %v, want %v (the median of 833.3, 1200 and 818.2)", got, 5000.0/6)
	}
	if r := inRunShare([]result{{requests: 100, inRun: 70}, {requests: 100, inRun: 80}, {requests: 100, inRun: 60}}); r != "0.70" {
		t.Fatalf("inRunShare = %s, want 0.70", r)
	}
	if r := inRunShare([]result{{requests: 100}}); r != "n/a" {
		t.Fatalf("inRunShare without deliveries = %s, want n/a", r)
	}
}

// The ratio is the median of the rounds' own ratios: a round in which the
// machine was slow for both servers counts as much as the others.
func TestPairedRatio(t *testing.T) {
	base := []result{{rate: 1000}, {rate: 500}, {rate: 1000}}
	now := []result{{rate: 1100}, {rate: 600}, {rate: 900}}
	// Round ratios 1.1, 1.2, 0.9: median 1.1 (the medians' ratio would be
	// 900/1000 = 0.9).
	if got := pairedRatio(base, now); math.Abs(got-1.1) > 1e-9 {
		t.Fatalf("pairedRatio = %v, want 1.1", got)
	}
	if got := pairedRatio(base[:2], now); math.Abs(got-(1.1+1.2)/2) > 1e-9 {
		t.Fatalf("pairedRatio of 2 rounds = %v, want 1.15", got)
	}
	if got := pairedRatio([]result{{rate: 0}}, []result{{rate: 5}}); got != 0 {
		t.Fatalf("pairedRatio without a base rate = %v, want 0", got)
	}
}

// The interval of the median is made of order statistics: for 16 rounds
// the 5th smallest and 5th largest (coverage 1 - 2 P(B <= 4) = 0.923 for
// B binomial(16, 1/2); with the 6th, 0.79), for 6 rounds the smallest and
// largest (0.969; with the 2nd, 0.78), and none for 4 rounds (0.875).
func TestMedianInterval(t *testing.T) {
	v := make([]float64, 16)
	for i := range v {
		v[i] = float64((i*7)%16) + 1 // 1..16, shuffled
	}
	lo, hi, ok := medianInterval(v, 0.9)
	if !ok || lo != 5 || hi != 12 {
		t.Fatalf("16 values: %v-%v %v, want 5-12", lo, hi, ok)
	}
	lo, hi, ok = medianInterval([]float64{6, 1, 5, 2, 4, 3}, 0.9)
	if !ok || lo != 1 || hi != 6 {
		t.Fatalf("6 values: %v-%v %v, want 1-6", lo, hi, ok)
	}
	lo, hi, ok = medianInterval([]float64{6, 1, 5, 2, 4, 3}, 0.75)
	if !ok || lo != 2 || hi != 5 {
		t.Fatalf("6 values at 0.75: %v-%v %v, want 2-5", lo, hi, ok)
	}
	if _, _, ok := medianInterval([]float64{1, 2, 3, 4}, 0.9); ok {
		t.Fatal("4 values gave an interval at 0.9")
	}
	if _, _, ok := medianInterval(nil, 0.9); ok {
		t.Fatal("no values gave an interval")
	}
}

package main

import (
	"fmt"
	"math/bits"
	"net/http"
	"sync/atomic"
	"time"
)

// handlerTimes is a histogram of the time requests spent in a target's
// handler, from the moment net/http called it until it returned: what the
// server itself adds to a request's latency, as opposed to the time the
// request waited to be read (in the client, the kernel or the scheduler).
// Set beside wrk's latency it tells where a tail comes from.
//
// The buckets are log-linear: 16 per power of two of nanoseconds, so a
// percentile is exact to within 1/16 (6 %) of its value. Recording is a
// few atomic adds, safe from any number of goroutines.
type handlerTimes struct {
	counts [64 * 16]atomic.Uint64
}

// bucket returns the histogram index of d nanoseconds.
func bucket(ns uint64) int {
	if ns < 16 {
		return int(ns)
	}
	e := bits.Len64(ns) - 1 // 2^e <= ns < 2^(e+1), e >= 4
	m := (ns >> (e - 4)) & 15
	return e*16 + int(m) - 48 // 16..: continuous after the exact 0..15
}

// lower returns the smallest value of bucket i.
func lower(i int) uint64 {
	if i < 16 {
		return uint64(i)
	}
	e := (i + 48) / 16
	m := uint64((i + 48) % 16)
	return (16 + m) << (e - 4)
}

func (h *handlerTimes) record(d time.Duration) {
	ns := uint64(max(d, 0))
	i := bucket(ns)
	if i >= len(h.counts) {
		i = len(h.counts) - 1
	}
	h.counts[i].Add(1)
}

// take returns the request count and the p50, p90, p99 and maximum (each
// the lower edge of its bucket) of the requests recorded since the last
// take, and starts afresh.
func (h *handlerTimes) take() (n uint64, p50, p90, p99, pmax time.Duration) {
	var c [len(h.counts)]uint64
	for i := range h.counts {
		c[i] = h.counts[i].Swap(0)
		n += c[i]
	}
	if n == 0 {
		return 0, 0, 0, 0, 0
	}
	at := func(q float64) time.Duration {
		rank := uint64(q * float64(n-1))
		var seen uint64
		for i, k := range c {
			seen += k
			if seen > rank {
				return time.Duration(lower(i))
			}
		}
		return 0
	}
	for i := len(c) - 1; i >= 0; i-- {
		if c[i] > 0 {
			pmax = time.Duration(lower(i))
			break
		}
	}
	return n, at(0.50), at(0.90), at(0.99), pmax
}

// wrap records the handler time of every request to next, and answers
// GET /debug/handler-time itself (outside the API's mount point) with one
// line, "requests=N p50=... p90=... p99=... max=...", for the requests
// since the previous such call.
func (h *handlerTimes) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/debug/handler-time" {
			n, p50, p90, p99, pmax := h.take()
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			f := func(d time.Duration) string { return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond)) }
			fmt.Fprintf(w, "requests=%d p50=%s p90=%s p99=%s max=%s\n", n, f(p50), f(p90), f(p99), f(pmax))
			return
		}
		start := time.Now()
		next.ServeHTTP(w, r)
		h.record(time.Since(start))
	})
}

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Fixed-rate mode (-url with -rate): an open-loop client in the manner of
// wrk2. Each of -c keep-alive connections sends requests on its own fixed
// schedule (rate/c per second, the connections' schedules staggered evenly),
// and a request's latency runs from the time the schedule meant to send it,
// not from when it was sent. When a response is late the next request of
// that connection goes out at once, and the wait it had already spent
// counts in its latency: a stalled server cannot hide its stall by holding
// back the client (coordinated omission). A closed-loop client such as wrk
// sends as fast as the server answers, so at saturation its percentiles
// measure the queue it builds itself; this mode measures the latency at a
// given load.
//
// The client speaks plain HTTP/1.1 over net.Conn (static request bytes, a
// small response reader) so that it costs little CPU next to the server.

// rateRun is one fixed-rate measurement.
type rateRun struct {
	base     string // target base URL (http://127.0.0.1:PORT/api/v2)
	token    string
	op       string // create or query
	rate     float64
	conns    int
	duration time.Duration
}

type rateResult struct {
	sent, errors int64
	elapsed      time.Duration
	lat          []time.Duration // sorted
	firstErr     string
}

func (r rateResult) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	i := int(float64(len(r.lat)) * p / 100)
	return r.lat[min(i, len(r.lat)-1)]
}

// checkLoopback refuses any URL whose host is not 127.0.0.1: the load
// only ever goes to a server on this machine.
func checkLoopback(base string) (host, path string, err error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", "", err
	}
	if u.Scheme != "http" || u.Hostname() != "127.0.0.1" || u.Port() == "" {
		return "", "", errors.New("-url must be an http://127.0.0.1:PORT URL")
	}
	return u.Host, u.Path, nil
}

func runRate(rr rateRun) (rateResult, error) {
	host, path, err := checkLoopback(rr.base)
	if err != nil {
		return rateResult{}, err
	}
	var p, body string
	switch rr.op {
	case "query":
		p, body = path+"/messages", `{"channelId":"query","options":{"last":20}}`
	case "create":
		p, body = path+"/message", `{"channelId":"bench","type":"text","data":{"text":"a message of about fifty bytes from the load test"}}`
	default:
		return rateResult{}, fmt.Errorf("unknown operation %q", rr.op)
	}
	req := []byte("POST " + p + " HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + rr.token +
		"\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)

	conns := make([]net.Conn, rr.conns)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range conns {
		c, err := net.Dial("tcp", host)
		if err != nil {
			return rateResult{}, err
		}
		conns[i] = c
	}
	interval := time.Duration(float64(time.Second) * float64(rr.conns) / rr.rate)
	if interval <= 0 {
		return rateResult{}, errors.New("-rate too high")
	}
	start := time.Now().Add(50 * time.Millisecond)
	end := start.Add(rr.duration)
	lats := make([][]time.Duration, rr.conns)
	errs := make([]int64, rr.conns)
	firstErr := make([]string, rr.conns)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			br := bufio.NewReaderSize(c, 64<<10)
			ls := make([]time.Duration, 0, int(rr.duration/interval)+2)
			// Connection i starts i/conns of an interval after the others.
			next := start.Add(interval * time.Duration(i) / time.Duration(rr.conns))
			for next.Before(end) {
				if d := time.Until(next); d > 0 {
					time.Sleep(d)
				}
				if _, err := c.Write(req); err != nil {
					errs[i]++
					firstErr[i] = err.Error()
					return
				}
				code, err := readResponse(br)
				ls = append(ls, time.Since(next))
				if err != nil {
					errs[i]++
					firstErr[i] = err.Error()
					return
				}
				if code != 200 {
					errs[i]++
					if firstErr[i] == "" {
						firstErr[i] = "status " + strconv.Itoa(code)
					}
				}
				next = next.Add(interval)
			}
			lats[i] = ls
		}()
	}
	wg.Wait()
	r := rateResult{elapsed: time.Since(start), lat: slices.Concat(lats...)}
	slices.Sort(r.lat)
	r.sent = int64(len(r.lat))
	for i := range errs {
		r.errors += errs[i]
		if r.firstErr == "" {
			r.firstErr = firstErr[i]
		}
	}
	return r, nil
}

// readResponse reads one HTTP/1.1 response with a Content-Length body (what
// the targets send) and returns its status code.
func readResponse(br *bufio.Reader) (int, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	code, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	n := -1
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if len(h) <= 2 {
			break
		}
		if k, v, ok := bytes.Cut(h, []byte(":")); ok && bytes.EqualFold(k, []byte("Content-Length")) {
			if n, err = strconv.Atoi(string(bytes.TrimSpace(v))); err != nil {
				return 0, fmt.Errorf("bad Content-Length %q", v)
			}
		}
	}
	if n < 0 {
		return 0, errors.New("response without Content-Length")
	}
	if _, err := br.Discard(n); err != nil {
		return 0, err
	}
	return code, nil
}

// printRate prints one fixed-rate measurement as a Markdown table row.
func printRate(w io.Writer, rr rateRun, r rateResult) {
	op := "create-message"
	if rr.op == "query" {
		op = "query-messages"
	}
	fmt.Fprintf(w, "| %s | %.0f | %d | %.0f | %d | %s | %s | %s | %s | %s |\n", op, rr.rate, rr.conns,
		float64(r.sent)/r.elapsed.Seconds(), r.errors, ms(r.pct(50)), ms(r.pct(90)), ms(r.pct(99)), ms(r.pct(99.9)), ms(r.pct(100)))
}

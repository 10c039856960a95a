// Command loadgen measures the admin HTTP API under load. It starts, in
// this process and each on 127.0.0.1:0, three servers:
//
//   - ceiling: a trivial chi handler that reads the request body and answers
//     a small JSON object (what net/http, chi and the client cost alone);
//   - memory:  the real httpapi over the memory store;
//   - sqlite:  the real httpapi over SQLite in a temporary directory
//     (WAL, synchronous=FULL: every acknowledged write is on disk);
//
// and drives each with create-message (POST /message, JSON) and
// query-messages (POST /messages, the newest page of 20) from -c concurrent
// keep-alive connections for -d each, bounded by -n requests. It prints a
// Markdown table of requests/s and p50/p99 latency.
//
//	go run ./bench/loadgen                 # 10 s per run, 64 connections
//	go run ./bench/loadgen -d 3s -targets memory -ops create -cpuprofile cpu.out
//
// With -serve it measures nothing: it starts the targets on fixed ports
// (127.0.0.1:18080, 18081, ... in the order of -targets), prints one line
// per target (name, base URL, admin token) and serves until the -serve
// duration has passed or it is interrupted, for an external client such as
// wrk (bench/http.sh drives it with wrk and bench/api.lua). Each target
// also answers GET /debug/handler-time (at its root, outside /api/v2) with
// the p50, p90, p99 and maximum time its handler took over the requests
// since the previous such call: the server's own share of the latency the
// client sees. An external
// client written in C takes far less CPU than the in-process Go client, so
// on a small machine it disturbs the server less. Serving the sqlite target
// alone, it sets GOGC=400 as examples/server does with SQLite (-gc-percent;
// a GOGC variable wins).
//
// With -url and -rate it drives a target that -serve started, at fixed
// request rates (open loop, latency counted from each request's scheduled
// time; see rate.go), and prints p50 to p99.9 per rate; bench/latency.sh
// runs it:
//
//	go run ./bench/loadgen -url http://127.0.0.1:18080/api/v2 -token chat_... -rate 1000,2000 -ops query
//
// It only ever connects to 127.0.0.1 (the servers it started, or -url,
// which must be an http://127.0.0.1 address), and only listens on
// 127.0.0.1.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // served on -pprof (127.0.0.1 only) when set
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-chi/chi/v5"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/httpapi"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/store/sqlite"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

type options struct {
	duration    time.Duration
	concurrency int
	maxRequests int64
	targets     []string
	ops         []string
	seed        int
	sqliteSync  string
	cpuProfile  string
	memProfile  string
	pprofAddr   string
	serve       time.Duration
	port        int
	gcPercent   int
	url         string
	token       string
	rates       []float64
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var targets, ops string
	fs.DurationVar(&o.duration, "d", 10*time.Second, "duration of each run (at most 2m)")
	fs.IntVar(&o.concurrency, "c", 64, "concurrent connections (at most 1024)")
	fs.Int64Var(&o.maxRequests, "n", 5_000_000, "most requests of each run")
	fs.StringVar(&targets, "targets", "ceiling,memory,sqlite", "servers to measure: ceiling, memory, sqlite")
	fs.StringVar(&ops, "ops", "create,query", "operations: create (create-message), query (query-messages)")
	fs.IntVar(&o.seed, "seed", 1000, "messages posted to the query channel before query-messages runs")
	fs.StringVar(&o.sqliteSync, "sqlite-synchronous", "FULL", "SQLite synchronous setting: FULL, NORMAL or EXTRA")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	fs.StringVar(&o.memProfile, "memprofile", "", "write an allocation profile of the whole run to this file")
	fs.StringVar(&o.pprofAddr, "pprof", "", "serve net/http/pprof on this 127.0.0.1 address while running (e.g. 127.0.0.1:6060)")
	fs.DurationVar(&o.serve, "serve", 0, "only serve the targets for this long (at most 1h) on 127.0.0.1 ports -port, -port+1, ... for an external load generator such as wrk; 0 measures in process")
	fs.IntVar(&o.gcPercent, "gc-percent", 0, "garbage collector target (GOGC) of this process; 0: with -serve and only the sqlite target 400, as examples/server sets it for SQLite, otherwise Go's default; the GOGC variable, when set, wins")
	fs.IntVar(&o.port, "port", 18080, "first port of -serve (ceiling, memory, sqlite in that order)")
	fs.StringVar(&o.url, "url", "", "fixed-rate mode: the base URL of a running target (http://127.0.0.1:PORT/api/v2, as -serve prints it)")
	fs.StringVar(&o.token, "token", "", "fixed-rate mode: the target's admin token")
	var rates string
	fs.StringVar(&rates, "rate", "", "fixed-rate mode: requests per second, a comma-separated list run in turn (with -url)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.duration <= 0 || o.duration > 2*time.Minute {
		return errors.New("-d must be in (0, 2m]")
	}
	if o.concurrency < 1 || o.concurrency > 1024 {
		return errors.New("-c must be 1-1024")
	}
	if o.serve < 0 || o.serve > time.Hour {
		return errors.New("-serve must be in [0, 1h]")
	}
	if o.port < 1024 || o.port > 65535-3 {
		return errors.New("-port must be 1024-65532")
	}
	if o.maxRequests < 1 {
		return errors.New("-n must be positive")
	}
	if (o.url == "") != (rates == "") {
		return errors.New("-url and -rate go together")
	}
	for _, f := range strings.Split(rates, ",") {
		if f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v < 1 || v > 1e6 {
			return fmt.Errorf("bad -rate %q", f)
		}
		o.rates = append(o.rates, v)
	}
	o.targets = strings.Split(targets, ",")
	o.ops = strings.Split(ops, ",")
	for _, t := range o.targets {
		if t != "ceiling" && t != "memory" && t != "sqlite" {
			return fmt.Errorf("unknown target %q", t)
		}
	}
	for _, op := range o.ops {
		if op != "create" && op != "query" {
			return fmt.Errorf("unknown operation %q", op)
		}
	}
	if o.pprofAddr != "" {
		host, _, err := net.SplitHostPort(o.pprofAddr)
		if err != nil || host != "127.0.0.1" {
			return errors.New("-pprof must be a 127.0.0.1:PORT address")
		}
		go func() { _ = http.ListenAndServe(o.pprofAddr, nil) }()
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if o.memProfile != "" {
		runtime.MemProfileRate = 64 << 10
		defer func() {
			if f, err := os.Create(o.memProfile); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))

	if o.serve > 0 {
		return serve(o, stdout, stderr)
	}
	if o.url != "" {
		return fixedRates(o, stdout)
	}
	fmt.Fprintf(stderr, "loadgen: %s, GOMAXPROCS=%d, GOGC=%s, %s, %d connections, %v per run\n",
		runtime.Version(), runtime.GOMAXPROCS(0), setGC(o), cpuModel(), o.concurrency, o.duration)
	var results []result
	for _, name := range o.targets {
		tg, err := startTarget(name, o)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		for _, op := range o.ops {
			fmt.Fprintf(stderr, "loadgen: %s %s ...\n", name, opName(op))
			r, err := measure(tg, op, o)
			if err != nil {
				tg.close()
				return fmt.Errorf("%s %s: %w", name, opName(op), err)
			}
			fmt.Fprintf(stderr, "loadgen: %s %s: %.0f req/s, p50 %v, p99 %v, %d errors\n",
				name, opName(op), r.rate(), r.p50, r.p99, r.errors)
			results = append(results, r)
		}
		tg.close()
	}
	printTable(stdout, results, o)
	return nil
}

func opName(op string) string {
	if op == "create" {
		return "create-message"
	}
	return "query-messages"
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// target is a running server.
type target struct {
	name  string
	base  string // http://127.0.0.1:port
	token string
	close func()
}

// startTarget starts the named server on 127.0.0.1:0 with a channel
// "bench" for writes and a channel "query" seeded with o.seed messages.
// The listen address is 127.0.0.1:0, or addr when set.
func startTarget(name string, o options, addr ...string) (*target, error) {
	ctx := context.Background()
	var h http.Handler
	var closers []func()
	token := "none"
	if name == "ceiling" {
		h = ceiling()
	} else {
		var st chat.Store
		if name == "memory" {
			st = memory.New()
		} else {
			dir, err := os.MkdirTemp("", "loadgen-")
			if err != nil {
				return nil, err
			}
			s, err := sqlite.Open(ctx, filepath.Join(dir, "bench.db"), &sqlite.Options{Synchronous: o.sqliteSync})
			if err != nil {
				os.RemoveAll(dir)
				return nil, err
			}
			st = s
			closers = append(closers, func() { os.RemoveAll(dir) })
		}
		closers = append([]func(){func() { st.Close() }}, closers...)
		svc, err := chat.New(ctx, st, chat.Config{})
		if err != nil {
			return nil, err
		}
		_, tok, err := svc.CreateAdmin(ctx, "", "bench", "bench")
		if err != nil {
			return nil, err
		}
		token = tok
		for _, c := range []string{"bench", "query"} {
			if _, err := svc.CreateChannel(ctx, "bench", chat.CreateChannelInput{ChannelID: c, Type: "standard", UserIDs: []string{"bench"}}); err != nil {
				return nil, err
			}
		}
		for i := 0; i < o.seed; i++ {
			if _, err := svc.CreateMessage(ctx, "bench", chat.CreateMessageInput{ChannelID: "query", Type: "text",
				Data: map[string]any{"text": fmt.Sprintf("seed message %d", i)}}); err != nil {
				return nil, err
			}
		}
		h = httpapi.New(svc, httpapi.Config{Logger: slog.Default()})
	}
	r := chi.NewRouter()
	r.Mount("/api/v2", h)
	la := "127.0.0.1:0"
	if len(addr) > 0 {
		la = addr[0]
	}
	ln, err := net.Listen("tcp", la)
	if err != nil {
		for _, c := range closers {
			c()
		}
		return nil, err
	}
	var root http.Handler = r
	if o.serve > 0 {
		// For an external client: GET /debug/handler-time on the target
		// reports the time spent in the handler (handlertime.go).
		root = new(handlerTimes).wrap(r)
	}
	srv := &http.Server{Handler: root, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return &target{name: name, base: "http://" + ln.Addr().String() + "/api/v2", token: token, close: func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		for _, c := range closers {
			c()
		}
	}}, nil
}

// serve starts the targets on fixed 127.0.0.1 ports, prints their URLs
// and the admin token, and serves until o.serve has passed or the process
// is interrupted. Each target's channel "bench" takes create-message and
// channel "query" (seeded) query-messages, as in the in-process runs.
func serve(o options, stdout, stderr io.Writer) error {
	var started []*target
	defer func() {
		for _, tg := range started {
			tg.close()
		}
	}()
	for i, name := range o.targets {
		addr := fmt.Sprintf("127.0.0.1:%d", o.port+i)
		tg, err := startTarget(name, o, addr)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		started = append(started, tg)
		fmt.Fprintf(stdout, "%s %s %s\n", name, tg.base, tg.token)
	}
	fmt.Fprintf(stderr, "loadgen: %s, GOMAXPROCS=%d, GOGC=%s, %s; serving for %v (interrupt to stop)\n",
		runtime.Version(), runtime.GOMAXPROCS(0), setGC(o), cpuModel(), o.serve)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	select {
	case <-ctx.Done():
	case <-time.After(o.serve):
	}
	return nil
}

// fixedRates runs every operation at every rate of o.rates against the
// target at o.url and prints a Markdown table.
func fixedRates(o options, stdout io.Writer) error {
	fmt.Fprintln(stdout, "| operation | offered req/s | connections | sent req/s | errors | p50 | p90 | p99 | p99.9 | max |")
	fmt.Fprintln(stdout, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, op := range o.ops {
		for _, rate := range o.rates {
			rr := rateRun{base: o.url, token: o.token, op: op, rate: rate, conns: o.concurrency, duration: o.duration}
			r, err := runRate(rr)
			if err != nil {
				return err
			}
			printRate(stdout, rr, r)
			if r.firstErr != "" {
				fmt.Fprintf(os.Stderr, "loadgen: %s at %.0f/s: %d errors, first: %s\n", op, rate, r.errors, r.firstErr)
			}
		}
	}
	return nil
}

// ceiling is the trivial handler: read the body, answer a small JSON.
func ceiling() http.Handler {
	r := chi.NewRouter()
	reply := func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = w.Write([]byte(`{"success":true}` + "\n"))
	}
	r.Post("/message", reply)
	r.Post("/messages", reply)
	return r
}

type result struct {
	target, op string
	requests   int64
	errors     int64
	elapsed    time.Duration
	p50, p99   time.Duration
	max        time.Duration
}

func (r result) rate() float64 { return float64(r.requests) / r.elapsed.Seconds() }

// measure runs one operation against a target with o.concurrency workers.
func measure(tg *target, op string, o options) (result, error) {
	tr := &http.Transport{
		MaxIdleConns:        o.concurrency,
		MaxIdleConnsPerHost: o.concurrency,
		MaxConnsPerHost:     o.concurrency,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	url := tg.base + "/message"
	if op == "query" {
		url = tg.base + "/messages"
	}
	body := func(worker, i int) []byte {
		if op == "query" {
			return []byte(`{"channelId":"query","options":{"last":20}}`)
		}
		return []byte(fmt.Sprintf(`{"channelId":"bench","type":"text","data":{"text":"message %d from worker %d"}}`, i, worker))
	}
	send := func(b []byte) (int, error) {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tg.token)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	// A check that the request works before measuring it.
	if code, err := send(body(-1, 0)); err != nil || code != http.StatusOK {
		return result{}, fmt.Errorf("warm-up request: status %d, %v", code, err)
	}
	// Warm the connection pool: one request per connection.
	var wg sync.WaitGroup
	for w := 0; w < o.concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = send(body(-2, w))
		}()
	}
	wg.Wait()

	var count, errs atomic.Int64
	lat := make([][]time.Duration, o.concurrency)
	start := time.Now()
	deadline := start.Add(o.duration)
	var firstErr atomic.Value
	for w := 0; w < o.concurrency; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ls := make([]time.Duration, 0, 4096)
			for i := 0; ; i++ {
				if count.Add(1) > o.maxRequests || time.Now().After(deadline) {
					break
				}
				b := body(w, i)
				t0 := time.Now()
				code, err := send(b)
				ls = append(ls, time.Since(t0))
				if err != nil || code != http.StatusOK {
					errs.Add(1)
					if err == nil {
						err = fmt.Errorf("status %d", code)
					}
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
			lat[w] = ls
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(lat...)
	slices.Sort(all)
	r := result{target: tg.name, op: opName(op), requests: int64(len(all)), errors: errs.Load(), elapsed: elapsed}
	if len(all) > 0 {
		r.p50 = all[len(all)*50/100]
		r.p99 = all[min(len(all)-1, len(all)*99/100)]
		r.max = all[len(all)-1]
	}
	if e, ok := firstErr.Load().(string); ok {
		fmt.Fprintf(os.Stderr, "loadgen: %s %s: first error: %s\n", tg.name, opName(op), e)
	}
	return r, nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func printTable(w io.Writer, rs []result, o options) {
	fmt.Fprintf(w, "| server | operation | requests | errors | requests/s | p50 | p99 | max |\n")
	fmt.Fprintf(w, "|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rs {
		fmt.Fprintf(w, "| %s | %s | %d | %d | %.0f | %s | %s | %s |\n", r.target, r.op, r.requests, r.errors, r.rate(), ms(r.p50), ms(r.p99), ms(r.max))
	}
	rate := map[string]float64{}
	for _, r := range rs {
		rate[r.target+" "+r.op] = r.rate()
	}
	fmt.Fprintln(w)
	for _, op := range []string{"create-message", "query-messages"} {
		c := rate["ceiling "+op]
		if c == 0 {
			continue
		}
		for _, t := range []string{"memory", "sqlite"} {
			if v, ok := rate[t+" "+op]; ok {
				fmt.Fprintf(w, "- %s on %s: %.0f%% of the trivial handler's rate\n", op, t, 100*v/c)
			}
		}
	}
	fmt.Fprintf(w, "\n%d connections, %v per run, %s, GOMAXPROCS=%d, %s.\n", o.concurrency, o.duration, runtime.Version(), runtime.GOMAXPROCS(0), cpuModel())
}

// setGC applies -gc-percent and returns the setting in use. A target
// served alone should run as examples/server runs it: the server sets
// GOGC=400 with SQLite (its live heap is small) and keeps Go's default
// with the memory store.
func setGC(o options) string {
	if v := os.Getenv("GOGC"); v != "" {
		return v
	}
	p := o.gcPercent
	if p == 0 {
		if o.serve == 0 || len(o.targets) != 1 || o.targets[0] != "sqlite" {
			return "100"
		}
		p = 400
	}
	debug.SetGCPercent(p)
	return strconv.Itoa(p)
}

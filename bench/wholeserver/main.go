// Command wholeserver measures the example server as it is deployed, beside
// the same server built from an older commit and beside a trivial handler,
// in one interleaved run.
//
// It builds examples/server twice: from the checkout it runs in (or -now,
// a source directory, or -now-bin, a built binary) and from -base-rev
// (default 6422546, checked out with `git worktree add` into a temporary
// directory that is removed at the end; or -base, a source directory; or
// -base-bin). Each server runs as its own process with everything the
// binary starts by itself (webhook dispatcher, event stream hub, mute
// expirer, metrics), configured only through CHAT_ variables so that one
// setup works for every version:
//
//   - a fresh store per server start: SQLite in a temporary directory, or a
//     new Postgres database (CREATE DATABASE on -postgres) dropped after;
//   - an admin made with `server admin create bench` before the start;
//   - one static webhook (-webhook-url) to a receiver in this process that
//     answers 204 to every delivery;
//   - -stream WebSocket event streams (default 100) opened with the admin
//     token as GET /events?channelId=<-stream-channel>, kept open and read
//     while the load runs, when the server has /events (a server without it
//     answers 404 and runs without streams; the table says so);
//   - the admin rate limit set to 1e9 requests/s where it exists, so it is
//     on but never refuses, and no cap of streams per caller (the streams
//     share one admin token).
//
// Each server gets a channel "bench" (create message) and a channel "query"
// seeded with -seed text messages (the query asks for the newest -page).
// The load is wrk (one thread) with bench/api.lua over 127.0.0.1, -warmup
// then -d per run, at each of -conns connections. The trivial-handler
// ceiling (a chi handler in a separate process that reads the request and
// answers a JSON body as long as the real server's answer) runs in the same
// rounds. Each round runs, per store, the base server then the new one
// (the new one first in even rounds), then the ceiling; the table gives the
// medians over -rounds of requests/s and of wrk's p99, and the median of
// the rounds' ratios (new/base in the same round). Every measured run
// starts after a sync(2), so that no run pays for the write-back of the
// pages an earlier one left dirty. After each run it waits until the webhook receiver has
// had no delivery for a second (at most a minute), so that a run is not
// charged with the deliveries of the one before, and reports how long
// deliveries went on after the run ended and how many it received during
// the run per request (a dispatcher that falls behind shows there: its
// server's run left part of its work for after it), beside the server's
// CPU time per request.
//
//	go run ./bench/wholeserver                           # both stores, 3 rounds
//	go run ./bench/wholeserver -stores sqlite -rounds 1 -d 3s
//	go run ./bench/wholeserver -now /path/to/other/checkout
//	go run ./bench/wholeserver -profile /tmp/prof         # also CPU profiles of the new server
//
// With -profile DIR the new server is built with -tags pprof
// (examples/server/pprof.go), and so is the old one when this program
// checked it out (the file is copied into its temporary worktree); a CPU
// profile of each measured run of the first round is written to
// DIR/<server>-<store>-<op>-<conns>.pprof (<server>: -now-name or
// -base-name); with -trace, an execution trace of 2 s of the run instead,
// to DIR/<server>-<store>-<op>-<conns>.trace. A server given as a binary
// is not profiled.
//
// It stops by itself: every run is bounded by -d, the whole by -timeout;
// on the way out (also on an interrupt) it stops the processes it started,
// drops the databases it created and removes its temporary directories.
// It only ever listens on and connects to 127.0.0.1. Needs wrk and git.
package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"
	"github.com/lib/pq"
)

type options struct {
	now, nowBin    string
	base, baseBin  string
	baseRev        string
	stores         []string
	ops            []string
	conns          []int
	rounds         int
	duration       time.Duration
	warmup         time.Duration
	streams        int
	streamChannel  string
	seed, page     int
	postgres       string
	profile        string
	trace          bool
	timeout        time.Duration
	keepServerLogs bool
	repo           string // the repository root holding bench/api.lua
	ceilingAddr    string
	ceilingSizes   string
	nowName        string
	baseName       string
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "wholeserver:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("wholeserver", flag.ContinueOnError)
	var o options
	var stores, ops, conns string
	fs.StringVar(&o.now, "now", "", "source directory of the server to measure (default: the checkout holding this program, from the working directory)")
	fs.StringVar(&o.nowBin, "now-bin", "", "a built examples/server binary to measure instead of building -now")
	fs.StringVar(&o.base, "base", "", "source directory of the server to compare with (default: -base-rev checked out in a temporary git worktree)")
	fs.StringVar(&o.baseBin, "base-bin", "", "a built examples/server binary to compare with instead of building -base")
	fs.StringVar(&o.baseRev, "base-rev", "6422546", "commit to compare with when neither -base nor -base-bin is given")
	fs.StringVar(&stores, "stores", "sqlite,postgres", "stores: sqlite, postgres")
	fs.StringVar(&ops, "ops", "create,query", "operations: create (POST /message), query (POST /messages, the newest -page)")
	fs.StringVar(&conns, "conns", "1,16", "connection counts")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds (each: per store the base then the new server, the other way round in even rounds, then the ceiling)")
	fs.DurationVar(&o.duration, "d", 5*time.Second, "duration of each measured run (at most 1m)")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured run before each measured one")
	fs.IntVar(&o.streams, "streams", 100, "event streams kept open on servers that have /events")
	fs.StringVar(&o.streamChannel, "stream-channel", "idle", "the channel the streams follow (?channelId=); \"bench\" sends every created message to every stream")
	fs.IntVar(&o.seed, "seed", 200, "messages in the query channel")
	fs.IntVar(&o.page, "page", 50, "messages per query (1-100)")
	fs.StringVar(&o.postgres, "postgres", envOr("CHAT_BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"), "Postgres server (127.0.0.1) where a database is created per server start and dropped after (CHAT_BENCH_POSTGRES_URL)")
	fs.StringVar(&o.profile, "profile", "", "directory for CPU profiles of the first-round runs (servers built here get -tags pprof)")
	fs.BoolVar(&o.trace, "trace", false, "with -profile: an execution trace of 2 s of each profiled run instead of its CPU profile (go tool trace)")
	fs.DurationVar(&o.timeout, "timeout", 40*time.Minute, "the whole run stops after this long")
	fs.BoolVar(&o.keepServerLogs, "server-logs", false, "print each server's log file name and keep it")
	fs.StringVar(&o.nowName, "now-name", "now", "column name of the new server")
	fs.StringVar(&o.baseName, "base-name", "", "column name of the base server (default: -base-rev, or \"base\")")
	// Internal: the ceiling process.
	fs.StringVar(&o.ceilingAddr, "ceiling-serve", "", "internal: serve the ceiling on this address")
	fs.StringVar(&o.ceilingSizes, "ceiling-sizes", "", "internal: create,query response sizes of the ceiling")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.ceilingAddr != "" {
		return serveCeiling(o.ceilingAddr, o.ceilingSizes)
	}
	o.stores = split(stores)
	o.ops = split(ops)
	for _, c := range split(conns) {
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 || n > 1024 {
			return fmt.Errorf("bad -conns %q", c)
		}
		o.conns = append(o.conns, n)
	}
	for _, s := range o.stores {
		if s != "sqlite" && s != "postgres" {
			return fmt.Errorf("unknown store %q", s)
		}
	}
	for _, op := range o.ops {
		if op != "create" && op != "query" {
			return fmt.Errorf("unknown operation %q", op)
		}
	}
	switch {
	case o.rounds < 1 || o.rounds > 20:
		return errors.New("-rounds must be 1-20")
	case o.duration < time.Second || o.duration > time.Minute || o.duration%time.Second != 0:
		return errors.New("-d must be whole seconds, 1s-1m (wrk takes whole seconds)")
	case o.warmup < 0 || o.warmup > time.Minute || o.warmup%time.Second != 0:
		return errors.New("-warmup must be whole seconds, 0-1m")
	case o.streams < 0 || o.streams > 1000:
		return errors.New("-streams must be 0-1000")
	case o.page < 1 || o.page > 100:
		return errors.New("-page must be 1-100")
	case o.seed < o.page || o.seed > 100_000:
		return errors.New("-seed must be at least -page and at most 100000")
	}
	if o.baseName == "" {
		o.baseName = "base"
		if o.base == "" && o.baseBin == "" {
			o.baseName = o.baseRev
		}
	}
	if _, err := exec.LookPath("wrk"); err != nil {
		return errors.New("needs wrk (apt-get install -y wrk)")
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	o.repo, err = repoRoot(wd)
	if err != nil {
		return err
	}
	if o.now == "" {
		o.now = o.repo
	}

	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	b := &bench{o: o, ctx: ctx}
	defer b.cleanup()
	return b.run()
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// repoRoot finds the directory holding bench/api.lua from dir upwards.
func repoRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "bench", "api.lua")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("run it inside the repository (bench/api.lua not found)")
		}
	}
}

// bench is one whole run.
type bench struct {
	o        options
	ctx      context.Context
	work     string   // temporary directory
	cleanups []func() // run in reverse order at the end
	mu       sync.Mutex

	hooks        atomic.Int64 // webhook deliveries received
	hookURL      string
	createBytes  int // size of a create response of the new server
	queryBytes   int // size of a query response of the new server
	results      map[key][]result
	noStreams    map[string]bool // side -> the server has no /events
	profiled     map[string]bool // side -> built with -tags pprof by this run
	streamsOpen  map[string]int  // side -> streams open during its last run
	hooksBySide  map[string]int64
	requestsSide map[string]int64
}

type key struct {
	op, store string
	conns     int
	side      string // "base", "now" or "ceiling"
}

type result struct {
	rate     float64
	p99      time.Duration
	requests int64
	non2xx   int64
	cpu      time.Duration // server CPU time during the measured run
	catchUp  time.Duration // webhook deliveries went on this long after it
	inRun    int64         // webhook deliveries received during it
	claims   float64       // claim transactions per delivery received, warm-up to settled (-1: not reported)
}

func (b *bench) addCleanup(f func()) {
	b.mu.Lock()
	b.cleanups = append(b.cleanups, f)
	b.mu.Unlock()
}

func (b *bench) cleanup() {
	b.mu.Lock()
	cs := b.cleanups
	b.cleanups = nil
	b.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "wholeserver: "+format+"\n", args...)
}

func (b *bench) run() error {
	var err error
	b.work, err = os.MkdirTemp("", "wholeserver-")
	if err != nil {
		return err
	}
	b.addCleanup(func() {
		if b.o.keepServerLogs {
			// The server directories (logs and databases) are inside.
			b.logf("kept %s", b.work)
			return
		}
		os.RemoveAll(b.work)
	})
	b.results = map[key][]result{}
	b.noStreams = map[string]bool{}
	b.streamsOpen = map[string]int{}
	b.hooksBySide = map[string]int64{}
	b.requestsSide = map[string]int64{}

	if slices.Contains(b.o.stores, "postgres") {
		if err := checkLoopbackURL(b.o.postgres); err != nil {
			return err
		}
		db, err := sql.Open("postgres", b.o.postgres)
		if err != nil {
			return err
		}
		err = db.PingContext(b.ctx)
		db.Close()
		if err != nil {
			return fmt.Errorf("-postgres %s: %w", b.o.postgres, err)
		}
	}

	// The webhook receiver.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hsrv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		b.hooks.Add(1)
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = hsrv.Serve(ln) }()
	b.addCleanup(func() { hsrv.Close() })
	b.hookURL = "http://" + ln.Addr().String() + "/hook"

	// The binaries.
	b.logf("building the servers")
	nowBin, err := b.build("now", b.o.now, b.o.nowBin, b.o.profile != "")
	if err != nil {
		return err
	}
	baseSrc := b.o.base
	if baseSrc == "" && b.o.baseBin == "" {
		baseSrc = filepath.Join(b.work, "base-"+b.o.baseRev)
		out, err := exec.CommandContext(b.ctx, "git", "-C", b.o.repo, "worktree", "add", "--detach", baseSrc, b.o.baseRev).CombinedOutput()
		if err != nil {
			return fmt.Errorf("git worktree add %s: %v: %s", b.o.baseRev, err, out)
		}
		b.addCleanup(func() {
			_ = exec.Command("git", "-C", b.o.repo, "worktree", "remove", "--force", baseSrc).Run()
		})
	}
	baseProf := false
	if b.o.profile != "" && b.o.base == "" && b.o.baseBin == "" {
		// The temporary worktree gets this checkout's pprof file, so that
		// the old server can be profiled the same way.
		dst := filepath.Join(baseSrc, "examples", "server", "pprof.go")
		if _, err := os.Stat(dst); errors.Is(err, os.ErrNotExist) {
			if src, err := os.ReadFile(filepath.Join(b.o.now, "examples", "server", "pprof.go")); err == nil {
				baseProf = os.WriteFile(dst, src, 0o644) == nil
			}
		} else {
			baseProf = err == nil
		}
	}
	baseBin, err := b.build("base", baseSrc, b.o.baseBin, baseProf)
	if err != nil {
		return err
	}
	b.profiled = map[string]bool{"now": b.o.profile != "" && b.o.nowBin == "", "base": baseProf}
	bins := map[string]string{"base": baseBin, "now": nowBin}
	if b.o.profile != "" {
		if err := os.MkdirAll(b.o.profile, 0o755); err != nil {
			return err
		}
	}

	for r := 1; r <= b.o.rounds; r++ {
		// The order alternates (base first in odd rounds, the new server
		// first in even ones): a machine that drifts, or a run that
		// leaves work behind for the next, favours neither.
		sides := []string{"base", "now"}
		if r%2 == 0 {
			sides = []string{"now", "base"}
		}
		for _, store := range b.o.stores {
			for _, side := range sides {
				if err := b.ctx.Err(); err != nil {
					return err
				}
				b.logf("round %d/%d: %s on %s", r, b.o.rounds, b.name(side), store)
				if err := b.measureServer(side, bins[side], store, r); err != nil {
					return fmt.Errorf("%s on %s: %w", b.name(side), store, err)
				}
			}
		}
		b.logf("round %d/%d: ceiling", r, b.o.rounds)
		if err := b.measureCeiling(); err != nil {
			return fmt.Errorf("ceiling: %w", err)
		}
	}
	b.print(os.Stdout)
	return nil
}

func (b *bench) name(side string) string {
	switch side {
	case "base":
		return b.o.baseName
	case "now":
		return b.o.nowName
	}
	return side
}

func checkLoopbackURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if h := u.Hostname(); h != "127.0.0.1" && h != "localhost" {
		return fmt.Errorf("-postgres must be on 127.0.0.1, not %q", h)
	}
	return nil
}

// build returns bin when set, else builds examples/server from src.
func (b *bench) build(side, src, bin string, pprofTag bool) (string, error) {
	if bin != "" {
		return filepath.Abs(bin)
	}
	out := filepath.Join(b.work, "server-"+side)
	args := []string{"build", "-o", out}
	if pprofTag {
		args = append(args, "-tags", "pprof")
	}
	args = append(args, "./examples/server")
	cmd := exec.CommandContext(b.ctx, "go", args...)
	cmd.Dir = src
	if o, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s in %s: %v: %s", side, src, err, o)
	}
	return out, nil
}

// freePort returns a 127.0.0.1 port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

var dbSeq atomic.Int64

// server is one started server process.
type server struct {
	cmd     *exec.Cmd
	base    string // http://127.0.0.1:PORT/api/v2
	root    string // http://127.0.0.1:PORT
	token   string
	pprof   string // http://127.0.0.1:PORT when built with pprof
	streams int
	stop    func()
}

// startServer starts bin on a fresh store and prepares its channels,
// seed messages and streams. stop ends everything it set up.
func (b *bench) startServer(side, bin, store string) (*server, error) {
	s := &server{}
	var undo []func()
	s.stop = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
		undo = nil
	}
	fail := func(err error) (*server, error) {
		s.stop()
		return nil, err
	}
	dir, err := os.MkdirTemp(b.work, side+"-"+store+"-")
	if err != nil {
		return nil, err
	}
	undo = append(undo, func() {
		if !b.o.keepServerLogs {
			os.RemoveAll(dir)
		}
	})
	var storeArg string
	switch store {
	case "sqlite":
		storeArg = "sqlite:" + filepath.Join(dir, "chat.db")
	case "postgres":
		name := fmt.Sprintf("chatbench_%d_%d", os.Getpid(), dbSeq.Add(1))
		db, err := sql.Open("postgres", b.o.postgres)
		if err != nil {
			return fail(err)
		}
		// A database name cannot be a bound parameter; this one is made
		// of digits and underscores here, and quoted.
		if _, err := db.ExecContext(b.ctx, "CREATE DATABASE "+pq.QuoteIdentifier(name)); err != nil {
			db.Close()
			return fail(fmt.Errorf("creating database %s: %w", name, err))
		}
		db.Close()
		drop := func() {
			// A connection of its own, with a context of its own: the run's
			// context may be cancelled by now. Retried, as the server's
			// sessions may still be ending.
			for i := 0; i < 5; i++ {
				if i > 0 {
					time.Sleep(time.Second)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				ddb, err := sql.Open("postgres", b.o.postgres)
				if err == nil {
					_, err = ddb.ExecContext(ctx, "DROP DATABASE IF EXISTS "+pq.QuoteIdentifier(name)+" WITH (FORCE)")
					ddb.Close()
				}
				cancel()
				if err == nil {
					return
				}
				b.logf("dropping database %s: %v", name, err)
			}
		}
		undo = append(undo, drop)
		u, _ := url.Parse(b.o.postgres)
		u.Path = "/" + name
		storeArg = u.String()
	}
	port, err := freePort()
	if err != nil {
		return fail(err)
	}
	env := []string{}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "CHAT_") && !strings.HasPrefix(e, "GOGC=") {
			env = append(env, e)
		}
	}
	env = append(env,
		"CHAT_STORE="+storeArg,
		"CHAT_ADDR=127.0.0.1:"+strconv.Itoa(port),
		"CHAT_WEBHOOK_URL="+b.hookURL,
		"CHAT_WEBHOOK_SECRET=bench-secret",
		"CHAT_ALLOW_PRIVATE_WEBHOOKS=true",
		"CHAT_ADMIN_RATE=1000000000",
		// The streams are all opened with the one admin token: no cap
		// of streams per caller (where the server has one).
		"CHAT_MAX_STREAMS_PER_CALLER=0",
		"CHAT_DRAIN_DELAY=0s",
		"CHAT_SHUTDOWN_TIMEOUT=10s",
	)
	if b.profiled[side] {
		pp, err := freePort()
		if err != nil {
			return fail(err)
		}
		env = append(env, "CHAT_PPROF_ADDR=127.0.0.1:"+strconv.Itoa(pp))
		s.pprof = "http://127.0.0.1:" + strconv.Itoa(pp)
	}

	// The admin, before the server starts (every version has `admin create`).
	var out, errb bytes.Buffer
	adm := exec.CommandContext(b.ctx, bin, "admin", "create", "bench")
	adm.Env = env
	adm.Stdout, adm.Stderr = &out, &errb
	if err := adm.Run(); err != nil {
		return fail(fmt.Errorf("admin create: %v: %s", err, errb.String()))
	}
	s.token = strings.TrimSpace(out.String())

	logPath := filepath.Join(dir, "server.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return fail(err)
	}
	if b.o.keepServerLogs {
		b.logf("%s on %s: log in %s", b.name(side), store, logPath)
	}
	s.cmd = exec.Command(bin)
	s.cmd.Env = env
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return fail(err)
	}
	exited := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(exited); logf.Close() }()
	kill := func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = s.cmd.Process.Kill()
			<-exited
		}
	}
	undo = append(undo, kill)
	// An interrupt of the whole run stops the server too.
	b.addCleanup(func() {
		select {
		case <-exited:
		default:
			kill()
		}
	})
	root := "http://127.0.0.1:" + strconv.Itoa(port)
	s.base, s.root = root+"/api/v2", root
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(root + "/livez")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			return fail(fmt.Errorf("the server exited: %s", tail(log)))
		case <-b.ctx.Done():
			return fail(b.ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fail(errors.New("the server did not answer /livez within 60 s"))
		}
	}

	channels := []string{"bench", "query"}
	if !slices.Contains(channels, b.o.streamChannel) {
		channels = append(channels, b.o.streamChannel)
	}
	for _, ch := range channels {
		body, err := json.Marshal(map[string]any{"channelId": ch, "type": "standard", "userIds": []string{"bench"}})
		if err != nil {
			return fail(err)
		}
		if _, err := b.post(s, "/channel", string(body)); err != nil {
			return fail(fmt.Errorf("creating channel %s: %w", ch, err))
		}
	}
	for i := 0; i < b.o.seed; i++ {
		body := fmt.Sprintf(`{"channelId":"query","type":"text","data":{"text":"seed message %d, about as long as a short chat line"}}`, i)
		n, err := b.post(s, "/message", body)
		if err != nil {
			return fail(fmt.Errorf("seeding: %w", err))
		}
		if side == "now" {
			b.createBytes = n
		}
	}
	n, err := b.post(s, "/messages", fmt.Sprintf(`{"channelId":"query","options":{"last":%d}}`, b.o.page))
	if err != nil {
		return fail(fmt.Errorf("query: %w", err))
	}
	if side == "now" {
		b.queryBytes = n
	}

	// The event streams.
	if b.o.streams > 0 {
		sctx, scancel := context.WithCancel(b.ctx)
		var wg sync.WaitGroup
		undo = append(undo, func() { scancel(); wg.Wait() })
		wsURL := "ws" + strings.TrimPrefix(s.base, "http") + "/events?channelId=" + url.QueryEscape(b.o.streamChannel)
		h := http.Header{"Authorization": {"Bearer " + s.token}}
		for i := 0; i < b.o.streams; i++ {
			dctx, dcancel := context.WithTimeout(sctx, 10*time.Second)
			c, resp, err := websocket.Dial(dctx, wsURL, &websocket.DialOptions{HTTPHeader: h})
			dcancel()
			if err != nil {
				if i == 0 && resp != nil && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed) {
					b.noStreams[side] = true
					break
				}
				return fail(fmt.Errorf("opening event stream %d: %w", i+1, err))
			}
			c.SetReadLimit(1 << 20)
			s.streams++
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					if _, _, err := c.Read(sctx); err != nil {
						_ = c.CloseNow()
						return
					}
				}
			}()
		}
	}
	b.streamsOpen[side] = s.streams
	return s, nil
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// post sends one admin request and returns the response's length.
func (b *bench) post(s *server, path, body string) (int, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+path, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("POST %s: %s: %s", path, resp.Status, tail(rb))
	}
	return len(rb), nil
}

func (b *bench) measureServer(side, bin, store string, round int) error {
	s, err := b.startServer(side, bin, store)
	if err != nil {
		return err
	}
	defer s.stop()
	h0 := b.hooks.Load()
	var reqs int64
	for _, op := range b.o.ops {
		for _, c := range b.o.conns {
			// Each run starts with no dirty page of an earlier one (of
			// this server or the one before) left for the kernel to
			// write back while it runs.
			syscall.Sync()
			var prof func() error
			if s.pprof != "" && round == 1 {
				ext := ".pprof"
				if b.o.trace {
					ext = ".trace"
				}
				prof = b.profileDuring(s, fmt.Sprintf("%s-%s-%s-%d%s", b.name(side), store, op, c, ext))
			}
			c0, hk0 := claimCount(s.root), b.hooks.Load()
			r, err := b.wrk(s.base, s.token, op, c, s.cmd.Process.Pid, prof)
			if err != nil {
				return err
			}
			if r.non2xx > 0 {
				b.logf("%s on %s, %s at %d: %d responses were not 2xx", b.name(side), store, op, c, r.non2xx)
			}
			reqs += r.requests
			// Deliveries still due from this run are delivered before the
			// next one starts, so that each run is charged with its own.
			r.catchUp = b.settle()
			r.claims = -1
			if c1, n := claimCount(s.root), b.hooks.Load()-hk0; c0 >= 0 && c1 >= 0 && n > 0 {
				r.claims = float64(c1-c0) / float64(n)
			}
			k := key{op, store, c, side}
			b.results[k] = append(b.results[k], r)
			b.logf("round %d: %s on %s, %s at %d: %s req/s, p99 %s ms, %d µs CPU/req", round, b.name(side), store, op, c,
				thousands(r.rate), ms(r.p99), (r.cpu / time.Duration(max(r.requests, 1))).Microseconds())
		}
	}
	b.hooksBySide[side] += b.hooks.Load() - h0
	return nil
}

// settle waits until the webhook receiver has had no delivery for a
// second (at most a minute) and returns how long deliveries went on.
func (b *bench) settle() time.Duration {
	start := time.Now()
	last, lastChange := b.hooks.Load(), start
	for time.Since(lastChange) < time.Second && time.Since(start) < time.Minute && b.ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
		if n := b.hooks.Load(); n != last {
			last, lastChange = n, time.Now()
		}
	}
	return lastChange.Sub(start)
}

// profileDuring returns a function that fetches a CPU profile of the
// server for the measured run (with -trace, an execution trace of its
// first 2 s), started while wrk runs.
func (b *bench) profileDuring(s *server, file string) func() error {
	return func() error {
		secs := int(b.o.duration / time.Second)
		if secs < 1 {
			secs = 1
		}
		kind := "profile"
		if b.o.trace {
			kind, secs = "trace", 2
		}
		resp, err := http.Get(fmt.Sprintf("%s/debug/pprof/%s?seconds=%d", s.pprof, kind, secs))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		f, err := os.Create(filepath.Join(b.o.profile, file))
		if err != nil {
			return err
		}
		_, err = io.Copy(f, resp.Body)
		return errors.Join(err, f.Close())
	}
}

func (b *bench) measureCeiling() error {
	port, err := freePort()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(self, "-ceiling-serve", addr, "-ceiling-sizes", fmt.Sprintf("%d,%d", max(b.createBytes, 64), max(b.queryBytes, 64)))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	base := "http://" + addr + "/api/v2"
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if i > 200 {
			return errors.New("the ceiling did not start")
		}
		time.Sleep(25 * time.Millisecond)
	}
	for _, op := range b.o.ops {
		for _, c := range b.o.conns {
			r, err := b.wrk(base, "none", op, c, cmd.Process.Pid, nil)
			if err != nil {
				return err
			}
			k := key{op, "", c, "ceiling"}
			b.results[k] = append(b.results[k], r)
		}
	}
	return nil
}

// serveCeiling is the ceiling process: a chi router answering POST
// /api/v2/message and /api/v2/messages with a JSON body of the given sizes.
func serveCeiling(addr, sizes string) error {
	debug.SetGCPercent(400) // as the example server sets it with SQLite or Postgres
	var cs, qs int
	if _, err := fmt.Sscanf(sizes, "%d,%d", &cs, &qs); err != nil {
		return fmt.Errorf("-ceiling-sizes: %w", err)
	}
	body := func(n int) []byte {
		const empty = len(`{"success":true,"padding":""}` + "\n")
		b, _ := json.Marshal(struct {
			Success bool   `json:"success"`
			Padding string `json:"padding"`
		}{true, strings.Repeat("x", max(n-empty, 0))})
		return append(b, '\n')
	}
	create, query := body(cs), body(qs)
	reply := func(b []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			h := w.Header()
			h.Set("Content-Type", "application/json; charset=utf-8")
			h.Set("Content-Length", strconv.Itoa(len(b)))
			_, _ = w.Write(b)
		}
	}
	r := chi.NewRouter()
	r.Post("/api/v2/message", reply(create))
	r.Post("/api/v2/messages", reply(query))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		select {
		case <-ctx.Done():
		case <-time.After(30 * time.Minute):
		}
		srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// cpuTime is the user+system CPU time of process pid so far.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * (time.Second / 100) // USER_HZ is 100 on Linux
}

// wrk runs the warm-up and the measured run of op at c connections.
// prof, when set, runs during the measured run.
func (b *bench) wrk(base, token, op string, c, pid int, prof func() error) (result, error) {
	script := filepath.Join(b.o.repo, "bench", "api.lua")
	cmd := func(d time.Duration) *exec.Cmd {
		secs := strconv.Itoa(int(d/time.Second)) + "s" // wrk takes whole seconds
		w := exec.CommandContext(b.ctx, "wrk", "-t1", "-c"+strconv.Itoa(c), "-d"+secs, "--timeout", "10s", "--latency", "-s", script, base)
		w.Env = append(os.Environ(), "TOKEN="+token, "OP="+op, "LAST="+strconv.Itoa(b.o.page))
		return w
	}
	if b.o.warmup > 0 {
		if out, err := cmd(b.o.warmup).CombinedOutput(); err != nil {
			return result{}, fmt.Errorf("wrk: %v: %s", err, out)
		}
	}
	var perr error
	var pwg sync.WaitGroup
	if prof != nil {
		pwg.Add(1)
		go func() { defer pwg.Done(); perr = prof() }()
	}
	c0, h0 := cpuTime(pid), b.hooks.Load()
	out, err := cmd(b.o.duration).CombinedOutput()
	c1, h1 := cpuTime(pid), b.hooks.Load()
	pwg.Wait()
	if err != nil {
		return result{}, fmt.Errorf("wrk: %v: %s", err, out)
	}
	if perr != nil {
		b.logf("profile: %v", perr)
	}
	r, err := parseWrk(string(out))
	r.cpu = c1 - c0
	r.inRun = h1 - h0
	return r, err
}

// parseWrk reads requests/s, the p99, the request count and the non-2xx
// count from wrk --latency's output.
func parseWrk(out string) (result, error) {
	var r result
	var haveRate, haveP99 bool
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "Requests/sec:":
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return r, fmt.Errorf("wrk: %q: %w", line, err)
			}
			r.rate, haveRate = v, true
		case len(f) == 2 && f[0] == "99%":
			d, err := parseWrkDuration(f[1])
			if err != nil {
				return r, fmt.Errorf("wrk: %q: %w", line, err)
			}
			r.p99, haveP99 = d, true
		case len(f) >= 4 && f[1] == "requests" && f[2] == "in":
			r.requests, _ = strconv.ParseInt(f[0], 10, 64)
		case strings.HasPrefix(strings.TrimSpace(line), "Non-2xx or 3xx responses:"):
			r.non2xx, _ = strconv.ParseInt(f[len(f)-1], 10, 64)
		}
	}
	if !haveRate || !haveP99 {
		return r, fmt.Errorf("wrk printed no rate or p99: %s", out)
	}
	return r, nil
}

// parseWrkDuration reads wrk's durations: 512.00us, 1.94ms, 2.01s, 1.00m.
func parseWrkDuration(s string) (time.Duration, error) {
	for _, u := range []struct {
		suffix string
		unit   time.Duration
	}{{"us", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, err
			}
			return time.Duration(math.Round(f * float64(u.unit))), nil
		}
	}
	return 0, fmt.Errorf("unknown unit in %q", s)
}

func median[T int64 | float64 | time.Duration](v []T) T {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// pairedRatio is the median over the rounds of the new server's requests
// per second divided by the base's in the same round: a round where the
// machine ran slower for both weighs like any other.
func pairedRatio(base, now []result) float64 {
	return median(roundRatios(base, now))
}

// roundRatios are the new server's requests per second divided by the
// base's, round by round.
func roundRatios(base, now []result) []float64 {
	var rs []float64
	for i := range min(len(base), len(now)) {
		if base[i].rate > 0 {
			rs = append(rs, now[i].rate/base[i].rate)
		}
	}
	return rs
}

// medianInterval returns an interval that holds the median of what v
// samples (the ratio a run of endless rounds would find) with probability
// at least conf, assuming only that the rounds are independent: the k-th
// smallest and the k-th largest of v for the largest k whose coverage,
// 1 - 2 P(B < k) for B binomial(len(v), 1/2), is at least conf. ok is
// false when even the smallest and largest do not reach conf (fewer than
// 5 values for 0.9).
func medianInterval(v []float64, conf float64) (lo, hi float64, ok bool) {
	n := len(v)
	s := slices.Clone(v)
	slices.Sort(s)
	// below[k] = P(B < k) = P(B <= k-1).
	p := math.Pow(0.5, float64(n)) // P(B = 0)
	cum := 0.0
	k := 0
	for j := 0; j < n/2; j++ {
		cum += p // now P(B <= j)
		if 1-2*cum < conf {
			break
		}
		k = j + 1
		p = p * float64(n-j) / float64(j+1) // P(B = j+1)
	}
	if k == 0 {
		return 0, 0, false
	}
	return s[k-1], s[n-k], true
}

// interval formats medianInterval of the round ratios at 90 %.
func interval(base, now []result) string {
	lo, hi, ok := medianInterval(roundRatios(base, now), 0.9)
	if !ok {
		return "n/a"
	}
	return fmt.Sprintf("%.2f-%.2f", lo, hi)
}

func medians(rs []result) (rate float64, p99 time.Duration, cpuPerReq time.Duration, non2xx int64) {
	var rates []float64
	var p99s, cpus []time.Duration
	for _, r := range rs {
		rates = append(rates, r.rate)
		p99s = append(p99s, r.p99)
		if r.requests > 0 {
			cpus = append(cpus, r.cpu/time.Duration(r.requests))
		}
		non2xx += r.non2xx
	}
	return median(rates), median(p99s), median(cpus), non2xx
}

// doneRates is the median over rs of a run's requests per second counted
// until its last webhook delivery: the rate times d over d plus the time
// deliveries went on after the run.
func doneRates(rs []result, d time.Duration) float64 {
	var vs []float64
	for _, r := range rs {
		vs = append(vs, r.rate*d.Seconds()/(d+r.catchUp).Seconds())
	}
	return median(vs)
}

func catchUps(rs []result) time.Duration {
	var ds []time.Duration
	for _, r := range rs {
		ds = append(ds, r.catchUp)
	}
	return median(ds)
}

// claimCount returns how many webhook claim transactions the server has
// run, from its /metrics, or -1 when it does not report them.
func claimCount(root string) int64 {
	resp, err := http.Get(root + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "chat_store_operation_duration_seconds_count{") ||
			!strings.Contains(line, `kind="update"`) || !strings.Contains(line, `op="webhook.claim"`) {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			return int64(v)
		}
	}
	return -1
}

// claimRatio is the median of the claims per delivery, "n/a" when the
// server did not report them.
func claimRatio(rs []result) string {
	var vs []float64
	for _, r := range rs {
		if r.claims >= 0 {
			vs = append(vs, r.claims)
		}
	}
	if len(vs) == 0 {
		return "n/a"
	}
	slices.Sort(vs)
	return strconv.FormatFloat(vs[len(vs)/2], 'f', 2, 64)
}

// inRunShare is the median over rs of the webhook deliveries received
// during a measured run per request of that run ("n/a" for queries, which
// make none).
func inRunShare(rs []result) string {
	var vs []float64
	for _, r := range rs {
		if r.requests > 0 && r.inRun > 0 {
			vs = append(vs, float64(r.inRun)/float64(r.requests))
		}
	}
	if len(vs) == 0 {
		return "n/a"
	}
	slices.Sort(vs)
	return strconv.FormatFloat(vs[len(vs)/2], 'f', 2, 64)
}

func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) }

func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

func thousands(v float64) string {
	s := strconv.FormatInt(int64(v+0.5), 10)
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func (b *bench) print(w io.Writer) {
	opName := map[string]string{"create": "create message", "query": fmt.Sprintf("query %d messages", b.o.page)}
	storeName := map[string]string{"sqlite": "SQLite", "postgres": "Postgres"}
	bn, nn := b.name("base"), b.name("now")
	fmt.Fprintf(w, "| op | store | conns | %s req/s | %s req/s | %s/%s | 90 %% interval | p99 ms %s → %s | ceiling req/s | %s/ceiling |\n", bn, nn, nn, bn, bn, nn, nn)
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	var bad []string
	for _, op := range b.o.ops {
		for _, store := range b.o.stores {
			for _, c := range b.o.conns {
				br, bp, _, bbad := medians(b.results[key{op, store, c, "base"}])
				nr, np, _, nbad := medians(b.results[key{op, store, c, "now"}])
				cr, _, _, _ := medians(b.results[key{op, "", c, "ceiling"}])
				bres, nres := b.results[key{op, store, c, "base"}], b.results[key{op, store, c, "now"}]
				fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %.2f | %s | %s → %s | %s | %.3f |\n",
					opName[op], storeName[store], c, thousands(br), thousands(nr), pairedRatio(bres, nres), interval(bres, nres),
					ms(bp), ms(np), thousands(cr), nr/cr)
				if bbad+nbad > 0 {
					bad = append(bad, fmt.Sprintf("%s %s %d: %d non-2xx responses (%s %d, %s %d)", op, store, c, bbad+nbad, bn, bbad, nn, nbad))
				}
			}
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Server CPU time per request (medians; user+system of the server process over the measured run, divided by its requests), "+
		"webhook deliveries received during the measured run per request (a server whose dispatcher falls behind leaves part of the run's work for after it), "+
		"how long webhook deliveries went on after the run ended (medians; the next run waits for them), "+
		"and requests per second counted until the run's last delivery (requests ÷ (run + deliveries after)):")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "| op | store | conns | %s µs | %s µs | ceiling µs | deliveries in the run per request, %s → %s | deliveries after the run, %s → %s | req/s until the last delivery, %s → %s | %s/%s | claim transactions per delivery, %s → %s |\n", bn, nn, bn, nn, bn, nn, bn, nn, nn, bn, bn, nn)
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, op := range b.o.ops {
		for _, store := range b.o.stores {
			for _, c := range b.o.conns {
				_, _, bc, _ := medians(b.results[key{op, store, c, "base"}])
				_, _, nc, _ := medians(b.results[key{op, store, c, "now"}])
				_, _, cc, _ := medians(b.results[key{op, "", c, "ceiling"}])
				bd, nd := doneRates(b.results[key{op, store, c, "base"}], b.o.duration), doneRates(b.results[key{op, store, c, "now"}], b.o.duration)
				fmt.Fprintf(w, "| %s | %s | %d | %d | %d | %d | %s → %s | %s → %s s | %s → %s | %.2f | %s → %s |\n", opName[op], storeName[store], c, bc.Microseconds(), nc.Microseconds(), cc.Microseconds(),
					inRunShare(b.results[key{op, store, c, "base"}]), inRunShare(b.results[key{op, store, c, "now"}]),
					seconds(catchUps(b.results[key{op, store, c, "base"}])), seconds(catchUps(b.results[key{op, store, c, "now"}])),
					thousands(bd), thousands(nd), nd/bd,
					claimRatio(b.results[key{op, store, c, "base"}]), claimRatio(b.results[key{op, store, c, "now"}]))
			}
		}
	}
	fmt.Fprintln(w)
	load, _ := os.ReadFile("/proc/loadavg")
	lf := strings.Fields(string(load))
	if len(lf) > 3 {
		lf = lf[:3]
	}
	fmt.Fprintf(w, "wrk -t1 over 127.0.0.1, %v per run after %v of warm-up, %d rounds (per round and store: %s, then %s, in even rounds the other way round; then the ceiling), medians (the ratio: median of the rounds' ratios; its 90 %% interval: the k-th smallest to the k-th largest round ratio, k from the binomial distribution, for rounds assumed independent); "+
		"%s, %d CPUs, load average at the end %s.\n",
		b.o.duration, b.o.warmup, b.o.rounds, bn, nn, runtime.Version(), runtime.NumCPU(), strings.Join(lf, " "))
	for _, side := range []string{"base", "now"} {
		streams := fmt.Sprintf("%d event streams open (admin token, ?channelId=%s)", b.streamsOpen[side], b.o.streamChannel)
		if b.noStreams[side] {
			streams = "no event streams (the server has no /events)"
		}
		fmt.Fprintf(w, "%s: the example server binary with all it starts by itself; one webhook answering 204 (%d deliveries received by the end of its runs); %s.\n",
			b.name(side), b.hooksBySide[side], streams)
	}
	fmt.Fprintf(w, "The ceiling is a chi handler in its own process answering %d and %d bytes of JSON (the new server's create and query responses).\n", b.createBytes, b.queryBytes)
	for _, s := range bad {
		fmt.Fprintln(w, "WARNING:", s)
	}
}

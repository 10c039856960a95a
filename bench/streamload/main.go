// Command streamload measures the event stream (GET /events over
// WebSocket) of the real HTTP API, each figure beside a ceiling measured in
// the same run, and prints Markdown rows for docs/benchmarks.md:
//
//   - idle: -idle connections held open; the server process's memory
//     (Go heap in use + goroutine stacks, and RSS, after a full
//     collection) and goroutines per connection; ceiling: a bare
//     coder/websocket server holding the same connections.
//   - latency: -members end users of one channel connected; -messages
//     messages created one at a time through POST /api/v2/message, each
//     timed from just before the request to its receipt by the last
//     member (p50, p99); ceiling: the same create with nobody connected.
//     The frames of other events received meanwhile are counted (with the
//     example server: user.didChangePresence of the members that just
//     connected, about members²/2 of them); -trace prints each message.
//   - throughput: the same members; -burst messages posted by 4 writers as
//     fast as the store takes them; events received per second by all
//     members together, from the first post to the last receipt; ceiling:
//     the bare server writing as many frames of the same size to the same
//     connections.
//
// With -store sqlite (default) one server process runs over SQLite in a
// temporary directory; with -store postgres -dsn URL two server processes
// share a fresh schema of that database (dropped at the end), members are
// connected to both in turn, and messages are posted through the first.
//
// Every server is a child process of this one (the same binary with
// -role), so the figures of the server are its own, apart from the
// clients. They listen on 127.0.0.1:0 and end when this process ends, or
// after -max-runtime. Each run is bounded by its counts and by -timeout.
//
//	go run ./bench/streamload
//	go run ./bench/streamload -store postgres -dsn 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//
// Connections use one file descriptor each on both sides: Go raises each
// process's soft limit of open files to the hard limit (ulimit -Hn) at
// start, so -idle must stay below that.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/golang-jwt/jwt/v5"
	"github.com/lib/pq"

	chat "github.com/chatengine/chat"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "streamload:", err)
		os.Exit(1)
	}
}

type options struct {
	serveOpts
	scenarios []string
	idle      int
	members   int
	messages  int
	burst     int
	timeout   time.Duration
	hold      time.Duration
	trace     bool
	postURL   string
	token     string
	// fanout, and the example server processes
	conns       int
	channelSize int
	rate        int
	duration    time.Duration
	procs       int
	broker      string
	example     *string // the example server's binary, once built (run removes its directory)
}

// exampleBin builds examples/server once per run and returns the binary.
func (o *options) exampleBin() (string, error) {
	if *o.example != "" {
		return *o.example, nil
	}
	dir, err := os.MkdirTemp("", "streamload-bin")
	if err != nil {
		return "", err
	}
	bin, err := buildExample(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	*o.example = bin
	return bin, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("streamload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var scen string
	fs.StringVar(&o.role, "role", "", "internal: run as a server process (chat or ceiling)")
	fs.StringVar(&o.store, "store", "sqlite", "store of the chat servers: sqlite (one process) or postgres (two processes, needs -dsn)")
	fs.StringVar(&o.dsn, "dsn", "", "Postgres URL (127.0.0.1 only) for -store postgres")
	fs.StringVar(&o.schema, "schema", "", "internal: the Postgres schema of a server process")
	fs.StringVar(&o.secret, "secret", "", "internal: the user-token secret of a server process")
	fs.BoolVar(&o.seedAdmin, "seed-admin", false, "internal: create the admin and print its token")
	fs.DurationVar(&o.maxRuntime, "max-runtime", 30*time.Minute, "a server process ends after this long at most")
	fs.StringVar(&scen, "scenarios", "idle,latency,throughput", "what to measure: idle, latency, throughput, fanout")
	fs.IntVar(&o.idle, "idle", 10_000, "idle connections (1-100,000)")
	fs.IntVar(&o.members, "members", 1000, "connected members of the channel for latency and throughput (1-10,000)")
	fs.IntVar(&o.messages, "messages", 200, "messages timed one at a time for latency (1-10,000)")
	fs.IntVar(&o.burst, "burst", 500, "messages posted for throughput (1-999: below the queue of 1,000, so nobody is closed as too slow)")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "bound of each scenario")
	fs.StringVar(&o.postURL, "post-url", "", "internal: the chat server (http://127.0.0.1:PORT) a post process posts to")
	fs.StringVar(&o.token, "token", "", "internal: the admin token of a post process")
	fs.IntVar(&o.conns, "conns", 10_000, "fanout: connections (10-100,000)")
	fs.IntVar(&o.channelSize, "channel-size", 10, "fanout: members of each channel (1-1,000, dividing -conns)")
	fs.IntVar(&o.rate, "rate", 200, "fanout: messages posted per second across the channels (1-10,000)")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "fanout: how long messages are posted (1s-5m)")
	fs.IntVar(&o.procs, "procs", 2, "fanout with -store postgres: server processes (1-8)")
	fs.StringVar(&o.broker, "broker", "", "the chat servers are example server processes run with -broker VALUE (nats: a local nats-server is started and its URL passed); empty: the store's own delivery")
	fs.BoolVar(&o.trace, "trace", false, "latency: print each message's times (post answered, first and last receipt) and the frames of other events received so far to stderr, and the servers' CPU time at the end")
	fs.DurationVar(&o.hold, "hold", 0, "idle: keep the connections open this long before measuring (to inspect the servers' /debug/pprof/)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.role == "post" {
		return postBurst(o)
	}
	if o.role != "" {
		return serve(o.serveOpts, stdout)
	}
	switch {
	case o.idle < 1 || o.idle > 100_000:
		return errors.New("-idle must be 1-100000")
	case o.members < 1 || o.members > 10_000:
		return errors.New("-members must be 1-10000")
	case o.messages < 1 || o.messages > 10_000:
		return errors.New("-messages must be 1-10000")
	case o.burst < 1 || o.burst > 999:
		return errors.New("-burst must be 1-999")
	case o.store == "postgres" && !loopbackDSN(o.dsn):
		return errors.New("-store postgres needs -dsn with host 127.0.0.1, as postgres://USER@127.0.0.1:5432/DB")
	case o.store != "postgres" && o.store != "sqlite":
		return errors.New("-store must be sqlite or postgres")
	case o.conns < 10 || o.conns > 100_000:
		return errors.New("-conns must be 10-100000")
	case o.channelSize < 1 || o.channelSize > 1000 || o.conns%o.channelSize != 0:
		return errors.New("-channel-size must be 1-1000 and divide -conns")
	case o.rate < 1 || o.rate > 10_000:
		return errors.New("-rate must be 1-10000")
	case o.duration < time.Second || o.duration > 5*time.Minute:
		return errors.New("-duration must be 1s-5m")
	case o.procs < 1 || o.procs > 8:
		return errors.New("-procs must be 1-8")
	case o.broker != "" && o.broker != "nats" && !loopbackBroker(o.broker):
		return errors.New("-broker must be nats, inprocess, postgres or nats://127.0.0.1:PORT[,...]")
	}
	o.example = new(string)
	defer func() {
		if *o.example != "" {
			_ = os.RemoveAll(filepath.Dir(*o.example))
		}
	}()
	o.scenarios = strings.Split(scen, ",")
	var b [16]byte
	_, _ = rand.Read(b[:])
	o.secret = hex.EncodeToString(b[:])

	fmt.Fprintf(stdout, "| what | figure | ceiling in the same run | ratio | load | command |\n|---|---|---|---|---|---|\n")
	for _, s := range o.scenarios {
		if o.store == "postgres" { // a fresh schema per scenario
			o.schema = fmt.Sprintf("streamload_%d_%s", os.Getpid(), s)
			defer dropSchema(o.dsn, o.schema)
		}
		ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
		var err error
		switch s {
		case "idle":
			err = idle(ctx, o, stdout)
		case "latency":
			err = latency(ctx, o, stdout, stderr)
		case "throughput":
			err = throughput(ctx, o, stdout)
		case "fanout":
			err = fanout(ctx, o, stdout)
		default:
			err = fmt.Errorf("unknown scenario %q", s)
		}
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// loopbackBroker reports whether a -broker value is a broker name or
// NATS URLs of host 127.0.0.1 only.
func loopbackBroker(b string) bool {
	if b == "inprocess" || b == "postgres" {
		return true
	}
	for _, s := range strings.Split(b, ",") {
		u, err := url.Parse(s)
		if err != nil || u.Scheme != "nats" || u.Hostname() != "127.0.0.1" {
			return false
		}
	}
	return true
}

// loopbackDSN reports whether dsn is a postgres:// URL of host 127.0.0.1.
func loopbackDSN(dsn string) bool {
	u, err := url.Parse(dsn)
	return err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") && u.Hostname() == "127.0.0.1"
}

func dropSchema(dsn, schema string) {
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return
	}
	defer db.Close()
	_, _ = db.Exec("DROP SCHEMA IF EXISTS " + pq.QuoteIdentifier(schema) + " CASCADE")
}

// proc is a server process started by this one.
type proc struct {
	cmd   *exec.Cmd
	stdin io.Closer
	ready
	also func() // called after the process ended by stop, when not nil
}

// start runs this binary as a server process and waits for its ready line.
func start(o options, role string, seed bool) (*proc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"-role", role, "-store", o.store, "-dsn", o.dsn, "-schema", o.schema, "-secret", o.secret,
		"-max-runtime", o.maxRuntime.String()}
	if seed {
		args = append(args, "-seed-admin")
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, stdin: in}
	line, err := bufio.NewReader(out).ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &p.ready)
	}
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("server process: %w", err)
	}
	return p, nil
}

// stop kills the process (its sockets close with it) and waits for it.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	if p.stdin != nil {
		p.stdin.Close()
	}
	_ = p.cmd.Wait()
	if p.also != nil {
		p.also()
	}
}

func (p *proc) mem(ctx context.Context) (memReport, error) {
	var m memReport
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.Addr+"/debug/mem", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return m, err
	}
	defer resp.Body.Close()
	return m, json.NewDecoder(resp.Body).Decode(&m)
}

// load returns the load averages of /proc/loadavg, as uptime prints them.
func load() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// api calls the HTTP API of a chat server as its admin.
type api struct {
	base, token string
	c           *http.Client
}

func newAPI(p *proc, token string) *api {
	return &api{base: "http://" + p.Addr + "/api/v2", token: token,
		c: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: time.Minute}}
}

func (a *api) post(ctx context.Context, path string, body any) error {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, a.base+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s: %s", path, resp.Status, rb)
	}
	return nil
}

// createChannel creates channel id with members u<first>..u<first+n-1>.
func (a *api) createChannel(ctx context.Context, id string, first, n int) error {
	ids := func(from, to int) []string {
		var s []string
		for i := from; i < to; i++ {
			s = append(s, fmt.Sprintf("u%d", i))
		}
		return s
	}
	if err := a.post(ctx, "/channel", map[string]any{"channelId": id, "type": "standard",
		"userIds": ids(first, first+min(n, 1000))}); err != nil {
		return err
	}
	for i := first + 1000; i < first+n; i += 1000 {
		if err := a.post(ctx, "/channel/"+id+"/users", map[string]any{"userIds": ids(i, min(i+1000, first+n))}); err != nil {
			return err
		}
	}
	return nil
}

func (a *api) createMessage(ctx context.Context, channel, text string) error {
	return a.post(ctx, "/message", map[string]any{"channelId": channel, "type": "text", "data": map[string]any{"text": text}})
}

// clients are WebSocket connections to /events, each read by its own
// goroutine.
type clients struct {
	conns []*websocket.Conn
	wg    sync.WaitGroup
	onMsg atomic.Pointer[func(size int)]
	// onFrame, when set, is called with each message.didCreate frame.
	onFrame atomic.Pointer[func(b []byte)]
	closed  atomic.Int64 // connections the server closed
	per     []*atomic.Int64
	// lastSize is the size of the last message.didCreate frame received.
	lastSize atomic.Int64
	mu       sync.Mutex
	errs     []string // why connections ended early
	// other counts the frames of other events than message.didCreate
	// (stream.didConnect not included); otherAt is when the last came
	// (Unix nanoseconds).
	other, otherAt atomic.Int64
}

var didCreate = []byte(`"event":"message.didCreate"`)

// connect opens n connections as users u<first>.. spread over the servers
// in turn (to addr + path), 32 at a time, and waits for the first frame of
// each, so that every subscription is live when it returns.
func (cs *clients) connect(ctx context.Context, o options, addrs []string, path string, first, n int, authed bool) error {
	return cs.connectPaths(ctx, o, addrs, func(int) string { return path }, first, n, authed)
}

// connectPaths is connect with the path of the i-th connection.
func (cs *clients) connectPaths(ctx context.Context, o options, addrs []string, path func(i int) string, first, n int, authed bool) error {
	var mu sync.Mutex
	errc := make(chan error, 1)
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			opts := &websocket.DialOptions{HTTPClient: &http.Client{Timeout: time.Minute}}
			if authed {
				c := chat.UserClaims{UserID: fmt.Sprintf("u%d", first+i),
					RegisteredClaims: jwt.RegisteredClaims{IssuedAt: jwt.NewNumericDate(time.Now())}}
				tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(o.secret))
				if err != nil {
					panic(err)
				}
				opts.HTTPHeader = http.Header{"Authorization": {"Bearer " + tok}}
			}
			c, _, err := websocket.Dial(ctx, "ws://"+addrs[i%len(addrs)]+path(i), opts)
			if err == nil {
				_, _, err = c.Read(ctx) // stream.didConnect
			}
			if err != nil {
				select {
				case errc <- fmt.Errorf("connection %d: %w", i, err):
				default:
				}
				return
			}
			mu.Lock()
			cs.conns = append(cs.conns, c)
			n := new(atomic.Int64)
			cs.per = append(cs.per, n)
			mu.Unlock()
			cs.wg.Add(1)
			go cs.read(ctx, c, n)
		}(i)
	}
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

func (cs *clients) read(ctx context.Context, c *websocket.Conn, count *atomic.Int64) {
	defer cs.wg.Done()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) != -1 {
				cs.closed.Add(1)
			}
			if ctx.Err() == nil {
				cs.mu.Lock()
				cs.errs = append(cs.errs, err.Error())
				cs.mu.Unlock()
			}
			return
		}
		if !bytes.Contains(b, didCreate) {
			cs.other.Add(1)
			cs.otherAt.Store(time.Now().UnixNano())
			continue
		}
		if fn := cs.onFrame.Load(); fn != nil {
			cs.lastSize.Store(int64(len(b)))
			(*fn)(b)
		}
		if fn := cs.onMsg.Load(); fn != nil {
			count.Add(1)
			cs.lastSize.Store(int64(len(b)))
			(*fn)(len(b))
		}
	}
}

func (cs *clients) close() {
	for _, c := range cs.conns {
		c.CloseNow()
	}
	cs.wg.Wait()
}

// servers starts the chat servers of the store (one for SQLite, two for
// Postgres) with the admin created by the first.
func servers(o options) ([]*proc, string, error) {
	if o.broker != "" {
		return brokerServers(o)
	}
	a, err := start(o, "chat", true)
	if err != nil {
		return nil, "", err
	}
	ps := []*proc{a}
	if o.store == "postgres" {
		b, err := start(o, "chat", false)
		if err != nil {
			a.stop()
			return nil, "", err
		}
		ps = append(ps, b)
	}
	return ps, a.Token, nil
}

func stopAll(ps []*proc) {
	for _, p := range ps {
		p.stop()
	}
}

func addrsOf(ps []*proc) []string {
	var s []string
	for _, p := range ps {
		s = append(s, p.Addr)
	}
	return s
}

// brokerServers starts the example server processes with -broker (see
// servers); a nats-server for -broker nats, stopped with the last of them.
func brokerServers(o options) ([]*proc, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := o.exampleBin()
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("", "streamload-servers")
	if err != nil {
		return nil, "", err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	broker := o.broker
	if broker == "nats" {
		u, np, err := startNATS(ctx, dir)
		if err != nil {
			cleanup()
			return nil, "", err
		}
		broker, cleanup = u, func() { np.stop(); _ = os.RemoveAll(dir) }
	}
	n := 1
	if o.store == "postgres" {
		n = 2
	}
	ps, token, err := exampleServers(ctx, o, bin, dir, broker, n)
	if err != nil {
		cleanup()
		return nil, "", err
	}
	ps[len(ps)-1].also = cleanup // stopAll stops it last
	return ps, token, nil
}

func procsLabel(o options) string {
	l := "SQLite"
	if o.store == "postgres" {
		l = "Postgres, 2 processes"
	}
	if o.broker != "" {
		l += ", -broker " + o.broker
	}
	return l
}

func cmdLine(o options, scen string) string {
	c := "go run ./bench/streamload -scenarios " + scen
	if o.store == "postgres" {
		c += " -store postgres -dsn $CHAT_TEST_POSTGRES_URL"
	}
	if o.broker != "" {
		c += " -broker " + o.broker
	}
	return "`" + c + "`"
}

// idle measures the memory of idle connections in the chat server(s) and
// in the bare server.
func idle(ctx context.Context, o options, w io.Writer) error {
	measure := func(ps []*proc, path string, authed bool) (memReport, memReport, error) {
		var before, after memReport
		var err error
		// One process measured: the first; connections go to all in turn.
		if before, err = sumMem(ctx, ps); err != nil {
			return before, after, err
		}
		var cs clients
		defer cs.close()
		if err := cs.connect(ctx, o, addrsOf(ps), path, 0, o.idle, authed); err != nil {
			return before, after, err
		}
		time.Sleep(2 * time.Second) // let the servers settle
		if o.hold > 0 {
			for _, p := range ps {
				fmt.Fprintf(os.Stderr, "holding %d connections to %s for %s\n", o.idle, p.Addr, o.hold)
			}
			time.Sleep(o.hold)
		}
		after, err = sumMem(ctx, ps)
		return before, after, err
	}
	ps, token, err := servers(o)
	if err != nil {
		return err
	}
	defer stopAll(ps)
	if err := newAPI(ps[0], token).createChannel(ctx, "idle", 0, o.idle); err != nil {
		return err
	}
	b, a, err := measure(ps, "/api/v2/events", true)
	if err != nil {
		return err
	}
	ld := load()
	cp, err := start(o, "ceiling", false)
	if err != nil {
		return err
	}
	defer cp.stop()
	cb, ca, err := measure([]*proc{cp}, "/ws", false)
	if err != nil {
		return err
	}
	n := float64(o.idle)
	per := func(b, a memReport) (hs, st, rs, gs float64) {
		kib := func(a, b uint64) float64 { return float64(int64(a)-int64(b)) / n / 1024 }
		return kib(a.HeapInuse+a.StackInuse, b.HeapInuse+b.StackInuse), kib(a.StackInuse, b.StackInuse),
			kib(a.RSS, b.RSS), float64(a.Goroutines-b.Goroutines) / n
	}
	hs, st, rs, gs := per(b, a)
	chs, cst, crs, cgs := per(cb, ca)
	fmt.Fprintf(w, "| Event stream, %s: %d idle WebSocket connections, server memory per connection: Go heap in use + stacks (of which stacks) / RSS; goroutines per connection | %.1f (%.1f) / %.1f KiB; %.1f goroutines (gauge: %d) | bare coder/websocket server: %.1f (%.1f) / %.1f KiB; %.1f goroutines | %.2f / %.2f | %s | %s |\n",
		procsLabel(o), o.idle, hs, st, rs, gs, a.Conns, chs, cst, crs, cgs, hs/chs, rs/crs, ld, cmdLine(o, "idle"))
	return nil
}

// sumMem adds the memory reports of the processes.
func sumMem(ctx context.Context, ps []*proc) (memReport, error) {
	var s memReport
	for _, p := range ps {
		m, err := p.mem(ctx)
		if err != nil {
			return s, err
		}
		s.Goroutines += m.Goroutines
		s.HeapInuse += m.HeapInuse
		s.StackInuse += m.StackInuse
		s.RSS += m.RSS
		s.Conns += m.Conns
	}
	return s, nil
}

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)*p/100, len(s)-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000) }

// latency times messages from the create call to the last member's receipt.
func latency(ctx context.Context, o options, w, stderr io.Writer) error {
	ps, token, err := servers(o)
	if err != nil {
		return err
	}
	defer stopAll(ps)
	a := newAPI(ps[0], token)
	if err := a.createChannel(ctx, "quiet", 0, 1); err != nil {
		return err
	}
	if err := a.createChannel(ctx, "load", 0, o.members); err != nil {
		return err
	}
	// Ceiling: the create call alone, with nobody connected.
	raw := make([]time.Duration, 0, o.messages)
	for i := 0; i < o.messages; i++ {
		t0 := time.Now()
		if err := a.createMessage(ctx, "quiet", fmt.Sprintf("q%d", i)); err != nil {
			return err
		}
		raw = append(raw, time.Since(t0))
	}
	var cs clients
	defer cs.close()
	if err := cs.connect(ctx, o, addrsOf(ps), "/api/v2/events", 0, o.members, true); err != nil {
		return err
	}
	var got, first atomic.Int64
	last := make(chan time.Time, 1)
	fn := func(int) {
		n := got.Add(1)
		if n == 1 {
			first.Store(time.Now().UnixNano())
		}
		if n == int64(o.members) {
			last <- time.Now()
		}
	}
	cs.onMsg.Store(&fn)
	lat := make([]time.Duration, 0, o.messages)
	otherBefore, start := cs.other.Load(), time.Now()
	for i := 0; i < o.messages; i++ {
		got.Store(0)
		t0 := time.Now()
		if err := a.createMessage(ctx, "load", fmt.Sprintf("m%d", i)); err != nil {
			return err
		}
		posted := time.Since(t0)
		select {
		case t := <-last:
			lat = append(lat, t.Sub(t0))
			if o.trace {
				fmt.Fprintf(stderr, "message %d posted at %s: answered after %v, first receipt %v, last %v; %d frames of other events so far\n",
					i, t0.Format("15:04:05.000"), posted.Round(100*time.Microsecond), time.Unix(0, first.Load()).Sub(t0).Round(100*time.Microsecond),
					t.Sub(t0).Round(100*time.Microsecond), cs.other.Load())
			}
		case <-ctx.Done():
			return fmt.Errorf("message %d: %d of %d receipts: %w", i, got.Load(), o.members, ctx.Err())
		}
	}
	ld := load()
	// Frames of other events received while the messages were timed:
	// with presence, those announcing the members that just connected.
	other := cs.other.Load() - otherBefore
	otherTail := ""
	if other > 0 {
		otherTail = fmt.Sprintf(", the last %.1f s after the first post", time.Unix(0, cs.otherAt.Load()).Sub(start).Seconds())
	}
	if o.trace {
		cpu, err := cpuSum(ps)
		if err == nil {
			fmt.Fprintf(stderr, "server CPU since the servers started: %v\n", cpu)
		}
	}
	// Second ceiling: the bare server writing one frame of the same size
	// to as many connections, timed to the last receipt.
	size := frameSize(&cs)
	cs.close()
	stopAll(ps)
	bare, err := bareLatency(ctx, o, size)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "| Event stream, %s: a message created through the API to the last of %d connected members, p50 / p99 over %d | %s / %s ms (%d frames of other events arrived meanwhile%s) | the create call with nobody connected: %s / %s ms; a bare coder/websocket broadcast of one frame of the same size to as many connections: %s / %s ms | %.1f / %.1f (of the sum of both) | %s | %s |\n",
		procsLabel(o), o.members, o.messages, ms(pct(lat, 50)), ms(pct(lat, 99)), other, otherTail, ms(pct(raw, 50)), ms(pct(raw, 99)),
		ms(pct(bare, 50)), ms(pct(bare, 99)),
		float64(pct(lat, 50))/float64(pct(raw, 50)+pct(bare, 50)), float64(pct(lat, 99))/float64(pct(raw, 99)+pct(bare, 99)), ld, cmdLine(o, "latency"))
	return nil
}

// frameSize returns the size of the last message.didCreate frame the
// clients received.
func frameSize(cs *clients) int { return int(cs.lastSize.Load()) }

// bareLatency times one frame of size bytes broadcast by the bare server
// to o.members connections, from the request to the last receipt.
func bareLatency(ctx context.Context, o options, size int) ([]time.Duration, error) {
	cp, err := start(o, "ceiling", false)
	if err != nil {
		return nil, err
	}
	defer cp.stop()
	var cs clients
	defer cs.close()
	if err := cs.connect(ctx, o, []string{cp.Addr}, "/ws", 0, o.members, false); err != nil {
		return nil, err
	}
	var got atomic.Int64
	last := make(chan time.Time, 1)
	fn := func(int) {
		if got.Add(1) == int64(o.members) {
			last <- time.Now()
		}
	}
	cs.onMsg.Store(&fn)
	url := fmt.Sprintf("http://%s/broadcast?n=1&size=%d", cp.Addr, size)
	lat := make([]time.Duration, 0, o.messages)
	for i := 0; i < o.messages; i++ {
		got.Store(0)
		t0 := time.Now()
		resp, err := http.Post(url, "", nil)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		select {
		case t := <-last:
			lat = append(lat, t.Sub(t0))
		case <-ctx.Done():
			return nil, fmt.Errorf("broadcast %d: %d of %d receipts: %w", i, got.Load(), o.members, ctx.Err())
		}
	}
	return lat, nil
}

// throughput posts a burst of messages from 4 writers and counts the
// frames all members receive per second; the ceiling is the bare server
// broadcasting as many frames of the same size.
func throughput(ctx context.Context, o options, w io.Writer) error {
	ps, token, err := servers(o)
	if err != nil {
		return err
	}
	defer stopAll(ps)
	a := newAPI(ps[0], token)
	if err := a.createChannel(ctx, "load", 0, o.members); err != nil {
		return err
	}
	want := int64(o.burst) * int64(o.members)
	// The messages are posted by a process of their own: in this one, the
	// members' 1,000 reading goroutines would delay the posting ones.
	rate, size, err := burst(ctx, o, addrsOf(ps), "/api/v2/events", true, want, func() error {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, exe, "-role", "post", "-post-url", "http://"+ps[0].Addr, "-token", token,
			"-burst", fmt.Sprint(o.burst))
		cmd.Stderr = os.Stderr
		return cmd.Run()
	})
	if err != nil {
		return err
	}
	ld := load()
	cp, err := start(o, "ceiling", false)
	if err != nil {
		return err
	}
	defer cp.stop()
	crate, _, err := burst(ctx, o, []string{cp.Addr}, "/ws", false, want, func() error {
		resp, err := http.Post(fmt.Sprintf("http://%s/broadcast?n=%d&size=%d", cp.Addr, o.burst, size), "", nil)
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "| Event stream, %s: events delivered per second, %d messages to %d connected members (frames of %d bytes) | %.0f /s | bare coder/websocket broadcast, same connections and frame size: %.0f /s | %.2f | %s | %s |\n",
		procsLabel(o), o.burst, o.members, size, rate, crate, rate/crate, ld, cmdLine(o, "throughput"))
	return nil
}

// postBurst is the post process: it creates -burst messages in channel
// "load" of -post-url from 4 concurrent writers.
func postBurst(o options) error {
	if !strings.HasPrefix(o.postURL, "http://127.0.0.1:") {
		return errors.New("-post-url must be http://127.0.0.1:PORT")
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.maxRuntime)
	defer cancel()
	a := &api{base: o.postURL + "/api/v2", token: o.token,
		c: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: time.Minute}}
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(o.burst); i = next.Add(1) {
				if err := a.createMessage(ctx, "load", fmt.Sprintf("m%d", i)); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	return <-errc
}

// burst connects the members, runs send, and waits until want frames were
// received; it returns frames per second from the start of send and the
// size of the last frame.
func burst(ctx context.Context, o options, addrs []string, path string, authed bool, want int64, send func() error) (float64, int, error) {
	var cs clients
	defer cs.close()
	if err := cs.connect(ctx, o, addrs, path, 0, o.members, authed); err != nil {
		return 0, 0, err
	}
	var got atomic.Int64
	var size atomic.Int64
	done := make(chan time.Time, 1)
	fn := func(n int) {
		size.Store(int64(n))
		if got.Add(1) == want {
			done <- time.Now()
		}
	}
	cs.onMsg.Store(&fn)
	t0 := time.Now()
	if err := send(); err != nil {
		return 0, 0, err
	}
	sent := time.Since(t0)
	select {
	case t := <-done:
		fmt.Fprintf(os.Stderr, "%s: sending took %v, the last receipt came %v after the start\n", path, sent.Round(time.Millisecond), t.Sub(t0).Round(time.Millisecond))
		return float64(want) / t.Sub(t0).Seconds(), int(size.Load()), nil
	case <-ctx.Done():
		hist := map[int64]int{}
		for _, n := range cs.per {
			hist[n.Load()]++
		}
		fmt.Fprintln(os.Stderr, path+": frames per connection: count of connections", hist)
		cs.mu.Lock()
		fmt.Fprintln(os.Stderr, path+": connections that ended:", cs.errs)
		cs.mu.Unlock()
		return 0, 0, fmt.Errorf("%s: %d of %d frames received, %d connections closed by the server: %w", path, got.Load(), want, cs.closed.Load(), ctx.Err())
	}
}

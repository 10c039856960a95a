package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/httpapi"
	"github.com/chatengine/chat/store/postgres"
	"github.com/chatengine/chat/store/sqlite"
	"github.com/chatengine/chat/stream"
)

// ready is the line a server process prints on stdout once it listens.
type ready struct {
	Addr  string `json:"addr"`
	Token string `json:"token,omitempty"`
}

// memReport is the answer of GET /debug/mem: the process's memory after a
// full collection.
type memReport struct {
	Goroutines int    `json:"goroutines"`
	HeapInuse  uint64 `json:"heapInuse"`
	StackInuse uint64 `json:"stackInuse"`
	RSS        uint64 `json:"rss"`
	Conns      int    `json:"conns"`
}

// readMem collects garbage, returns freed memory to the OS and reads the
// figures.
func readMem(conns int) memReport {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memReport{Goroutines: runtime.NumGoroutine(), HeapInuse: ms.HeapInuse, StackInuse: ms.StackInuse,
		RSS: rss(), Conns: conns}
}

// rss reads this process's resident set size from /proc (0 elsewhere).
func rss() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// serveOpts configures a server process.
type serveOpts struct {
	role       string // chat or ceiling
	store      string // sqlite or postgres
	dsn        string
	schema     string
	secret     string
	seedAdmin  bool
	maxRuntime time.Duration
}

// serve runs a server process: it listens on 127.0.0.1:0, prints a ready
// line, and serves until stdin closes (its parent ended) or maxRuntime
// passes.
func serve(o serveOpts, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.maxRuntime)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var h http.Handler
	var token string
	switch o.role {
	case "ceiling":
		h = newCeiling()
	case "chat":
		var stop func()
		h, token, stop, err = chatServer(ctx, o)
		if err != nil {
			return err
		}
		defer stop()
	default:
		return fmt.Errorf("unknown role %q", o.role)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn)}
	go func() { _ = srv.Serve(ln) }()
	b, _ := json.Marshal(ready{Addr: ln.Addr().String(), Token: token})
	fmt.Fprintf(stdout, "%s\n", b)
	<-ctx.Done()
	return srv.Close()
}

// chatServer returns the real stack: store, Service, stream hub and the
// HTTP API at /api/v2, plus GET /debug/mem.
func chatServer(ctx context.Context, o serveOpts) (http.Handler, string, func(), error) {
	var st chat.Store
	cleanup := func() {}
	switch o.store {
	case "sqlite":
		dir, err := os.MkdirTemp("", "streamload")
		if err != nil {
			return nil, "", nil, err
		}
		s, err := sqlite.Open(ctx, filepath.Join(dir, "chat.db"), nil)
		if err != nil {
			return nil, "", nil, err
		}
		st = s
		cleanup = func() { _ = os.RemoveAll(dir) }
	case "postgres":
		s, err := postgres.Open(ctx, o.dsn, &postgres.Options{Schema: o.schema})
		if err != nil {
			return nil, "", nil, err
		}
		st = s
	default:
		return nil, "", nil, fmt.Errorf("unknown store %q", o.store)
	}
	svc, err := chat.New(ctx, st, chat.Config{UserTokenSecret: []byte(o.secret)})
	if err != nil {
		st.Close()
		return nil, "", nil, err
	}
	var token string
	if o.seedAdmin {
		if _, token, err = svc.CreateAdmin(ctx, "", "load", ""); err != nil {
			st.Close()
			return nil, "", nil, err
		}
	}
	hub := stream.New(svc, stream.Config{})
	if err := hub.Start(ctx); err != nil {
		st.Close()
		return nil, "", nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/api/v2/", http.StripPrefix("/api/v2", httpapi.New(svc, httpapi.Config{Events: hub})))
	mux.HandleFunc("GET /debug/mem", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(readMem(hub.Connections()))
	})
	mux.Handle("GET /debug/pprof/", http.HandlerFunc(pprof.Index))
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	stop := func() {
		_ = hub.Stop(context.Background())
		_ = st.Close()
		cleanup()
	}
	return mux, token, stop, nil
}

// ceiling is a bare coder/websocket server: it holds connections, pings
// each every 25 s, and on POST /broadcast?n=N&size=B writes N frames of B
// bytes to every connection. It is what the stream costs without the
// chat engine.
type ceiling struct {
	mu    sync.Mutex
	conns map[chan []byte]chan struct{} // a connection's queue and its end
	// groups holds the queues of the connections opened with ?group=N,
	// by group, for POST /send.
	groups map[string][]chan []byte
}

func newCeiling() http.Handler {
	c := &ceiling{conns: map[chan []byte]chan struct{}{}, groups: map[string][]chan []byte{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ws", c.ws)
	mux.HandleFunc("POST /broadcast", c.broadcast)
	mux.HandleFunc("POST /send", c.send)
	mux.HandleFunc("GET /debug/mem", func(w http.ResponseWriter, _ *http.Request) {
		c.mu.Lock()
		n := len(c.conns)
		c.mu.Unlock()
		_ = json.NewEncoder(w).Encode(readMem(n))
	})
	return mux
}

func (c *ceiling) ws(w http.ResponseWriter, r *http.Request) {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	ctx := conn.CloseRead(r.Context())
	// The connection joins the broadcast set before its first frame is
	// written, as the chat server's subscription is live before its
	// stream.didConnect: a client that has read that frame receives
	// every later broadcast.
	q := make(chan []byte, 64)
	gone := make(chan struct{})
	group := r.URL.Query().Get("group")
	c.mu.Lock()
	c.conns[q] = gone
	if group != "" {
		c.groups[group] = append(c.groups[group], q)
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.conns, q)
		if group != "" {
			c.groups[group] = slices.DeleteFunc(c.groups[group], func(x chan []byte) bool { return x == q })
		}
		c.mu.Unlock()
		close(gone)
		conn.CloseNow()
	}()
	if conn.Write(ctx, websocket.MessageText, []byte(`{"event":"stream.didConnect"}`)) != nil {
		return
	}
	ping := time.NewTicker(25 * time.Second)
	defer ping.Stop()
	for {
		select {
		case b := <-q:
			if conn.Write(ctx, websocket.MessageText, b) != nil {
				return
			}
		case <-ping.C:
			if conn.Ping(ctx) != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

func (c *ceiling) broadcast(w http.ResponseWriter, r *http.Request) {
	n, err1 := strconv.Atoi(r.URL.Query().Get("n"))
	size, err2 := strconv.Atoi(r.URL.Query().Get("size"))
	if err := errors.Join(err1, err2); err != nil || n < 1 || size < 1 || n > 100_000 || size > 1<<20 {
		http.Error(w, "n and size must be positive", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	qs := make(map[chan []byte]chan struct{}, len(c.conns))
	for q, gone := range c.conns {
		qs[q] = gone
	}
	c.mu.Unlock()
	for i := 0; i < n; i++ {
		b, _ := json.Marshal(struct {
			Event string `json:"event"`
			Data  string `json:"data"`
		}{"message.didCreate", strings.Repeat("x", max(size-40, 1))})
		for q, gone := range qs {
			select {
			case q <- b:
			case <-gone: // a connection that ended takes nothing more
			}
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// send writes one frame of size bytes to each connection of a group
// (POST /send?group=G&size=B), as the chat server writes a message to the
// members of its channel; a full queue drops the frame (the client then
// misses it, which the benchmark reports).
func (c *ceiling) send(w http.ResponseWriter, r *http.Request) {
	size, err := strconv.Atoi(r.URL.Query().Get("size"))
	if err != nil || size < 1 || size > 1<<20 {
		http.Error(w, "size must be 1-1048576", http.StatusBadRequest)
		return
	}
	text := r.URL.Query().Get("text")
	type data struct {
		Text string `json:"text"`
		Pad  string `json:"pad"`
	}
	b, err := json.Marshal(struct {
		Event string `json:"event"`
		Data  data   `json:"data"`
	}{"message.didCreate", data{text, strings.Repeat("x", max(size-60-len(text), 1))}})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	c.mu.Lock()
	qs := c.groups[r.URL.Query().Get("group")]
	for _, q := range qs {
		select {
		case q <- b:
		default:
		}
	}
	c.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

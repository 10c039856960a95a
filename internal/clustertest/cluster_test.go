package clustertest

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/chatengine/chat/internal/pgtest"
)

// brokerArgs are the flags that choose how the chat server processes
// deliver events to each other: the NATS broker over the three-node
// cluster (the test also checks its JetStream streams).
func brokerArgs(natsURLs []string) []string {
	return []string{"-broker", strings.Join(natsURLs, ",")}
}

const (
	chatProcs   = 3
	channels    = 30 // of 10 members each: 300 streams
	members     = 10
	rounds      = 12 // messages per channel
	killNATS    = 3  // the round before which a NATS node is killed
	restartNATS = 6  // ... and restarted
	killChat    = 8  // the round before which a chat process is killed
)

// TestCluster runs 3 example server processes on one Postgres database
// beside a 3-node NATS JetStream cluster (replicas 3), all on loopback.
// 300 end users, in 30 channels of 10, each hold an event stream (SSE),
// spread over the 3 processes; one writer posts 12 messages to every
// channel, in turn through each process. Before round 3 one NATS node is
// SIGKILLed, and restarted before round 6; before round 8 one chat
// process is SIGKILLed, and the writer goes on through the other two.
// The streams of the killed process reconnect to the others with
// ?after=<the last id received>, and must be told they resumed.
//
// Every stream must then have received every message of its channel,
// in order, none missing, none twice: its frames' ids increase across
// reconnections, and the texts received are exactly those posted.
func TestCluster(t *testing.T) {
	t.Parallel()
	dsn := pgtest.URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nats := startNATS(t, ctx, 3)
	bin := buildServer(t)
	schema := pgtest.SchemaName()
	t.Cleanup(func() { dropSchema(dsn, schema) })

	// The first process makes the schema and the first admin; the others
	// start once it listens.
	tokenFile := filepath.Join(t.TempDir(), "admin-token")
	common := append([]string{"-store", dsn, "-postgres-schema", schema, "-addr", "127.0.0.1:0",
		"-admin-rate", "0", "-user-rate", "0", "-anon-rate", "0", "-chat-page=false", "-admin-panel=false",
		"-shutdown-timeout", "1s", "-drain-delay", "0s"}, brokerArgs(nats.URLs())...)
	procs := []*chatProc{startChat(t, ctx, bin, append(common, "-first-admin-token-file", tokenFile))}
	for range chatProcs - 1 {
		procs = append(procs, startChat(t, ctx, bin, common))
	}
	raw, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	admin := strings.TrimSpace(string(raw))

	// Channels and their members' tokens.
	var clients []*client
	for c := range channels {
		var users []string
		for m := range members {
			users = append(users, fmt.Sprintf("u%d-%d", c, m))
		}
		ch := "c" + strconv.Itoa(c)
		if err := call(ctx, procs[c%chatProcs].base, admin, "/channel", map[string]any{"channelId": ch, "type": "standard", "userIds": users}, nil); err != nil {
			t.Fatal(err)
		}
		for _, u := range users {
			var tok struct {
				Token string `json:"token"`
			}
			if err := call(ctx, procs[0].base, admin, "/users/"+u+"/token", map[string]any{"ttl": 3600}, &tok); err != nil {
				t.Fatal(err)
			}
			clients = append(clients, &client{user: u, channel: ch, token: tok.Token})
		}
	}

	// The streams, spread over the processes.
	streamCtx, stopStreams := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopStreams(); wg.Wait() }()
	for i, cl := range clients {
		cl.idx, cl.proc = i, i%chatProcs
		wg.Add(1)
		go func() { defer wg.Done(); cl.run(streamCtx, procs) }()
	}
	for _, cl := range clients {
		if !cl.wait(ctx, func() bool { return cl.hello }) {
			t.Fatalf("%s never connected: %v", cl.user, cl.failure())
		}
	}

	// The writer.
	victim := procs[chatProcs-1]
	live := procs
	for r := range rounds {
		switch r {
		case killNATS:
			nats.nodes[1].kill()
		case restartNATS:
			nats.nodes[1].start(t)
		case killChat:
			// Its streams resume from an id: each has had a message.
			for _, cl := range clients {
				if cl.idx%chatProcs == chatProcs-1 && !cl.wait(ctx, func() bool { return cl.lastID > 0 }) {
					t.Fatalf("%s had no message before round %d: %v", cl.user, r, cl.failure())
				}
			}
			victim.kill()
			live = procs[:chatProcs-1]
		}
		for c := range channels {
			p := live[(r*channels+c)%len(live)]
			body := map[string]any{"channelId": "c" + strconv.Itoa(c), "type": "text", "data": map[string]string{"text": text(c, r)}}
			if err := call(ctx, p.base, admin, "/message", body, nil); err != nil {
				t.Fatalf("round %d, channel %d, through %s: %v", r, c, p.base, err)
			}
		}
	}
	nats.nodes[1].waitReady(t, ctx, 2)
	if len(brokerArgs(nats.URLs())) > 0 {
		// The servers' events went through JetStream: its streams have
		// 3 replicas, and the restarted node knows each again.
		streams, err := nats.nodes[0].jsStreams(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(streams) == 0 {
			t.Fatal("the chat servers made no JetStream stream")
		}
		for name, r := range streams {
			if r != 3 {
				t.Errorf("JetStream stream %s has %d replicas, want 3", name, r)
			}
		}
		nats.nodes[1].waitStreams(t, ctx, streams)
	}

	// Every stream receives every message of its channel.
	for _, cl := range clients {
		cl.wait(ctx, func() bool { return len(cl.texts) >= rounds })
	}
	stopStreams()
	wg.Wait()
	moved := 0
	for _, cl := range clients {
		if err := cl.failure(); err != nil {
			t.Errorf("%s: %v", cl.user, err)
			continue
		}
		var want []string
		c, _ := strconv.Atoi(strings.TrimPrefix(cl.channel, "c"))
		for r := range rounds {
			want = append(want, text(c, r))
		}
		if !slicesEqual(cl.texts, want) {
			t.Errorf("%s (channel %s, resumed %d times) received %q, want %q", cl.user, cl.channel, cl.resumes, cl.texts, want)
		}
		if cl.resumes > 0 {
			moved++
		}
	}
	// The killed process's streams, and only those, moved.
	if want := len(clients) / chatProcs; moved != want {
		t.Errorf("%d streams resumed on another process, want %d (those of the killed one)", moved, want)
	}
}

func text(channel, round int) string { return fmt.Sprintf("c%d #%d", channel, round) }

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// buildServer builds the example server into a temporary directory.
func buildServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "server")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/chatengine/chat/examples/server")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the example server: %v\n%s", err, out)
	}
	return bin
}

func dropSchema(dsn, schema string) {
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return
	}
	defer db.Close()
	_, _ = db.Exec("DROP SCHEMA IF EXISTS " + pq.QuoteIdentifier(schema) + " CASCADE")
}

// chatProc is one example server process.
type chatProc struct {
	cmd    *exec.Cmd
	exited chan struct{}
	log    *syncBuffer
	base   string // http://127.0.0.1:PORT/api/v2
}

var listening = regexp.MustCompile(`api=(http://127\.0\.0\.1:[0-9]+/api/v2)`)

// startChat starts the server and waits until it listens. It is killed
// when the test ends.
func startChat(t *testing.T, ctx context.Context, bin string, args []string) *chatProc {
	t.Helper()
	p := &chatProc{log: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(p.kill)
	for {
		if m := listening.FindStringSubmatch(p.log.String()); m != nil {
			p.base = m[1]
			return p
		}
		select {
		case <-p.exited:
			t.Fatalf("the chat server exited: %s", p.log.String())
		case <-ctx.Done():
			t.Fatalf("the chat server never listened: %s", p.log.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (p *chatProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// call makes one API request as token and decodes a 200 answer into out.
func call(ctx context.Context, base, token, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, rb)
	}
	if out != nil {
		return json.Unmarshal(rb, out)
	}
	return nil
}

// client is one end user's event stream, kept open across the loss of
// its server process: it then reconnects to the next process with
// ?after=<the last id it received>.
type client struct {
	user, channel, token string
	idx                  int  // its place among the clients
	hello                bool // it had its first stream.didConnect

	mu      sync.Mutex
	proc    int      // the process it streams from
	lastID  int64    // the id of the last frame received
	texts   []string // the texts of the message.didCreate frames, in order
	resumes int      // reconnections that resumed
	err     error    // what went wrong, when something did
	wake    chan struct{}
}

var streamClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: -1}}

func (cl *client) run(ctx context.Context, procs []*chatProc) {
	first := true
	for ctx.Err() == nil {
		p := procs[cl.proc]
		select {
		case <-p.exited:
			cl.mu.Lock()
			// Half to each of the others.
			cl.proc = (cl.proc + 1 + cl.idx%2) % len(procs)
			cl.mu.Unlock()
			continue
		default:
		}
		err := cl.stream(ctx, p.base, first)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errBroken) {
			cl.fail(err)
			return
		}
		first = false
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

var errBroken = errors.New("stream broken")

// stream reads one connection's frames until it ends.
func (cl *client) stream(ctx context.Context, base string, first bool) error {
	cl.mu.Lock()
	after := cl.lastID
	cl.mu.Unlock()
	u := base + "/events"
	if after > 0 {
		u += "?after=" + url.QueryEscape(strconv.FormatInt(after, 10))
	}
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+cl.token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := streamClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%w: GET /events: %d %s", errBroken, resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var f struct {
			ID    string          `json:"id"`
			Event string          `json:"event"`
			Data  json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			return fmt.Errorf("%w: frame %q: %v", errBroken, line, err)
		}
		if err := cl.frame(f.ID, f.Event, f.Data, after, first); err != nil {
			return fmt.Errorf("%w: %v", errBroken, err)
		}
	}
	return sc.Err()
}

// frame checks and records one frame.
func (cl *client) frame(id, event string, data json.RawMessage, after int64, first bool) error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	defer cl.notify()
	switch event {
	case "stream.didConnect":
		var d struct {
			Resumed bool `json:"resumed"`
		}
		if err := json.Unmarshal(data, &d); err != nil {
			return err
		}
		if first {
			cl.hello = true
			return nil
		}
		if after > 0 && !d.Resumed {
			return fmt.Errorf("reconnected with after=%d and not resumed", after)
		}
		cl.resumes++
		return nil
	case "stream.didClose":
		return fmt.Errorf("closed by the server: %s", data)
	}
	if id == "" { // ephemeral
		return nil
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return fmt.Errorf("frame id %q", id)
	}
	if n <= cl.lastID {
		return fmt.Errorf("frame %d (%s) after %d: out of order or repeated", n, event, cl.lastID)
	}
	cl.lastID = n
	if event != "message.didCreate" {
		return fmt.Errorf("unexpected %s frame %d: %s", event, n, data)
	}
	var d struct {
		Messages []struct {
			ChannelID string `json:"channelId"`
			Data      struct {
				Text string `json:"text"`
			} `json:"data"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(data, &d); err != nil || len(d.Messages) != 1 {
		return fmt.Errorf("message.didCreate %d: %s", n, data)
	}
	if m := d.Messages[0]; m.ChannelID != cl.channel {
		return fmt.Errorf("a message of %s, not a member", m.ChannelID)
	}
	cl.texts = append(cl.texts, d.Messages[0].Data.Text)
	return nil
}

func (cl *client) fail(err error) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.err == nil {
		cl.err = err
	}
	cl.notify()
}

func (cl *client) failure() error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.err
}

// wait waits until cond, called with cl.mu held, holds: true; false
// when the client failed or ctx ended first.
func (cl *client) wait(ctx context.Context, cond func() bool) bool {
	for {
		cl.mu.Lock()
		if cond() {
			cl.mu.Unlock()
			return true
		}
		if cl.err != nil {
			cl.mu.Unlock()
			return false
		}
		if cl.wake == nil {
			cl.wake = make(chan struct{})
		}
		wake := cl.wake
		cl.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return false
		}
	}
}

// notify wakes wait's waiters; with cl.mu held.
func (cl *client) notify() {
	if cl.wake != nil {
		close(cl.wake)
		cl.wake = nil
	}
}

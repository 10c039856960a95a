package clustertest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// natsServer finds nats-server: on PATH, or Debian's /usr/sbin (not on
// every PATH). Missing: the test is skipped, unless CHAT_REQUIRE_NATS is
// set (as .ci/run does), when it fails.
func natsServer(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("nats-server"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/nats-server"); err == nil {
		return "/usr/sbin/nats-server"
	}
	msg := "the cluster test needs nats-server (Debian: apt-get install nats-server)"
	if os.Getenv("CHAT_REQUIRE_NATS") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}

// natsNode is one nats-server process of the cluster.
type natsNode struct {
	name                     string
	bin                      string
	client, cluster, monitor int
	dir                      string
	routes                   []string
	cmd                      *exec.Cmd
	exited                   chan struct{}
	log                      *syncBuffer
}

// natsCluster is n nats-server processes clustered on loopback, with
// JetStream, each with its own store directory.
type natsCluster struct {
	nodes []*natsNode
}

// startNATS starts a cluster of n nodes and waits until each is healthy
// and routed to the others. The processes are killed when the test ends.
func startNATS(t *testing.T, ctx context.Context, n int) *natsCluster {
	t.Helper()
	bin := natsServer(t)
	ports := freePorts(t, 3*n)
	c := &natsCluster{}
	for i := range n {
		c.nodes = append(c.nodes, &natsNode{
			name: "n" + strconv.Itoa(i+1), bin: bin,
			client: ports[3*i], cluster: ports[3*i+1], monitor: ports[3*i+2],
			dir: t.TempDir(),
		})
	}
	for _, a := range c.nodes {
		for _, b := range c.nodes {
			if a != b {
				a.routes = append(a.routes, "nats://127.0.0.1:"+strconv.Itoa(b.cluster))
			}
		}
	}
	for _, nd := range c.nodes {
		nd.start(t)
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			nd.kill()
		}
	})
	for _, nd := range c.nodes {
		nd.waitReady(t, ctx, n-1)
	}
	return c
}

// URLs returns the client URLs of the nodes.
func (c *natsCluster) URLs() []string {
	var us []string
	for _, nd := range c.nodes {
		us = append(us, "nats://127.0.0.1:"+strconv.Itoa(nd.client))
	}
	return us
}

func (nd *natsNode) start(t *testing.T) {
	t.Helper()
	nd.log = &syncBuffer{}
	nd.cmd = exec.Command(nd.bin,
		"-a", "127.0.0.1", "-p", strconv.Itoa(nd.client), "-m", strconv.Itoa(nd.monitor),
		"-js", "-sd", nd.dir, "-server_name", nd.name, "-cluster_name", "chat",
		"-cluster", "nats://127.0.0.1:"+strconv.Itoa(nd.cluster),
		"-routes", strings.Join(nd.routes, ","))
	nd.cmd.Stdout, nd.cmd.Stderr = nd.log, nd.log
	if err := nd.cmd.Start(); err != nil {
		t.Fatalf("starting nats-server %s: %v", nd.name, err)
	}
	nd.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(nd.cmd, nd.exited)
}

// kill sends SIGKILL and waits for the process to end.
func (nd *natsNode) kill() {
	if nd.cmd == nil {
		return
	}
	_ = nd.cmd.Process.Signal(syscall.SIGKILL)
	<-nd.exited
}

// waitReady waits until the node answers /healthz with 200 (JetStream
// running) and has a route to each of the other nodes.
func (nd *natsNode) waitReady(t *testing.T, ctx context.Context, peers int) {
	t.Helper()
	base := "http://127.0.0.1:" + strconv.Itoa(nd.monitor)
	var last string
	for {
		select {
		case <-nd.exited:
			t.Fatalf("nats-server %s exited: %s", nd.name, nd.log.String())
		default:
		}
		healthy, routes, err := nd.status(ctx, base)
		if err == nil && healthy && routes >= peers {
			return
		}
		last = fmt.Sprintf("healthy %v, routes %d, err %v", healthy, routes, err)
		select {
		case <-ctx.Done():
			t.Fatalf("nats-server %s not ready (%s): %s", nd.name, last, nd.log.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (nd *natsNode) status(ctx context.Context, base string) (healthy bool, routes int, err error) {
	get := func(path string, v any) (int, error) {
		req, err := http.NewRequestWithContext(ctx, "GET", base+path, nil)
		if err != nil {
			return 0, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		return resp.StatusCode, json.NewDecoder(resp.Body).Decode(v)
	}
	var h map[string]any
	code, err := get("/healthz", &h)
	if err != nil {
		return false, 0, err
	}
	var r struct {
		NumRoutes int `json:"num_routes"`
	}
	if _, err := get("/routez", &r); err != nil {
		return code == 200, 0, err
	}
	return code == 200, r.NumRoutes, nil
}

// jsStreams returns the JetStream streams a node knows, with their
// replicas, from its monitoring endpoint /jsz.
func (nd *natsNode) jsStreams(ctx context.Context) (map[string]int, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://127.0.0.1:"+strconv.Itoa(nd.monitor)+"/jsz?accounts=true&streams=true&config=true", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var jsz struct {
		Accounts []struct {
			Streams []struct {
				Name   string `json:"name"`
				Config struct {
					Replicas int `json:"num_replicas"`
				} `json:"config"`
			} `json:"stream_detail"`
		} `json:"account_details"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&jsz); err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, a := range jsz.Accounts {
		for _, st := range a.Streams {
			out[st.Name] = st.Config.Replicas
		}
	}
	return out, nil
}

// waitStreams waits until the node knows every stream of want with its
// replicas.
func (nd *natsNode) waitStreams(t *testing.T, ctx context.Context, want map[string]int) {
	t.Helper()
	for {
		got, err := nd.jsStreams(ctx)
		ok := err == nil
		for name, r := range want {
			ok = ok && got[name] == r
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s knows the streams %v (%v), want %v", nd.name, got, err, want)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// createStream creates a JetStream stream through the node's client
// port, speaking the NATS protocol (a request on the JetStream API's
// subject, the answer on an inbox).
func (nd *natsNode) createStream(ctx context.Context, name string, replicas int) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(nd.client))
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	r := bufio.NewReader(conn)
	if _, err := r.ReadString('\n'); err != nil { // INFO
		return err
	}
	body, _ := json.Marshal(map[string]any{"name": name, "subjects": []string{name + ".>"}, "num_replicas": replicas, "storage": "file"})
	fmt.Fprintf(conn, "CONNECT {\"verbose\":false,\"pedantic\":false}\r\nSUB _INBOX.create 1\r\nPUB $JS.API.STREAM.CREATE.%s _INBOX.create %d\r\n%s\r\n", name, len(body), body)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(line, "PING"):
			fmt.Fprintf(conn, "PONG\r\n")
		case strings.HasPrefix(line, "-ERR"):
			return fmt.Errorf("nats: %s", strings.TrimSpace(line))
		case strings.HasPrefix(line, "MSG "):
			f := strings.Fields(line)
			n, err := strconv.Atoi(f[len(f)-1])
			if err != nil {
				return err
			}
			msg := make([]byte, n+2)
			if _, err := io.ReadFull(r, msg); err != nil {
				return err
			}
			var res struct {
				Error *struct {
					Description string `json:"description"`
				} `json:"error"`
			}
			if err := json.Unmarshal(msg[:n], &res); err != nil {
				return err
			}
			if res.Error != nil {
				return fmt.Errorf("creating stream %s: %s", name, res.Error.Description)
			}
			return nil
		}
	}
}

// TestNATSClusterKillRestart starts the three-node cluster the cluster
// test runs beside and creates a JetStream stream with 3 replicas;
// SIGKILLs one node, checks that the other two still answer healthy,
// restarts the killed node on its ports and store directory, and waits
// for it to be healthy, routed to both again, and to know the stream
// with its 3 replicas.
func TestNATSClusterKillRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := startNATS(t, ctx, 3)
	// The meta leader may still be being elected: retry until it answers.
	for {
		err := c.nodes[0].createStream(ctx, "probe", 3)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("creating a stream with 3 replicas: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	want := map[string]int{"probe": 3}
	for _, nd := range c.nodes {
		nd.waitStreams(t, ctx, want)
	}
	victim := c.nodes[1]
	victim.kill()
	for _, nd := range []*natsNode{c.nodes[0], c.nodes[2]} {
		healthy, _, err := nd.status(ctx, "http://127.0.0.1:"+strconv.Itoa(nd.monitor))
		if err != nil || !healthy {
			t.Fatalf("%s after %s was killed: healthy %v, %v", nd.name, victim.name, healthy, err)
		}
	}
	victim.start(t)
	victim.waitReady(t, ctx, 2)
	victim.waitStreams(t, ctx, want)
	if _, err := os.Stat(filepath.Join(victim.dir, "jetstream")); err != nil {
		t.Fatalf("%s keeps no JetStream store in %s: %v", victim.name, victim.dir, err)
	}
}

package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
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

// TestNATSClusterKillRestart starts the three-node cluster the cluster
// test runs beside, SIGKILLs one node, checks that the other two still
// answer healthy, restarts the killed node on its ports and store
// directory, and waits for it to be healthy and routed to both again.
func TestNATSClusterKillRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := startNATS(t, ctx, 3)
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
	if _, err := os.Stat(filepath.Join(victim.dir, "jetstream")); err != nil {
		t.Fatalf("%s keeps no JetStream store in %s: %v", victim.name, victim.dir, err)
	}
}

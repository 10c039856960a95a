// Package natstest starts real NATS servers for tests: Debian's
// nats-server (/usr/sbin/nats-server, or CHAT_NATS_SERVER) with JetStream,
// on free loopback ports, with a temporary store directory, stopped when
// the test ends.
//
// Without the binary a test is skipped with a message saying how to get
// it, unless CHAT_REQUIRE_NATS is set (as .ci/run does): then it fails.
package natstest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Binary returns the nats-server to run, or skips (fails under
// CHAT_REQUIRE_NATS) when there is none.
func Binary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("CHAT_NATS_SERVER")
	if bin == "" {
		bin = "/usr/sbin/nats-server"
	}
	if _, err := os.Stat(bin); err != nil {
		msg := "NATS tests need nats-server: apt-get install nats-server (or set CHAT_NATS_SERVER to its path)"
		if os.Getenv("CHAT_REQUIRE_NATS") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Server is one running nats-server.
type Server struct {
	t    testing.TB
	bin  string
	args []string
	Port int
	dir  string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// URL returns the server's client URL.
func (s *Server) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(s.Port) }

// Start starts a single nats-server with JetStream and waits until it
// accepts connections. It is stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary(t)
	port := FreePort(t)
	dir := t.TempDir()
	s := &Server{t: t, bin: bin, Port: port, dir: dir,
		args: []string{"-js", "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-sd", filepath.Join(dir, "js")}}
	s.Restart()
	t.Cleanup(s.Stop)
	return s
}

// Restart starts the server again after Stop, on the same port and store.
func (s *Server) Restart() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	cmd := exec.Command(s.bin, s.args...)
	out, err := cmd.StderrPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("starting nats-server: %v", err)
	}
	ready := make(chan struct{})
	done := make(chan struct{})
	var lines []string
	var lmu sync.Mutex
	go func() {
		sc := bufio.NewScanner(out)
		once := sync.Once{}
		for sc.Scan() {
			l := sc.Text()
			lmu.Lock()
			if len(lines) < 200 {
				lines = append(lines, l)
			}
			lmu.Unlock()
			if strings.Contains(l, "Server is ready") {
				once.Do(func() { close(ready) })
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-ready:
	case <-done:
		lmu.Lock()
		defer lmu.Unlock()
		s.t.Fatalf("nats-server exited:\n%s", strings.Join(lines, "\n"))
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		s.t.Fatal("nats-server did not get ready in 30 s")
	}
	s.cmd, s.done = cmd, done
}

// Stop stops the server (SIGKILL: a crash) and waits for it to exit.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// String describes the server.
func (s *Server) String() string { return fmt.Sprintf("nats-server :%d", s.Port) }

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The example server as deployed: with -broker, or for the fanout
// scenario, the chat servers are processes of examples/server built from
// this checkout, so that the broker is chosen the way an operator chooses
// it (its -broker flag).

// buildExample builds examples/server into dir and returns the binary.
func buildExample(dir string) (string, error) {
	bin := filepath.Join(dir, "server")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/chatengine/chat/examples/server")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building examples/server: %w", err)
	}
	return bin, nil
}

var listening = regexp.MustCompile(`api=http://(127\.0\.0\.1:[0-9]+)/api/v2`)

// startExample starts one example server process over the store of o (a
// SQLite file in dir, or o.schema of o.dsn) with broker (none when
// empty), and waits until it listens. With seed it is the first process
// of its store: it creates the admin, whose token it returns in ready.
func startExample(ctx context.Context, o options, bin, dir, broker string, seed bool) (*proc, error) {
	args := []string{"-addr", "127.0.0.1:0", "-user-token-secret", o.secret,
		"-admin-rate", "0", "-user-rate", "0", "-anon-rate", "0",
		"-chat-page=false", "-admin-panel=false", "-drain-delay", "0s", "-shutdown-timeout", "1s"}
	if o.store == "postgres" {
		args = append(args, "-store", o.dsn, "-postgres-schema", o.schema)
	} else {
		args = append(args, "-store", "sqlite:"+filepath.Join(dir, "chat.db"))
	}
	if broker != "" {
		args = append(args, "-broker", broker)
	}
	tokenFile := filepath.Join(dir, fmt.Sprintf("admin-token-%d", time.Now().UnixNano()))
	if seed {
		args = append(args, "-first-admin-token-file", tokenFile)
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // ends with this process
	errOut, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(errOut)
		found := false
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil && !found {
				found = true
				lines <- m[1]
				continue
			}
			if !strings.Contains(sc.Text(), "level=INFO") {
				fmt.Fprintln(os.Stderr, "server:", sc.Text())
			}
		}
		close(lines)
	}()
	select {
	case addr, ok := <-lines:
		if !ok {
			p.stop()
			return nil, errors.New("the example server exited before listening (see its output above)")
		}
		p.Addr = addr
	case <-ctx.Done():
		p.stop()
		return nil, ctx.Err()
	}
	if seed {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			p.stop()
			return nil, err
		}
		p.Token = strings.TrimSpace(string(b))
	}
	return p, nil
}

// exampleServers starts n example server processes on one store.
func exampleServers(ctx context.Context, o options, bin, dir, broker string, n int) ([]*proc, string, error) {
	a, err := startExample(ctx, o, bin, dir, broker, true)
	if err != nil {
		return nil, "", err
	}
	ps := []*proc{a}
	for len(ps) < n {
		b, err := startExample(ctx, o, bin, dir, broker, false)
		if err != nil {
			stopAll(ps)
			return nil, "", err
		}
		ps = append(ps, b)
	}
	return ps, a.Token, nil
}

// startNATS starts one nats-server with JetStream on a free loopback port
// (store in dir) and returns its URL and its process, which stop ends.
func startNATS(ctx context.Context, dir string) (string, *proc, error) {
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		bin = "/usr/sbin/nats-server"
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	l, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	mon := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cmd := exec.Command(bin, "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-m", strconv.Itoa(mon), "-js", "-sd", filepath.Join(dir, "nats"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("starting nats-server: %w", err)
	}
	p := &proc{cmd: cmd}
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", mon))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return "nats://127.0.0.1:" + strconv.Itoa(port), p, nil
			}
		}
		select {
		case <-ctx.Done():
			p.stop()
			return "", nil, fmt.Errorf("nats-server not ready: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// cpuOf returns the user+system CPU time a process used so far, from
// /proc/PID/stat (Linux; clock ticks of 10 ms).
func cpuOf(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command (in parentheses, which may hold spaces).
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("unreadable /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("unreadable /proc stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// cpuSum adds the CPU time of the processes.
func cpuSum(ps []*proc) (time.Duration, error) {
	var s time.Duration
	for _, p := range ps {
		d, err := cpuOf(p.cmd.Process.Pid)
		if err != nil {
			return 0, err
		}
		s += d
	}
	return s, nil
}

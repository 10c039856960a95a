//go:build pprof

package main

// Built with -tags pprof (bench/wholeserver -profile does), the server also
// serves net/http/pprof on the loopback address named by CHAT_PPROF_ADDR,
// for profiling it under load. Release builds do not contain this file.

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof/ on http.DefaultServeMux
	"os"
)

func init() {
	addr := os.Getenv("CHAT_PPROF_ADDR")
	if addr == "" {
		return
	}
	if host, _, err := net.SplitHostPort(addr); err != nil || host != "127.0.0.1" {
		fmt.Fprintln(os.Stderr, "server: CHAT_PPROF_ADDR must be 127.0.0.1:PORT; pprof not served")
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "server: CHAT_PPROF_ADDR:", err)
		return
	}
	go func() { _ = http.Serve(ln, nil) }()
}

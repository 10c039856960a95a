// Command server is the example chat server: it wires a store, the chat
// Service, the admin HTTP API (package httpapi), the webhook dispatcher, the
// end users' chat page at /chat/ (package chatpage) and the admin panel at
// /admin/ (package console) into one binary.
//
//	go run ./examples/server                  # 127.0.0.1:8080, SQLite in ./chat.db
//	go run ./examples/server -store memory    # nothing kept on exit
//	go run ./examples/server -unsafe-dev-sign-in   # the chat page at /chat/ signs in any user id (local only)
//	go run ./examples/server admin create NAME [-user-id ID] [-password-stdin]
//	go run ./examples/server admin passwd NAME     # the admin panel password
//	go run ./examples/server admin list
//	go run ./examples/server admin rotate NAME
//	go run ./examples/server admin revoke NAME
//	go run ./examples/server migrate
//	go run ./examples/server version
//
// Every flag also reads the environment variable CHAT_ + its name in upper
// snake case (-store: CHAT_STORE, -allow-private-webhooks:
// CHAT_ALLOW_PRIVATE_WEBHOOKS); a flag given on the command line beats its
// variable. See docs/operations.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		var u usageError
		if errors.As(err, &u) {
			fmt.Fprintln(os.Stderr, "server:", err)
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

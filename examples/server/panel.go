package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/go-chi/chi/v5"
	"golang.org/x/term"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/console"
	"github.com/chatengine/chat/httpapi"
	"github.com/chatengine/chat/stream"
)

// mountPanel serves the admin panel (package console) at /admin/; its
// channel pages are live from hub's event stream. Sign-ins (POST
// /admin/signin) count against anon, the bucket of their client address.
func mountPanel(r chi.Router, svc *chat.Service, hub *stream.Hub, cfg *config, anon *httpapi.AnonLimiter, log *slog.Logger) {
	var hook *console.PreSendHookInfo // what the rules page tells of the hook serve built
	if cfg.preSendURL != "" {
		hook = &console.PreSendHookInfo{URL: cfg.preSendURL, Timeout: cfg.preSendTimeout, RejectOnError: cfg.preSendPolicy == "reject"}
	}
	panel := http.StripPrefix("/admin", console.New(svc, console.Config{
		Prefix:      "/admin",
		IdleTimeout: cfg.panelIdle,
		Events:      hub, // nil: the channel pages poll
		ClientAddr:  clientAddr(cfg.clientHeader),
		Logger:      log,
		PreSendHook: hook,
	}))
	signin := anon.Limit(panel)
	r.Handle("/admin/*", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost && req.URL.Path == "/admin/signin" {
			signin.ServeHTTP(w, req)
			return
		}
		panel.ServeHTTP(w, req)
	}))
	r.Get("/admin", func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, "/admin/", http.StatusMovedPermanently)
	})
}

// readPassword reads a password: with a prompt and without echo when in
// is a terminal (asked twice), else the first line of in.
func (c *cli) readPassword(in io.Reader, name string) (string, error) {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(c.stderr, "New panel password for admin %q: ", name)
		p1, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(c.stderr)
		if err != nil {
			return "", err
		}
		fmt.Fprint(c.stderr, "Again: ")
		p2, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(c.stderr)
		if err != nil {
			return "", err
		}
		if string(p1) != string(p2) {
			return "", errors.New("the two passwords differ")
		}
		return string(p1), nil
	}
	if in == nil {
		return "", errors.New("no password on standard input (give it as the first line)")
	}
	line, err := bufio.NewReader(io.LimitReader(in, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("no password on standard input (give it as the first line)")
	}
	return line, nil
}

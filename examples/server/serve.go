package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/broker"
	"github.com/chatengine/chat/broker/natsbroker"
	"github.com/chatengine/chat/httpapi"
	"github.com/chatengine/chat/push"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/store/postgres"
	"github.com/chatengine/chat/store/sqlite"
	"github.com/chatengine/chat/stream"
	"github.com/chatengine/chat/webhook"
)

// openStore opens the store named by cfg.store and returns it with its
// kind ("memory", "sqlite" or "postgres"). SQLite runs in WAL mode with
// synchronous=FULL: a write acknowledged to a client survives a crash.
func openStore(ctx context.Context, cfg *config) (chat.Store, string, error) {
	s := strings.TrimSpace(cfg.store)
	switch {
	case s == "memory":
		return memory.New(), "memory", nil
	case strings.HasPrefix(s, "sqlite:"):
		path := strings.TrimPrefix(s, "sqlite:")
		if path == "" {
			return nil, "", usagef("-store sqlite:PATH needs a file path")
		}
		st, err := sqlite.Open(ctx, path, &sqlite.Options{Synchronous: "FULL"})
		if errors.Is(err, sqlite.ErrNeedsCgo) {
			// A server built with CGO_ENABLED=0 still serves the other stores.
			return nil, "", fmt.Errorf("-store %s: %w (-store memory or -store postgres://...)", s, err)
		}
		if err != nil {
			return nil, "", fmt.Errorf("opening SQLite store %s: %w", path, err)
		}
		return st, "sqlite", nil
	case strings.HasPrefix(s, "postgres://"), strings.HasPrefix(s, "postgresql://"):
		st, err := postgres.Open(ctx, s, &postgres.Options{Schema: cfg.postgresSchema})
		if err != nil {
			return nil, "", fmt.Errorf("opening Postgres store %s: %w", redactStore(s), err)
		}
		return st, "postgres", nil
	}
	return nil, "", usagef("-store must be memory, sqlite:PATH or postgres://..., not %q", redactStore(s))
}

// openBroker returns the broker of -broker for the hub, and the one the
// Service publishes ephemeral events through (nil: the store's, or in
// process). The timed store wraps st; the brokers use st itself.
func openBroker(ctx context.Context, cfg *config, st chat.Store, kind string, log *slog.Logger) (broker.Broker, chat.EphemeralBroker, error) {
	b := cfg.broker
	if b == "" {
		b = "inprocess"
		if kind == "postgres" {
			b = "postgres"
		}
	}
	pg, isPG := st.(*postgres.Store)
	switch {
	case b == "inprocess":
		return nil, nil, nil
	case b == "postgres":
		if !isPG {
			return nil, nil, usagef("-broker postgres needs a Postgres store (-store postgres://...)")
		}
		return broker.Postgres(pg, 0), nil, nil
	}
	if !isPG {
		return nil, nil, usagef("-broker nats://... needs a Postgres store (-store postgres://...): its publisher's lease and position live there")
	}
	urls, err := natsbroker.ParseURLs(b)
	if err != nil {
		return nil, nil, usagef("-broker: %v", err)
	}
	nb, err := natsbroker.New(ctx, natsbroker.Config{URLs: urls, Store: st, Leaser: pg, Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("-broker %s: %w", b, err)
	}
	log.Info("event broker: NATS JetStream", "servers", strings.Join(urls, ","))
	return nb, nb, nil
}

// redactStore hides a password in a Postgres URL.
func redactStore(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			return u.String()
		}
	}
	return s
}

// setGC sets the garbage collector's target percentage (-gc-percent). With
// SQLite or Postgres the live heap is small (the data is in the database),
// so at Go's default of 100 the collector runs every few hundred requests
// under load; 400 costs a few MB more and, measured with bench/http.sh,
// gave 25-75 % more requests per second on two cores. The memory store's
// heap holds all the data, so it keeps 100 there. GOGC in the environment,
// when set, is the operator's choice and wins.
// It returns the setting, for the start-up log line.
func (c *cli) setGC(cfg *config, kind string) string {
	if v := c.env("GOGC"); v != "" {
		return v + " (environment)"
	}
	p := cfg.gcPercent
	if p == 0 {
		p = 400
		if kind == "memory" {
			p = 100
		}
	}
	debug.SetGCPercent(p)
	return strconv.Itoa(p)
}

func newLogger(cfg *config, c *cli) *slog.Logger {
	lvl, _ := parseLevel(cfg.logLevel)
	opts := &slog.HandlerOptions{Level: lvl}
	if cfg.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(c.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(c.stderr, opts))
}

// serve runs the HTTP server until ctx is cancelled, then shuts down:
// stop accepting, finish the requests in flight, drain the webhook
// deliveries in flight, close the store.
func (c *cli) serve(ctx context.Context, cfg *config) (err error) {
	log := newLogger(cfg, c)
	st, kind, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	gc := c.setGC(cfg, kind)
	defer func() {
		if cerr := st.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing the store: %w", cerr)
		}
	}()

	allowPrivate := cfg.allowPrivate
	var disp *webhook.Dispatcher
	var hub *stream.Hub
	var pusher *push.Worker
	m := newMetrics(func() int { return disp.InFlight() }, func() int { return hub.Connections() })
	// The Service's and the dispatcher's transactions are timed; the timed
	// store passes the commit signals (chat.OutboxWatcher) and the typing
	// relay (chat.EphemeralBroker) through.
	timed := m.timeStore(st)
	m.reportBacklog(timed)
	var userSecret []byte
	if cfg.userTokenSecret != "" {
		userSecret = []byte(cfg.userTokenSecret)
	}
	// The dispatcher hears the store's signals of enqueued deliveries;
	// OnCommit would wake it a second time for each (a second claim).
	var onCommit func()
	if _, signals := timed.(chat.DeliveryWatcher); !signals {
		onCommit = func() { disp.Wake() } // made below, over the Service
	}
	var preSend chat.PreSendHook
	if cfg.preSendURL != "" {
		h, err := webhook.NewPreSendHook(webhook.PreSendConfig{
			URL:             cfg.preSendURL,
			Secret:          cfg.preSendSecret,
			SignatureHeader: cfg.webhookHeader,
			Timeout:         cfg.preSendTimeout,
			RejectOnError:   cfg.preSendPolicy == "reject",
			AllowPrivate:    allowPrivate,
			Logger:          log,
			OnResult:        func(r string) { m.preSend.WithLabelValues(r).Inc() },
		})
		if err != nil {
			return usagef("-pre-send-hook-url: %v", err)
		}
		preSend = h
	}
	evBroker, ephBroker, err := openBroker(ctx, cfg, st, kind, log)
	if err != nil {
		return err
	}
	if c, ok := evBroker.(interface{ Close() error }); ok {
		defer func() { _ = c.Close() }()
	}
	svc, err := chat.New(ctx, timed, chat.Config{
		EphemeralBroker: ephBroker,
		PreSendHook:     preSend,
		Logger:          log,
		UserTokenSecret: userSecret,
		Limits:          chat.Limits{MaxFileBytes: cfg.maxUploadBytes, MaxImagePixels: cfg.maxImagePixels},
		WebhookURLCheck: func(u string) error {
			return webhook.CheckURL(u, allowPrivate)
		},
		AllowPrivatePush: allowPrivate,
		OnCommit:         onCommit,
		PushWithoutText:  cfg.pushWithoutText,
		OnPush:           func() { pusher.Wake() },
	})
	if err != nil {
		return fmt.Errorf("starting the chat service: %w", err)
	}
	// The dispatcher claims and records deliveries in the timed store, and
	// disables a webhook whose receiver is gone through the Service.
	disp = webhook.New(svc, timed, webhook.Config{
		AllowPrivate:    allowPrivate,
		SignatureHeader: cfg.webhookHeader,
		Logger:          log,
		OnRecorded:      func(state string) { m.webhooks.WithLabelValues(state).Inc() },
		// The deliveries this process enqueues go to its dispatcher
		// without a claim transaction while it keeps up.
		Direct: true,
	})

	senders, err := pushSenders(cfg, svc, log)
	if err != nil {
		return err
	}
	// The push worker sends the push outbox; every process runs one, the
	// leases keep them from sending a push twice at once.
	pusher = push.NewWorker(timed, senders, push.WorkerConfig{
		Logger:   log,
		OnResult: func(provider, result string) { m.pushes.WithLabelValues(provider, result).Inc() },
	})

	if err := c.firstAdmin(ctx, svc, kind, cfg.adminTokenFile); err != nil {
		return err
	}
	if cfg.webhookURL != "" {
		w, err := svc.EnsureWebhook(ctx, "", cfg.webhookURL, cfg.webhookSecret)
		if err != nil {
			return fmt.Errorf("registering -webhook-url: %w", err)
		}
		log.Info("static webhook registered", "webhookId", w.WebhookID, "url", w.URL)
	}

	maxStreams := cfg.maxStreams
	if maxStreams == 0 {
		maxStreams = -1 // the flag's 0: no cap
	}
	presenceMax := cfg.presenceMax
	if presenceMax == 0 {
		presenceMax = -1 // the flag's 0: no bound
	}
	// Presence: users are online while they have an event stream on any
	// process (the hub tells it), and for -presence-grace after.
	presence := chat.NewPresence(svc, chat.PresenceConfig{Grace: cfg.presenceGrace, Logger: log})
	hub = stream.New(svc, stream.Config{EventRetention: cfg.eventRetention, MaxStreamsPerCaller: maxStreams, Logger: log,
		Presence: presence, PresenceMaxMembers: presenceMax, Broker: evBroker})
	// One bucket per client address for every request without a
	// credential: the API's and the sign-in forms beside it.
	anon := httpapi.NewAnonLimiter(httpapi.RateLimit{Rate: cfg.anonRate, Burst: cfg.anonBurst}, clientAddr(cfg.clientHeader))
	api := httpapi.New(svc, httpapi.Config{
		Events:               hub,
		MaxBodyBytes:         cfg.maxBodyBytes,
		MaxUploadBytes:       cfg.maxUploadBytes,
		MaxImagePixels:       cfg.maxImagePixels,
		MaxImageMemory:       cfg.maxImageMemory,
		ImageMemoryBudget:    cfg.imageBudget,
		ImageQueueTimeout:    cfg.imageQueue,
		Logger:               log,
		AccessLog:            true,
		AllowPrivateWebhooks: allowPrivate,
		AdminRateLimit:       httpapi.RateLimit{Rate: cfg.adminRate, Burst: cfg.adminBurst},
		UserRateLimit:        httpapi.RateLimit{Rate: cfg.userRate, Burst: cfg.userBurst},
		Anon:                 anon,
	})
	var draining atomic.Bool
	r := chi.NewRouter()
	r.Use(m.middleware)
	if cfg.metricsAddr == "" {
		r.Method(http.MethodGet, "/metrics", m.handler())
	}
	r.Get("/livez", func(w http.ResponseWriter, _ *http.Request) {
		writeStatus(w, http.StatusOK, "ok")
	})
	r.Get("/readyz", readyz(st, &draining, log))
	r.Mount("/api/v2", api)
	if cfg.chatPage {
		mountChatPage(r, svc, cfg, anon, log)
	}
	if cfg.panel {
		mountPanel(r, svc, hub, cfg, anon, log)
	}

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           r,
		ReadHeaderTimeout: min(10*time.Second, cfg.readTimeout),
		// A client that sends its body (or reads the response) too slowly
		// would otherwise hold its connection and goroutine for ever.
		ReadTimeout:    cfg.readTimeout,
		WriteTimeout:   cfg.writeTimeout,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	// The dispatcher runs until Stop: cancelling ctx starts the shutdown
	// below, which stops it only after the last request finished.
	if err := disp.Start(context.WithoutCancel(ctx)); err != nil {
		ln.Close()
		return fmt.Errorf("starting the webhook dispatcher: %w", err)
	}
	if err := presence.Start(ctx); err != nil {
		ln.Close()
		_ = disp.Stop(context.Background())
		return fmt.Errorf("starting presence: %w", err)
	}
	// Stopped after the hub (which ends the streams) and before the store
	// closes: its users go offline after the grace period, announced by
	// another process or by the next start.
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
		defer cancel()
		if err := presence.Stop(sctx); err != nil {
			log.Warn("stopping presence", "err", err)
		}
	}()
	if err := hub.Start(ctx); err != nil {
		ln.Close()
		_ = disp.Stop(context.Background())
		return fmt.Errorf("starting the event stream: %w", err)
	}
	if err := pusher.Start(context.WithoutCancel(ctx)); err != nil {
		ln.Close()
		_ = disp.Stop(context.Background())
		_ = hub.Stop(context.Background())
		return fmt.Errorf("starting the push worker: %w", err)
	}
	defer func() {
		// After the requests: the pushes of the last messages are sent
		// or left, leased, for a worker to send after the lease.
		sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
		defer cancel()
		_ = pusher.Stop(sctx)
	}()
	// The expirer announces mutes that end by time (channel.didUnmute,
	// channel.didUnmuteUsers); every process runs one, each lapse is
	// announced once. Stopped before the store closes (deferred later).
	expirer := chat.NewExpirer(svc, chat.ExpirerConfig{Logger: log})
	if err := expirer.Start(ctx); err != nil {
		ln.Close()
		_ = disp.Stop(context.Background())
		_ = hub.Stop(context.Background())
		return fmt.Errorf("starting the mute expirer: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
		defer cancel()
		_ = expirer.Stop(sctx)
	}()
	// The indexer writes the SQLite store's message search index behind
	// the commit, in batches (a message is searchable within about a
	// second); with the other stores it does nothing. Every process runs
	// one; after a stop it catches up from the position kept in the store.
	indexer := chat.NewIndexer(st, chat.IndexerConfig{Logger: log})
	if err := indexer.Start(ctx); err != nil {
		ln.Close()
		_ = disp.Stop(context.Background())
		_ = hub.Stop(context.Background())
		return fmt.Errorf("starting the search indexer: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
		defer cancel()
		_ = indexer.Stop(sctx)
	}()

	if cfg.metricsAddr != "" {
		mln, err := net.Listen("tcp", cfg.metricsAddr)
		if err != nil {
			ln.Close()
			_ = disp.Stop(context.Background())
			return fmt.Errorf("-metrics-addr: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", m.handler())
		msrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = msrv.Serve(mln) }()
		defer msrv.Close()
		log.Info("metrics listening", "url", "http://"+mln.Addr().String()+"/metrics")
		if c.metricsReady != nil {
			c.metricsReady(mln.Addr().String())
		}
	}

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	addr := ln.Addr().String()
	log.Info("chat server listening", "api", "http://"+addr+"/api/v2", "store", kind, "gogc", gc, "version", versionString())
	if c.ready != nil {
		c.ready(addr)
	}

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		draining.Store(true)
		sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
		defer cancel()
		_ = disp.Stop(sctx)
		_ = hub.Stop(sctx)
		return fmt.Errorf("http server: %w", err)
	}

	// Drain: /readyz fails at once so that load balancers stop sending
	// new requests, while the listener stays open for the drain delay to
	// serve those already on their way. Keep-alive connections close after
	// their next response, so clients reconnect to another instance.
	log.Info("shutting down", "drainDelay", cfg.drainDelay, "timeout", cfg.shutdownTimeout)
	draining.Store(true)
	srv.SetKeepAlivesEnabled(false)
	if cfg.drainDelay > 0 {
		t := time.NewTimer(cfg.drainDelay)
		select {
		case <-t.C:
		case err := <-serveErr:
			t.Stop()
			serveErr <- err // read again below
		}
	}
	log.Info("drain delay over; refusing new connections and finishing requests in flight")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
	defer cancel()
	var errs []error
	// Event streams never finish by themselves: stopping the hub ends them
	// (WebSocket close 1001), so that Shutdown waits only for requests.
	if err := hub.Stop(sctx); err != nil {
		errs = append(errs, fmt.Errorf("stopping the event stream: %w", err))
	}
	if err := srv.Shutdown(sctx); err != nil {
		errs = append(errs, fmt.Errorf("finishing requests: %w", err))
		srv.Close()
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		errs = append(errs, err)
	}
	if err := disp.Stop(sctx); err != nil {
		errs = append(errs, fmt.Errorf("draining webhook deliveries: %w", err))
	}
	if len(errs) == 0 {
		log.Info("shutdown complete")
	}
	return errors.Join(errs...)
}

// firstAdmin creates the admin "admin" when the store has no admin account
// and prints its token, once, to stderr as plain text outside the log
// records, or, when tokenFile is set, writes it to that new file with mode
// 0600 (readable by the owner only) and prints only the file's name.
func (c *cli) firstAdmin(ctx context.Context, svc *chat.Service, kind, tokenFile string) error {
	has, err := svc.HasAdmins(ctx)
	if err != nil {
		return fmt.Errorf("looking for admin accounts: %w", err)
	}
	if has {
		return nil
	}
	a, token, err := svc.CreateAdmin(ctx, "", "admin", "")
	if chat.ErrorCode(err) == chat.CodeConflict {
		return nil // another process sharing the store was first
	}
	if err != nil {
		return fmt.Errorf("creating the first admin: %w", err)
	}
	if tokenFile != "" {
		f, err := os.OpenFile(tokenFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("writing the first admin's token (-first-admin-token-file): %w", err)
		}
		_, werr := fmt.Fprintln(f, token)
		if err := errors.Join(werr, f.Close()); err != nil {
			return fmt.Errorf("writing the first admin's token to %s: %w", tokenFile, err)
		}
		fmt.Fprintf(c.stderr, "\nNo admin account existed, so admin %q (user %q) was created.\n"+
			"Its access token was written to %s (readable by its owner only).\n"+
			"To sign in to the admin panel at /admin/, set its password: server admin passwd %s\n\n", a.Name, a.UserID, tokenFile, a.Name)
		return nil
	}
	note := ""
	if kind == "memory" {
		note = "\n(The memory store keeps nothing: a new admin and token are made on every start.)"
	}
	fmt.Fprintf(c.stderr, "\nNo admin account existed, so admin %q (user %q) was created.\n"+
		"Its access token is shown only this once:\n\n    %s\n\n"+
		"Use it as \"Authorization: Bearer <token>\". Create more with: server admin create NAME%s\n"+
		"To sign in to the admin panel at /admin/, set its password: server admin passwd %s\n\n",
		a.Name, a.UserID, token, note, a.Name)
	return nil
}

// readyz answers 200 when the store answers a cheap read within 2 s, and
// 503 when it does not or when the server is shutting down.
func readyz(st chat.Store, draining *atomic.Bool, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		if draining.Load() {
			writeStatus(w, http.StatusServiceUnavailable, "shutting down")
			return
		}
		rctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
		defer cancel()
		err := st.View(rctx, func(tx chat.Tx) error {
			_, err := tx.RulesVersion(rctx)
			return err
		})
		if err != nil {
			log.Warn("readyz: store unreachable", "err", err)
			writeStatus(w, http.StatusServiceUnavailable, "store unavailable")
			return
		}
		writeStatus(w, http.StatusOK, "ok")
	}
}

func writeStatus(w http.ResponseWriter, code int, status string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"status": status})
}

// clientAddr returns how the address of a request's client is found: the
// connection's peer, or with -client-addr-header the last comma-separated
// entry of that header (the one a trusted proxy in front set or appended;
// the peer when the header is absent).
func clientAddr(header string) func(r *http.Request) string {
	if header == "" {
		return httpapi.RemoteHost
	}
	return func(r *http.Request) string {
		v := r.Header.Get(header)
		if i := strings.LastIndexByte(v, ','); i >= 0 {
			v = v[i+1:]
		}
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
		return httpapi.RemoteHost(r)
	}
}

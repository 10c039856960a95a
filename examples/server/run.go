package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/httpapi"
	"github.com/chatengine/chat/media"
	"github.com/chatengine/chat/push"
	"github.com/chatengine/chat/stream"
	"github.com/chatengine/chat/webhook"
)

// version is the server's version; release builds set it with
// -ldflags "-X main.version=v1.2.3". Otherwise the module version from the
// build info is used.
var version = "dev"

// config is everything the flags (and their CHAT_ variables) configure.
type config struct {
	store           string
	addr            string
	maxBodyBytes    int64
	maxUploadBytes  int64
	maxImagePixels  int64
	maxImageMemory  int64
	imageBudget     int64
	imageQueue      time.Duration
	webhookURL      string
	webhookSecret   string
	webhookHeader   string
	allowPrivate    bool
	logLevel        string
	logFormat       string
	shutdownTimeout time.Duration
	drainDelay      time.Duration
	adminTokenFile  string
	metricsAddr     string
	readTimeout     time.Duration
	writeTimeout    time.Duration
	gcPercent       int
	postgresSchema  string
	chatPage        bool
	panel           bool
	panelIdle       time.Duration
	unsafeDevSignIn bool
	userTokenSecret string
	eventRetention  time.Duration
	presenceGrace   time.Duration
	presenceMax     int
	broker          string
	maxStreams      int
	adminRate       float64
	adminBurst      int
	userRate        float64
	userBurst       int
	anonRate        float64
	anonBurst       int
	clientHeader    string
	preSendURL      string
	preSendSecret   string
	preSendTimeout  time.Duration
	preSendPolicy   string
	apnsKeyFile     string
	apnsKeyID       string
	apnsTeamID      string
	apnsTopic       string
	apnsEndpoint    string
	fcmCredentials  string
	fcmEndpoint     string
	fcmTokenURL     string
	webPushSubject  string
	pushWithoutText bool
}

// defaults are the values used when neither a flag nor its variable is set.
var defaults = config{
	store:           "sqlite:chat.db",
	addr:            "127.0.0.1:8080",
	maxBodyBytes:    1 << 20,
	maxUploadBytes:  50 << 20,
	maxImagePixels:  50_000_000,
	maxImageMemory:  media.DefaultMaxDecodedBytes,
	imageQueue:      30 * time.Second,
	logLevel:        "info",
	logFormat:       "text",
	shutdownTimeout: 30 * time.Second,
	drainDelay:      5 * time.Second,
	readTimeout:     5 * time.Minute,
	writeTimeout:    10 * time.Minute,
	chatPage:        true,
	panel:           true,
	panelIdle:       30 * time.Minute,
	eventRetention:  stream.DefaultEventRetention,
	presenceGrace:   chat.DefaultPresenceGrace,
	presenceMax:     stream.DefaultPresenceMaxMembers,
	maxStreams:      stream.DefaultMaxStreamsPerCaller,
	adminRate:       httpapi.DefaultAdminRateLimit.Rate,
	adminBurst:      httpapi.DefaultAdminRateLimit.Burst,
	userRate:        httpapi.DefaultUserRateLimit.Rate,
	userBurst:       httpapi.DefaultUserRateLimit.Burst,
	anonRate:        httpapi.DefaultAnonRateLimit.Rate,
	anonBurst:       httpapi.DefaultAnonRateLimit.Burst,
	preSendTimeout:  webhook.DefaultPreSendTimeout,
	preSendPolicy:   "allow",
	apnsEndpoint:    push.APNsProduction,
	fcmEndpoint:     push.FCMEndpoint,
}

// usageError is a mistake on the command line (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return usageError{fmt.Sprintf(format, args...)}
}

// envName returns the environment variable read for a flag:
// "allow-private-webhooks" -> "CHAT_ALLOW_PRIVATE_WEBHOOKS".
func envName(flagName string) string {
	return "CHAT_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// bindGlobal defines the global flags on fs, writing into c.
func bindGlobal(fs *flag.FlagSet, c *config) {
	*c = defaults
	fs.StringVar(&c.store, "store", c.store, "store: memory | sqlite:PATH | postgres://USER:PASS@HOST:PORT/DB?sslmode=...")
	fs.StringVar(&c.addr, "addr", c.addr, "listen address (host:port; port 0 picks a free one)")
	fs.Int64Var(&c.maxBodyBytes, "max-body-bytes", c.maxBodyBytes, "largest JSON or form request body in bytes (larger: 413)")
	fs.Int64Var(&c.maxUploadBytes, "max-upload-bytes", c.maxUploadBytes, "largest image or file upload in bytes (larger: 413)")
	fs.Int64Var(&c.maxImagePixels, "max-image-pixels", c.maxImagePixels, "largest image in pixels, width times height (larger: 413)")
	fs.Int64Var(&c.maxImageMemory, "max-image-memory", c.maxImageMemory, "largest image in bytes once decoded, from its header: width times height times the bytes of a pixel, e.g. 8 for 16-bit RGBA (larger: 413)")
	fs.Int64Var(&c.imageBudget, "image-memory-budget", 0, "estimated bytes of all the images decoded at once; more uploads wait (0: 256 MiB per GOMAXPROCS, at least -max-image-memory)")
	fs.DurationVar(&c.imageQueue, "image-queue-timeout", c.imageQueue, "how long an image upload waits for -image-memory-budget before 503 with Retry-After")
	fs.StringVar(&c.webhookURL, "webhook-url", "", "static webhook: URL that receives every event (registered at start)")
	fs.StringVar(&c.webhookSecret, "webhook-secret", "", "static webhook: secret signing its deliveries (required with -webhook-url)")
	fs.StringVar(&c.webhookHeader, "webhook-signature-header", "", "header carrying the sha1= signature (default X-Service-Signature)")
	fs.BoolVar(&c.allowPrivate, "allow-private-webhooks", false, "let webhooks, the pre-send hook and push providers (Web Push endpoints, -apns-endpoint, -fcm-endpoint, -fcm-token-url) reach loopback and private addresses, and Web Push endpoints use http (local development only)")
	fs.StringVar(&c.logLevel, "log-level", c.logLevel, "log level: debug | info | warn | error")
	fs.StringVar(&c.logFormat, "log-format", c.logFormat, "log format: text | json")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", c.shutdownTimeout, "how long SIGINT/SIGTERM waits for requests and webhook deliveries in flight")
	fs.DurationVar(&c.drainDelay, "drain-delay", c.drainDelay, "on SIGINT/SIGTERM, how long /readyz answers 503 while the server still accepts connections, before it stops accepting")
	fs.StringVar(&c.adminTokenFile, "first-admin-token-file", "", "write the token of the admin created on first start to this file (mode 0600, must not exist) instead of printing it on stderr")
	fs.StringVar(&c.metricsAddr, "metrics-addr", "", "serve /metrics on this separate address (host:port) instead of beside /livez on -addr")
	fs.DurationVar(&c.readTimeout, "read-timeout", c.readTimeout, "longest time to read one request, body included (a slower client is cut off)")
	fs.DurationVar(&c.writeTimeout, "write-timeout", c.writeTimeout, "longest time from reading a request's headers to the end of its response")
	fs.IntVar(&c.gcPercent, "gc-percent", 0, "garbage collector target (Go's GOGC); 0 picks 400 with SQLite or Postgres and 100 with the memory store; the GOGC variable, when set, wins")
	fs.DurationVar(&c.eventRetention, "event-retention", c.eventRetention, "how long events stay in the log, and so how far back an event stream may resume (a Go duration)")
	fs.DurationVar(&c.presenceGrace, "presence-grace", c.presenceGrace, "how long a user stays online after its last event stream closed, so that a reconnect does not show it offline (a Go duration; the same on every process)")
	fs.IntVar(&c.presenceMax, "presence-max-members", c.presenceMax, "user.didChangePresence goes to the members of a user's channels of at most this many members (in larger ones members read a user's online field); 0 turns the bound off")
	fs.StringVar(&c.broker, "broker", "", "how events reach the event streams of every process: inprocess | postgres | nats://HOST:PORT[,HOST:PORT...] (NATS JetStream, a server or cluster; needs a Postgres store); default postgres with a Postgres store, else inprocess (see docs/operations.md)")
	fs.IntVar(&c.maxStreams, "max-streams-per-caller", c.maxStreams, "event streams each end user and each admin account may have open at once on this process (one more: 429); 0 turns the cap off")
	fs.StringVar(&c.postgresSchema, "postgres-schema", "", "Postgres schema holding the tables (default public)")
	fs.BoolVar(&c.chatPage, "chat-page", c.chatPage, "serve the end users' chat page at /chat/")
	fs.BoolVar(&c.panel, "admin-panel", c.panel, "serve the admin panel at /admin/ (admins sign in with a password set by `admin passwd NAME`)")
	fs.DurationVar(&c.panelIdle, "admin-panel-idle", c.panelIdle, "admin panel sessions end after this long without a request")
	fs.BoolVar(&c.unsafeDevSignIn, "unsafe-dev-sign-in", false, "UNSAFE, local development only: the chat page signs anybody in as any user id they type")
	fs.Float64Var(&c.adminRate, "admin-rate", c.adminRate, "API requests per second each admin account may make on average, per process; 0 turns the admin limit off")
	fs.IntVar(&c.adminBurst, "admin-burst", c.adminBurst, "API requests an admin account may make at once (the bucket size); 0 means twice -admin-rate")
	fs.Float64Var(&c.userRate, "user-rate", c.userRate, "API requests per second each end user may make on average, per process; 0 turns the user limit off")
	fs.IntVar(&c.userBurst, "user-burst", c.userBurst, "API requests an end user may make at once (the bucket size); 0 means twice -user-rate")
	fs.Float64Var(&c.anonRate, "anon-rate", c.anonRate, "requests per second each client address may make without a credential (no or a refused token, stream tickets, the panel's sign-in), on average, per process; 0 turns the limit off")
	fs.IntVar(&c.anonBurst, "anon-burst", c.anonBurst, "requests without a credential a client address may make at once (the bucket size); 0 means twice -anon-rate")
	fs.StringVar(&c.clientHeader, "client-addr-header", "", "take the client address (for -anon-rate and the panel's sign-in throttle) from this request header, set by a trusted proxy in front (its last comma-separated entry), instead of the connection's peer; only when every request comes through that proxy")
	fs.StringVar(&c.preSendURL, "pre-send-hook-url", "", "pre-send hook: https endpoint asked about every new or edited message before it is stored (see docs/operations.md)")
	fs.StringVar(&c.preSendSecret, "pre-send-hook-secret", "", "pre-send hook: secret signing its requests as webhook deliveries are signed (required with -pre-send-hook-url)")
	fs.DurationVar(&c.preSendTimeout, "pre-send-hook-timeout", c.preSendTimeout, "pre-send hook: how long to wait for its answer before the policy applies")
	fs.StringVar(&c.preSendPolicy, "pre-send-hook-policy", c.preSendPolicy, "pre-send hook: what happens to a message when the hook gives no usable answer (timeout, error, non-2xx, unreadable): allow | reject")
	fs.StringVar(&c.apnsKeyFile, "apns-key-file", "", "APNs: the token signing key (.p8 file from the Apple developer account); with -apns-key-id, -apns-team-id and -apns-topic it turns APNs pushes on")
	fs.StringVar(&c.apnsKeyID, "apns-key-id", "", "APNs: the signing key's key ID")
	fs.StringVar(&c.apnsTeamID, "apns-team-id", "", "APNs: the developer team ID")
	fs.StringVar(&c.apnsTopic, "apns-topic", "", "APNs: the app's bundle ID")
	fs.StringVar(&c.apnsEndpoint, "apns-endpoint", c.apnsEndpoint, "APNs: the provider API's origin ("+push.APNsSandbox+" for development builds of an app)")
	fs.StringVar(&c.fcmCredentials, "fcm-credentials-file", "", "FCM: a service account's JSON key file (Firebase console, Project settings, Service accounts); turns FCM pushes on")
	fs.StringVar(&c.fcmEndpoint, "fcm-endpoint", c.fcmEndpoint, "FCM: the HTTP v1 API's origin")
	fs.StringVar(&c.fcmTokenURL, "fcm-token-url", "", "FCM: where the service account's assertion is exchanged for an access token (default: the key file's token_uri)")
	fs.StringVar(&c.webPushSubject, "webpush-subject", "", "Web Push: the contact (mailto: or https: URL) sent to push services with every push; turns Web Push on")
	fs.BoolVar(&c.pushWithoutText, "push-without-text", false, "leave the message's text out of push notifications (the body is the sender's name alone)")
	fs.StringVar(&c.userTokenSecret, "user-token-secret", "", "secret signing end users' tokens (HS256 JWTs); default: a random secret made on first start and kept in the store")
}

// cli runs one invocation of the server binary.
type cli struct {
	env    func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// ready, when not nil, is called with the listening address once the
	// server accepts connections (tests listen on 127.0.0.1:0).
	ready func(addr string)
	// metricsReady, when not nil, is called with the address of the
	// separate metrics listener (-metrics-addr) once it accepts.
	metricsReady func(addr string)
}

// run executes the command line args (without the program name): the
// server by default, or a subcommand. env looks up environment variables.
// The server runs until ctx is cancelled and then shuts down gracefully.
func run(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	return (&cli{env: env, stdin: os.Stdin, stdout: stdout, stderr: stderr}).run(ctx, args)
}

const usageText = `Usage: server [flags] [command]

Commands:
  serve (default)               run the HTTP server
  admin create NAME [-user-id ID] [-password-stdin]
                                create an admin account; prints its access token alone on stdout;
                                with -password-stdin the first line of stdin is its panel password
  admin passwd NAME             set or change an admin's panel password (prompted on a terminal,
                                else the first line of stdin)
  admin list                    list admin accounts
  admin rotate NAME             give an admin a new access token (the old one stops working;
                                a revoked admin is active again); prints it alone on stdout
  admin revoke NAME             revoke an admin's access token
  migrate                       bring the store's schema up to date and exit
  version                       print the version

Every flag can also be set with the environment variable CHAT_ + its name in
upper snake case (CHAT_STORE, CHAT_ADDR, CHAT_WEBHOOK_URL, ...); a flag given
on the command line beats its variable.

Flags:
`

// parse parses args into cfg (already holding defaults or earlier
// values) with the global flags plus those extra defines,
// allowing flags anywhere among the positional arguments, and then fills
// every global flag not given on the command line from its CHAT_ variable.
// set records the flags given on the command line across calls.
func (c *cli) parse(name string, cfg *config, set map[string]bool, args []string, extra func(*flag.FlagSet)) ([]string, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	saved := *cfg
	bindGlobal(fs, cfg)
	*cfg = saved // keep what earlier parses set
	if extra != nil {
		extra(fs)
	}
	fs.Usage = func() {
		fmt.Fprint(c.stderr, usageText)
		fs.PrintDefaults()
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err.Error()}
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return pos, nil
}

// applyEnv fills every global flag that was not given on the command line
// from its CHAT_ variable.
func (c *cli) applyEnv(cfg *config, set map[string]bool) error {
	fs := flag.NewFlagSet("env", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	saved := *cfg
	bindGlobal(fs, cfg)
	*cfg = saved
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	sort.Strings(names)
	for _, n := range names {
		if set[n] || c.env == nil {
			continue
		}
		v := c.env(envName(n))
		if v == "" {
			continue
		}
		if err := fs.Set(n, v); err != nil {
			return usagef("%s=%q: %v", envName(n), v, err)
		}
	}
	return nil
}

func (c *cli) run(ctx context.Context, args []string) error {
	cfg := defaults
	set := map[string]bool{}

	// Global flags come first; the first positional argument names the
	// command. The command's own parse accepts global flags too.
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	bindGlobal(fs, &cfg)
	fs.Usage = func() {
		fmt.Fprint(c.stderr, usageText)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err.Error()}
	}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	rest := fs.Args()
	cmd := "serve"
	if len(rest) > 0 {
		cmd, rest = rest[0], rest[1:]
	}

	var userID string
	var pwStdin bool
	var pos []string
	var err error
	switch cmd {
	case "admin":
		if len(rest) == 0 {
			return usagef("admin: missing subcommand (create, list, passwd, rotate or revoke)")
		}
		sub := rest[0]
		pos, err = c.parse("admin "+sub, &cfg, set, rest[1:], func(fs *flag.FlagSet) {
			if sub == "create" {
				fs.StringVar(&userID, "user-id", "", "chat user the admin acts as (default: NAME)")
				fs.BoolVar(&pwStdin, "password-stdin", false, "also set the admin panel password from the first line of stdin")
			}
		})
		pos = append([]string{sub}, pos...)
	case "serve", "migrate", "version", "help":
		pos, err = c.parse(cmd, &cfg, set, rest, nil)
	default:
		return usagef("unknown command %q (serve, admin, migrate, version)", cmd)
	}
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := c.applyEnv(&cfg, set); err != nil {
		return err
	}
	if err := cfg.validate(); err != nil {
		return err
	}

	switch cmd {
	case "help":
		fs.SetOutput(c.stdout)
		fmt.Fprint(c.stdout, usageText)
		fs.PrintDefaults()
		return nil
	case "version":
		if len(pos) > 0 {
			return usagef("version takes no arguments")
		}
		fmt.Fprintf(c.stdout, "chat server %s (%s %s/%s)\n", versionString(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return nil
	case "migrate":
		if len(pos) > 0 {
			return usagef("migrate takes no arguments")
		}
		return c.migrate(ctx, &cfg)
	case "admin":
		return c.admin(ctx, &cfg, pos, userID, pwStdin)
	}
	if len(pos) > 0 {
		return usagef("unexpected arguments: %s", strings.Join(pos, " "))
	}
	return c.serve(ctx, &cfg)
}

func (cfg *config) validate() error {
	switch {
	case cfg.maxBodyBytes <= 0:
		return usagef("-max-body-bytes must be positive")
	case cfg.maxUploadBytes <= 0:
		return usagef("-max-upload-bytes must be positive")
	case cfg.maxImagePixels <= 0:
		return usagef("-max-image-pixels must be positive")
	case cfg.maxImageMemory <= 0:
		return usagef("-max-image-memory must be positive")
	case cfg.imageBudget < 0:
		return usagef("-image-memory-budget must be 0 (automatic) or positive")
	case cfg.imageQueue <= 0:
		return usagef("-image-queue-timeout must be positive")
	case cfg.shutdownTimeout <= 0:
		return usagef("-shutdown-timeout must be positive")
	case cfg.readTimeout <= 0:
		return usagef("-read-timeout must be positive")
	case cfg.writeTimeout <= 0:
		return usagef("-write-timeout must be positive")
	case cfg.eventRetention <= 0:
		return usagef("-event-retention must be positive")
	case cfg.presenceGrace <= 0:
		return usagef("-presence-grace must be positive")
	case cfg.presenceMax < 0:
		return usagef("-presence-max-members must be 0 (no bound) or positive")
	case cfg.maxStreams < 0:
		return usagef("-max-streams-per-caller must be 0 (no cap) or positive")
	case cfg.broker != "" && cfg.broker != "inprocess" && cfg.broker != "postgres" && !strings.HasPrefix(cfg.broker, "nats://"):
		return usagef("-broker must be inprocess, postgres or nats://HOST:PORT[,HOST:PORT...], not %q", cfg.broker)
	case cfg.gcPercent != 0 && cfg.gcPercent < 25:
		return usagef("-gc-percent must be 0 (automatic) or at least 25")
	case cfg.webhookURL != "" && cfg.webhookSecret == "":
		return usagef("-webhook-url needs -webhook-secret (or CHAT_WEBHOOK_SECRET)")
	case cfg.webhookURL == "" && cfg.webhookSecret != "":
		return usagef("-webhook-secret needs -webhook-url")
	case cfg.preSendURL != "" && cfg.preSendSecret == "":
		return usagef("-pre-send-hook-url needs -pre-send-hook-secret (or CHAT_PRE_SEND_HOOK_SECRET)")
	case cfg.preSendURL == "" && cfg.preSendSecret != "":
		return usagef("-pre-send-hook-secret needs -pre-send-hook-url")
	case cfg.preSendTimeout <= 0:
		return usagef("-pre-send-hook-timeout must be positive")
	case cfg.preSendPolicy != "allow" && cfg.preSendPolicy != "reject":
		return usagef("-pre-send-hook-policy must be allow or reject")
	case (cfg.apnsKeyFile != "" || cfg.apnsKeyID != "" || cfg.apnsTeamID != "" || cfg.apnsTopic != "") &&
		(cfg.apnsKeyFile == "" || cfg.apnsKeyID == "" || cfg.apnsTeamID == "" || cfg.apnsTopic == ""):
		return usagef("APNs needs all of -apns-key-file, -apns-key-id, -apns-team-id and -apns-topic")
	case cfg.panelIdle <= 0:
		return usagef("-admin-panel-idle must be positive")
	case cfg.unsafeDevSignIn && !cfg.chatPage:
		return usagef("-unsafe-dev-sign-in needs the chat page (-chat-page=true)")
	case !(cfg.adminRate >= 0 && cfg.adminRate <= 1e9):
		return usagef("-admin-rate must be 0 (no limit) or a positive number of requests per second")
	case !(cfg.userRate >= 0 && cfg.userRate <= 1e9):
		return usagef("-user-rate must be 0 (no limit) or a positive number of requests per second")
	case cfg.adminBurst < 0:
		return usagef("-admin-burst must be 0 (twice -admin-rate) or positive")
	case cfg.userBurst < 0:
		return usagef("-user-burst must be 0 (twice -user-rate) or positive")
	case !(cfg.anonRate >= 0 && cfg.anonRate <= 1e9):
		return usagef("-anon-rate must be 0 (no limit) or a positive number of requests per second")
	case cfg.anonBurst < 0:
		return usagef("-anon-burst must be 0 (twice -anon-rate) or positive")
	}
	if _, err := parseLevel(cfg.logLevel); err != nil {
		return err
	}
	if cfg.logFormat != "text" && cfg.logFormat != "json" {
		return usagef("-log-format must be text or json, not %q", cfg.logFormat)
	}
	return nil
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, usagef("-log-level must be debug, info, warn or error, not %q", s)
	}
	return l, nil
}

func versionString() string {
	if version != "dev" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return version
}

func (c *cli) migrate(ctx context.Context, cfg *config) error {
	st, kind, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	if kind == "memory" {
		fmt.Fprintln(c.stderr, "the memory store has no schema: nothing to migrate")
		return nil
	}
	fmt.Fprintf(c.stderr, "%s store %s is up to date\n", kind, redactStore(cfg.store))
	return nil
}

// openService opens the store and the Service for the admin commands.
func (c *cli) openService(ctx context.Context, cfg *config) (*chat.Service, chat.Store, error) {
	st, _, err := openStore(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	svc, err := chat.New(ctx, st, chat.Config{Logger: slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return svc, st, nil
}

func (c *cli) admin(ctx context.Context, cfg *config, pos []string, userID string, pwStdin bool) error {
	sub, args := pos[0], pos[1:]
	switch sub {
	case "create":
		if len(args) != 1 {
			return usagef("usage: admin create NAME [-user-id ID] [-password-stdin]")
		}
	case "passwd":
		if len(args) != 1 {
			return usagef("usage: admin passwd NAME")
		}
	case "revoke":
		if len(args) != 1 {
			return usagef("usage: admin revoke NAME")
		}
	case "rotate":
		if len(args) != 1 {
			return usagef("usage: admin rotate NAME")
		}
	case "list":
		if len(args) != 0 {
			return usagef("usage: admin list")
		}
	default:
		return usagef("admin: unknown subcommand %q (create, list, passwd, rotate or revoke)", sub)
	}
	svc, st, err := c.openService(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	switch sub {
	case "create":
		var a *chat.Admin
		var token string
		if pwStdin {
			var pw string
			if pw, err = c.readPassword(c.stdin, args[0]); err != nil {
				return fmt.Errorf("reading the password: %w", err)
			}
			a, token, err = svc.CreateAdminWithPassword(ctx, "", args[0], userID, pw)
		} else {
			a, token, err = svc.CreateAdmin(ctx, "", args[0], userID)
		}
		if chat.ErrorCode(err) == chat.CodeConflict {
			return chat.Errorf(chat.CodeConflict, "admin %q already exists; to give it a new token run `admin rotate %s`", args[0], args[0])
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(c.stdout, token)
		fmt.Fprintf(c.stderr, "Created admin %q acting as user %q. The access token above is shown only once; send it as\n"+
			"  Authorization: Bearer <token>\n", a.Name, a.UserID)
		if cfg.store == "memory" {
			fmt.Fprintln(c.stderr, "Note: -store memory keeps nothing; this admin is gone already. Use a sqlite: or postgres:// store.")
		}
		return nil
	case "rotate":
		token, err := svc.RotateAdmin(ctx, "", args[0])
		if err != nil {
			return err
		}
		fmt.Fprintln(c.stdout, token)
		fmt.Fprintf(c.stderr, "Admin %q has a new access token (above, shown only once); its old token no longer works.\n", args[0])
		return nil
	case "passwd":
		pw, err := c.readPassword(c.stdin, args[0])
		if err != nil {
			return fmt.Errorf("reading the password: %w", err)
		}
		if err := svc.SetAdminPassword(ctx, args[0], pw); err != nil {
			return err
		}
		fmt.Fprintf(c.stderr, "Admin %q can sign in to the admin panel (/admin/) with this password; its open panel sessions were ended.\n", args[0])
		return nil
	case "revoke":
		if err := svc.RevokeAdmin(ctx, "", args[0]); err != nil {
			return err
		}
		fmt.Fprintf(c.stderr, "Revoked the access token of admin %q.\n", args[0])
		return nil
	}
	as, err := svc.ListAdmins(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tUSER ID\tCREATED\tSTATUS")
	for _, a := range as {
		status := "active"
		if a.RevokedAt != nil {
			status = "revoked " + a.RevokedAt.Format(chat.TimeLayout)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.Name, a.UserID, a.CreatedAt.Format(chat.TimeLayout), status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(as) == 0 {
		fmt.Fprintln(c.stderr, "No admin accounts yet: the server creates one on first start, or run `admin create NAME`.")
	}
	return nil
}

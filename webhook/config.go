package webhook

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"
)

// DefaultSchedule is the delay before each attempt of a delivery (docs/api.md
// section 10): the first attempt at once, then retries 5 s, 5 min, 30 min,
// 2 h, 5 h, 10 h and 10 h after the previous attempt failed. Eight attempts
// in all, spread over about 28 hours.
var DefaultSchedule = []time.Duration{
	0,
	5 * time.Second,
	5 * time.Minute,
	30 * time.Minute,
	2 * time.Hour,
	5 * time.Hour,
	10 * time.Hour,
	10 * time.Hour,
}

// MaxResponseBytes is how much of a receiver's response body is read.
const MaxResponseBytes = 64 << 10

const defaultConnectTimeout = 10 * time.Second

// Config configures a Dispatcher. The zero value works; each field's comment
// states its default.
type Config struct {
	// Owner identifies this dispatcher in delivery leases; it must be
	// unique among the dispatchers sharing a store. Default:
	// "<hostname>-<pid>-<random hex>".
	Owner string
	// SignatureHeader names the header carrying "sha1=<hex>". Default
	// "X-Service-Signature" (DefaultSignatureHeader).
	SignatureHeader string
	// UserAgent is sent with every delivery. Default "chatengine-webhook/1".
	UserAgent string
	// Timeout bounds one attempt, from connecting to reading the response
	// status; a 2xx within it is a success. Default 10 s.
	Timeout time.Duration
	// Schedule holds the delay before each attempt: Schedule[0] before the
	// first (the Service enqueues deliveries due at once, so it is not
	// applied by the dispatcher), Schedule[n] after attempt n failed. A
	// delivery is failed after len(Schedule) attempts. Default
	// DefaultSchedule. Tests use milliseconds.
	Schedule []time.Duration
	// Jitter is the fraction by which each retry delay is randomly
	// lengthened or shortened. Default 0.1 (±10 %); negative disables it.
	Jitter float64
	// MaxRetryAfter caps the Retry-After a receiver can ask for with 429 or
	// 503 (the delay used is the larger of the schedule's and the capped
	// Retry-After). Default 1 h.
	MaxRetryAfter time.Duration
	// Lease is how long a claimed delivery stays reserved for this
	// dispatcher; another dispatcher may take it after the lease expires.
	// It must exceed Timeout. Default 1 min.
	Lease time.Duration
	// BatchSize is the most deliveries claimed in one transaction.
	// Default 100.
	BatchSize int
	// Workers is how many deliveries are POSTed concurrently. Default 32.
	Workers int
	// PerWebhook is the most deliveries of one webhook this dispatcher
	// POSTs at once, so that a slow or dead receiver holds at most that
	// many workers and the other webhooks keep the rest. Claims pass over
	// the deliveries of a webhook at its limit (they stay due and
	// unleased, and cost no attempt) until one of its requests ends. The
	// limit is per dispatcher: N processes sharing a store send at most
	// N*PerWebhook of one webhook at once. Default Workers/2, at least 1.
	PerWebhook int
	// Prefetch is how many more deliveries of one webhook a claim may
	// lease than its PerWebhook free slots: they wait in this process, in
	// claim order, and each is sent as soon as one of the webhook's
	// requests ends, so that a fast receiver gets its next delivery
	// without waiting for a claim transaction, and claims take many
	// deliveries at a time. A delivery that would start too late to end
	// within its lease (Lease less Timeout after its claim) is not sent:
	// its lease runs out and it is claimed again. The dispatcher holds at
	// most Workers+Prefetch claimed deliveries whose attempts have not
	// ended, and sends at most Workers at once. Default 2*PerWebhook;
	// negative means none.
	Prefetch int
	// PollInterval is how often the outbox is polled when the store cannot
	// signal commits (chat.OutboxWatcher) and nothing woke the dispatcher;
	// with a watcher it is the fallback for missed signals and for leases
	// expiring. Default 1 s.
	PollInterval time.Duration
	// AllowPrivate lets deliveries reach loopback, private, link-local
	// and metadata addresses (local development and tests). Default false.
	AllowPrivate bool
	// HTTPClient, when not nil, sends every delivery as it is: its
	// transport decides how to dial, so the address guard applies only if
	// that transport dials through a Guard. Redirects should be disabled.
	// Default: a client whose transport dials through a Guard built from
	// AllowPrivate, Dialer and Resolver, ignores proxy environment
	// variables and does not follow redirects.
	HTTPClient *http.Client
	// Dialer is the base dialer of the default transport (connect timeout,
	// keep-alive, local address). Default: 10 s connect timeout.
	Dialer *net.Dialer
	// Resolver resolves receiver host names for the default transport.
	// Default net.DefaultResolver.
	Resolver Resolver
	// Logger receives warnings and per-attempt debug records. Default
	// slog.Default().
	Logger *slog.Logger
	// OnRecorded, when not nil, is called after each attempt is recorded,
	// with the state the delivery moved to: chat.DeliveryDelivered,
	// chat.DeliveryPending (it will be retried) or chat.DeliveryFailed. It
	// runs on the goroutine recording attempts, so it must be quick (a
	// metrics counter). Default nil.
	OnRecorded func(state string)
	// Direct makes the dispatcher take the deliveries its Service
	// enqueues straight from the transactions that enqueue them
	// (chat.DeliveryTaker, Service.TakeDeliveries) while it has free slots
	// and nothing else due: such a delivery is stored leased to this
	// dispatcher and handed to it after the commit, so no claim
	// transaction reads it. A delivery of a process that ends before
	// sending it is claimed by any dispatcher once its Lease runs out.
	// One dispatcher per Service takes deliveries (the last started).
	// Default false.
	Direct bool
	// Now returns the current time. Default time.Now.
	Now func() time.Time
}

// withDefaults returns a copy of c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.Owner == "" {
		h, _ := os.Hostname()
		if h == "" {
			h = "webhook"
		}
		var b [6]byte
		_, _ = rand.Read(b[:])
		c.Owner = fmt.Sprintf("%s-%d-%s", h, os.Getpid(), hex.EncodeToString(b[:]))
	}
	if c.SignatureHeader == "" {
		c.SignatureHeader = DefaultSignatureHeader
	}
	if c.UserAgent == "" {
		c.UserAgent = "chatengine-webhook/1"
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if len(c.Schedule) == 0 {
		c.Schedule = DefaultSchedule
	}
	c.Schedule = append([]time.Duration(nil), c.Schedule...)
	switch {
	case c.Jitter == 0:
		c.Jitter = 0.1
	case c.Jitter < 0:
		c.Jitter = 0
	case c.Jitter > 1:
		c.Jitter = 1
	}
	if c.MaxRetryAfter <= 0 {
		c.MaxRetryAfter = time.Hour
	}
	if c.Lease <= 0 {
		c.Lease = time.Minute
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 100
	}
	if c.Workers <= 0 {
		c.Workers = 32
	}
	if c.PerWebhook <= 0 {
		c.PerWebhook = max(1, c.Workers/2)
	}
	switch {
	case c.Prefetch == 0:
		c.Prefetch = 2 * c.PerWebhook
	case c.Prefetch < 0:
		c.Prefetch = 0
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c *Config) validate() error {
	if c.Lease <= c.Timeout {
		return fmt.Errorf("webhook: Lease (%v) must exceed Timeout (%v)", c.Lease, c.Timeout)
	}
	return nil
}

// newClient returns the default HTTP client of a dispatcher.
func (c *Config) newClient() *http.Client {
	g := &Guard{AllowPrivate: c.AllowPrivate, Resolver: c.Resolver, Dialer: c.Dialer}
	t := &http.Transport{
		Proxy:                 nil, // never route deliveries through an environment proxy
		DialContext:           g.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          2 * c.Workers,
		MaxIdleConnsPerHost:   c.Workers, // a connection kept for each request to one host at once
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   c.Timeout,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Transport: t,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

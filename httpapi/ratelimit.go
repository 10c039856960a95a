package httpapi

import (
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	chat "github.com/chatengine/chat"
)

// RateLimit is a token bucket: on average Rate requests per second, with
// bursts of up to Burst requests. The zero value is no limit.
type RateLimit struct {
	// Rate is the sustained rate in requests per second; 0 or less turns
	// the limit off.
	Rate float64
	// Burst is the bucket's size: how many requests a rested caller may
	// make at once. 0 or less: twice Rate, rounded up, at least 1.
	Burst int
}

// DefaultAdminRateLimit is the per-admin limit the example server applies
// unless told otherwise: 100 requests per second, bursts of 200.
var DefaultAdminRateLimit = RateLimit{Rate: 100, Burst: 200}

// DefaultUserRateLimit is the per-user limit the example server applies
// unless told otherwise: 20 requests per second, bursts of 40.
var DefaultUserRateLimit = RateLimit{Rate: 20, Burst: 40}

// DefaultAnonRateLimit is the per-address limit of requests without a
// credential that the example server applies unless told otherwise: 20
// requests per second, bursts of 40.
var DefaultAnonRateLimit = RateLimit{Rate: 20, Burst: 40}

// on reports whether the limit is in force.
func (l RateLimit) on() bool { return l.Rate > 0 && !math.IsInf(l.Rate, 1) && !math.IsNaN(l.Rate) }

// burst is the bucket size of an enforced limit.
func (l RateLimit) burst() int {
	if l.Burst > 0 {
		return l.Burst
	}
	return int(max(math.Ceil(2*l.Rate), 1))
}

// limiter holds one token bucket (a rate.Limiter) per caller key. A bucket
// that has been idle long enough to be full again is the same as a new
// one, so sweeps drop such buckets: the map holds only the callers seen
// within about two fill times, however many callers come and go.
type limiter struct {
	limit rate.Limit
	burst int
	// fill is the time an empty bucket takes to fill up.
	fill time.Duration

	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	lim  *rate.Limiter
	last time.Time
}

// newLimiter returns the limiter of l, or nil when l is off.
func newLimiter(l RateLimit) *limiter {
	if !l.on() {
		return nil
	}
	b := l.burst()
	fill := time.Duration(float64(b) / l.Rate * float64(time.Second))
	return &limiter{limit: rate.Limit(l.Rate), burst: b, fill: max(fill, time.Millisecond), buckets: map[string]*bucket{}}
}

// verdict is the outcome of one request against its bucket.
type verdict struct {
	// remaining is the number of whole requests left in the bucket now.
	remaining int
	// reset is the time until the bucket is full again.
	reset time.Duration
	// wait, when positive, refuses the request: the time until one
	// request is available.
	wait time.Duration
}

// take spends one request of key's bucket at now, if the bucket has one.
func (l *limiter) take(key string, now time.Time) verdict {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	b := l.buckets[key]
	if b == nil {
		b = &bucket{lim: rate.NewLimiter(l.limit, l.burst)}
		l.buckets[key] = b
	}
	b.last = now
	var v verdict
	allowed := b.lim.AllowN(now, 1)
	tokens := max(b.lim.TokensAt(now), 0)
	if !allowed {
		v.wait = l.duration(1 - tokens)
	}
	v.remaining = int(math.Floor(tokens))
	v.reset = l.duration(float64(l.burst) - tokens)
	return v
}

// duration is the time the bucket takes to gain n tokens.
func (l *limiter) duration(n float64) time.Duration {
	if n <= 0 {
		return 0
	}
	return time.Duration(math.Ceil(n / float64(l.limit) * float64(time.Second)))
}

// sweep drops the buckets idle for at least a fill time (full again), at
// most once per fill time. Called with l.mu held.
func (l *limiter) sweep(now time.Time) {
	if now.Sub(l.swept) < l.fill {
		return
	}
	l.swept = now
	for k, b := range l.buckets {
		if now.Sub(b.last) >= l.fill {
			delete(l.buckets, k)
		}
	}
}

// size is the number of buckets held.
func (l *limiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// ceilSeconds is d in whole seconds, rounded up.
func ceilSeconds(d time.Duration) int {
	return int((d + time.Second - 1) / time.Second)
}

// rateLimit counts the request of an authenticated caller against its
// bucket (one per admin account, one per end user), sets the
// X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset headers,
// and refuses a request over the limit with 429 (400311) and Retry-After.
// It reports whether the request may go on.
func (h *handler) rateLimit(w http.ResponseWriter, r *http.Request, a *chat.Admin, u *chat.User) bool {
	var l *limiter
	var key string
	switch {
	case a != nil:
		l, key = h.adminLimits, a.Name
	case u != nil:
		l, key = h.userLimits, u.UserID
	}
	if l == nil {
		return true
	}
	return h.spend(w, r, l, key, h.svc.Now().Time)
}

// spend counts r against key's bucket of l at now, sets the rate limit
// headers, and refuses the request over the limit (429, 400311,
// Retry-After). It reports whether the request may go on.
func (h *handler) spend(w http.ResponseWriter, r *http.Request, l *limiter, key string, now time.Time) bool {
	v := l.take(key, now)
	hd := w.Header()
	hd.Set("X-RateLimit-Limit", strconv.Itoa(l.burst))
	hd.Set("X-RateLimit-Remaining", strconv.Itoa(v.remaining))
	hd.Set("X-RateLimit-Reset", strconv.Itoa(ceilSeconds(v.reset)))
	if v.wait <= 0 {
		return true
	}
	ra := chat.RetryAfter{Wait: v.wait}
	h.writeError(w, r, &chat.Error{Code: chat.CodeRateLimited,
		Message: fmt.Sprintf("too many requests: at most %g per second with bursts of %d; retry in %d ms",
			float64(l.limit), l.burst, ra.Milliseconds()),
		Detail: []chat.Detail{ra}})
	return false
}

// AnonLimiter is a token bucket per client address for requests that come
// without a credential: in the API (Config.Anon), requests without an
// Authorization header or whose token is refused (bad, expired, revoked)
// and stream ticket redemptions; beside it, whatever a host wraps with
// Limit (the example server: the admin panel's sign-in form). Signed file
// links are not counted. Its answers are the API's: the X-RateLimit
// headers on every counted request, 429 with 400311 and Retry-After over
// the limit. The buckets live in the process, like the per-caller ones. A
// nil *AnonLimiter limits nothing.
type AnonLimiter struct {
	l    *limiter
	addr func(r *http.Request) string
	h    *handler // writes the refusals
}

// NewAnonLimiter returns the limiter of l per client address, or nil when l
// is off. clientAddr returns the address a request is counted against;
// nil means the host of the request's RemoteAddr (the connection's peer).
// Behind a proxy every client then shares the proxy's address: pass a
// function that reads the client's address from a header the proxy sets
// (and overwrites, so that a client cannot choose it), and only when every
// request comes through that proxy.
func NewAnonLimiter(l RateLimit, clientAddr func(r *http.Request) string) *AnonLimiter {
	lim := newLimiter(l)
	if lim == nil {
		return nil
	}
	if clientAddr == nil {
		clientAddr = RemoteHost
	}
	return &AnonLimiter{l: lim, addr: clientAddr, h: &handler{log: slog.Default()}}
}

// RemoteHost returns the host part of the request's RemoteAddr (the whole
// RemoteAddr when it has no port): the address of the connection's peer.
func RemoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// Allow counts r against the bucket of its client address and sets the
// rate limit headers; over the limit it answers 429 (400311) with
// Retry-After and returns false.
func (a *AnonLimiter) Allow(w http.ResponseWriter, r *http.Request) bool {
	return a.allow(w, r, a.h, time.Now())
}

// allow is Allow with the refusal written by h at now.
func (a *AnonLimiter) allow(w http.ResponseWriter, r *http.Request, h *handler, now time.Time) bool {
	if a == nil {
		return true
	}
	return h.spend(w, r, a.l, a.addr(r), now)
}

// Limit returns next behind Allow, for a host's own routes that take no
// credential (a sign-in form).
func (a *AnonLimiter) Limit(next http.Handler) http.Handler {
	if a == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.Allow(w, r) {
			next.ServeHTTP(w, r)
		}
	})
}

// anon counts a request without a credential against Config.Anon.
func (h *handler) anon(w http.ResponseWriter, r *http.Request) bool {
	return h.cfg.Anon.allow(w, r, h, time.Now())
}

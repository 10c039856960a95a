package httpapi

import (
	"fmt"
	"math"
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
	v := l.take(key, h.svc.Now().Time)
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

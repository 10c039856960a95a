package console

import (
	"math"
	"sync"
	"time"
)

// throttle counts failed sign-ins per key (a name or an address) within
// a sliding window. It lives in the process: several processes each
// count their own failures.
type throttle struct {
	max    int
	window time.Duration
	now    func() time.Time

	mu       sync.Mutex
	failures map[string][]time.Time // oldest first, all within the window
}

func newThrottle(max int, window time.Duration, now func() time.Time) *throttle {
	return &throttle{max: max, window: window, now: now, failures: map[string][]time.Time{}}
}

// blocked returns, for the first key that reached the limit, how long
// until its oldest counted failure leaves the window; 0 when none did.
func (t *throttle) blocked(keys ...string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	var wait time.Duration
	for _, k := range keys {
		fs := t.prune(k, now)
		if len(fs) >= t.max {
			// The attempts answer 429 until the failure that made the
			// count reach the limit is older than the window.
			w := fs[len(fs)-t.max].Add(t.window).Sub(now)
			wait = max(wait, w)
		}
	}
	return wait
}

// fail records a failure for every key.
func (t *throttle) fail(keys ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	for _, k := range keys {
		fs := t.prune(k, now)
		if len(fs) >= t.max*2 { // enough to decide; bounds the memory per key
			fs = fs[1:]
		}
		t.failures[k] = append(fs, now)
	}
	// Forget keys whose failures all left the window, so that the map
	// does not grow with every name ever tried.
	if len(t.failures) > 1024 {
		for k := range t.failures {
			t.prune(k, now)
		}
	}
}

// prune drops the failures of key older than the window (and the key
// when none is left) and returns those left. Callers hold mu.
func (t *throttle) prune(key string, now time.Time) []time.Time {
	fs := t.failures[key]
	i := 0
	for i < len(fs) && now.Sub(fs[i]) >= t.window {
		i++
	}
	fs = fs[i:]
	if len(fs) == 0 {
		delete(t.failures, key)
		return nil
	}
	t.failures[key] = fs
	return fs
}

// retryAfter is d in whole seconds, rounded up, at least 1.
func retryAfter(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

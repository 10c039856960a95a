package httpapi

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRateLimitBurstDefault(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		l     RateLimit
		on    bool
		burst int
	}{
		{RateLimit{}, false, 0},
		{RateLimit{Rate: -1, Burst: 10}, false, 0},
		{RateLimit{Rate: math.Inf(1)}, false, 0},
		{RateLimit{Rate: math.NaN()}, false, 0},
		{RateLimit{Rate: 2.5}, true, 5},
		{RateLimit{Rate: 0.2}, true, 1},
		{RateLimit{Rate: 100, Burst: 7}, true, 7},
	} {
		l := newLimiter(c.l)
		require.Equal(t, c.on, l != nil, "%+v", c.l)
		if l != nil {
			require.Equal(t, c.burst, l.burst, "%+v", c.l)
		}
	}
}

// TestRateLimitEviction: buckets idle for a fill time are dropped, so the
// map does not grow with every caller ever seen, and a dropped bucket
// comes back full, as it would have been.
func TestRateLimitEviction(t *testing.T) {
	t.Parallel()
	l := newLimiter(RateLimit{Rate: 10, Burst: 20}) // fills in 2 s
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 1000 {
		v := l.take("u"+strconv.Itoa(i), t0)
		require.Equal(t, 19, v.remaining)
	}
	for range 25 {
		l.take("busy", t0)
	}
	require.Equal(t, 1001, l.size())

	// Within the fill time nothing goes.
	l.take("late", t0.Add(time.Second))
	require.Equal(t, 1002, l.size())

	// A fill time after the crowd, only the recent callers stay.
	v := l.take("busy", t0.Add(2*time.Second))
	require.Equal(t, 2, l.size(), "busy and late")
	require.Zero(t, v.wait, "busy refilled 20 in 2 s")
	require.Equal(t, 19, v.remaining)

	// An evicted caller starts from a full bucket.
	v = l.take("u7", t0.Add(2*time.Second))
	require.Equal(t, 19, v.remaining)
	require.Equal(t, 3, l.size())

	// A caller still draining keeps its bucket: empty it, then come back
	// before it is full.
	t1 := t0.Add(10 * time.Second)
	for range 21 {
		v = l.take("drain", t1)
	}
	require.Positive(t, v.wait)
	require.Equal(t, 100*time.Millisecond, v.wait)
	v = l.take("other", t1.Add(1900*time.Millisecond))
	require.Zero(t, v.wait)
	v = l.take("drain", t1.Add(1900*time.Millisecond))
	require.Zero(t, v.wait)
	require.Equal(t, 18, v.remaining, "19 tokens back in 1.9 s, one spent")
}

// BenchmarkLimiterTake measures one request against a bucket among
// 10,000 callers (the map lookup, the limiter and the header values),
// parallel over GOMAXPROCS goroutines.
func BenchmarkLimiterTake(b *testing.B) {
	l := newLimiter(RateLimit{Rate: 1e9, Burst: 1 << 30})
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = "user-" + strconv.Itoa(i)
	}
	now := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			l.take(keys[i%len(keys)], now)
			i++
		}
	})
}

package webhook

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	c := Config{}.withDefaults()
	require.NotEmpty(t, c.Owner)
	require.NotEqual(t, c.Owner, Config{}.withDefaults().Owner, "owners are random")
	require.Equal(t, "X-Service-Signature", c.SignatureHeader)
	require.Equal(t, 10*time.Second, c.Timeout)
	require.Equal(t, []time.Duration{0, 5 * time.Second, 5 * time.Minute, 30 * time.Minute,
		2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}, c.Schedule)
	require.Equal(t, 0.1, c.Jitter)
	require.Equal(t, time.Minute, c.Lease)
	require.Equal(t, 32, c.Workers)
	require.Equal(t, 16, c.PerWebhook)
	require.Equal(t, 32, c.Prefetch)
	require.Zero(t, Config{Prefetch: -1}.withDefaults().Prefetch, "negative: none")
	require.Equal(t, 100, c.BatchSize)
	require.Equal(t, time.Second, c.PollInterval)
	require.False(t, c.AllowPrivate)
	require.NoError(t, c.validate())

	bad := Config{Timeout: time.Minute}.withDefaults()
	require.ErrorContains(t, bad.validate(), "Lease")
}

func TestRetryDelay(t *testing.T) {
	t.Parallel()
	d := New(nil, nil, Config{})
	// Attempt n failed: the delay is Schedule[n] ±10 %.
	for n, want := range DefaultSchedule[1:] {
		for range 50 {
			got, ok := d.retryDelay(n+1, 0)
			require.True(t, ok)
			require.InDelta(t, float64(want), float64(got), float64(want)/10+1, "after attempt %d", n+1)
		}
	}
	_, ok := d.retryDelay(len(DefaultSchedule), 0)
	require.False(t, ok, "eight attempts in all")

	// Retry-After lengthens the delay, never shortens it, and is capped.
	got, _ := d.retryDelay(1, 30*time.Second)
	require.Equal(t, 30*time.Second, got)
	got, _ = d.retryDelay(2, time.Second)
	require.Greater(t, got, 4*time.Minute)
	got, _ = d.retryDelay(1, 48*time.Hour)
	require.Equal(t, time.Hour, got)

	exact := New(nil, nil, Config{Schedule: []time.Duration{0, time.Millisecond, 2 * time.Millisecond}, Jitter: -1})
	got, _ = exact.retryDelay(1, 0)
	require.Equal(t, time.Millisecond, got)
	got, _ = exact.retryDelay(2, 0)
	require.Equal(t, 2*time.Millisecond, got)
	_, ok = exact.retryDelay(3, 0)
	require.False(t, ok)
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"120", 2 * time.Minute},
		{" 7 ", 7 * time.Second},
		{"0", 0},
		{"-5", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"99999999999999999999", 0},
		{"9999999999999", time.Duration(1<<62/time.Second) * time.Second},
	} {
		require.Equal(t, tc.want, parseRetryAfter(tc.in, now), tc.in)
	}
}

func TestTruncateAndSnippet(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", maxErrorLen)
	s := truncate(long)
	require.LessOrEqual(t, len(s), maxErrorLen+len("…"))
	require.True(t, strings.HasSuffix(s, "…"))
	require.Equal(t, "a b c", cleanSnippet([]byte("  a\n\tb \r\n c \xff")))
}

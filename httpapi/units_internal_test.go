package httpapi

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestWireDurations checks the conversion of the wire's milliseconds:
// -1 is forever, 0 lifts, other negatives and out-of-range windows stay
// refusable, and no value wraps around into an accepted one.
func TestWireDurations(t *testing.T) {
	mute := map[int64]time.Duration{
		-1:             chat.MuteForever,
		0:              chat.Unmute,
		1:              time.Millisecond,
		60_000:         time.Minute,
		maxMillis:      time.Duration(maxMillis) * time.Millisecond,
		maxMillis + 1:  chat.MuteForever,
		math.MaxInt64:  chat.MuteForever,
		-2:             -time.Millisecond,
		math.MinInt64:  -time.Millisecond,
		-maxMillis - 5: -time.Millisecond,
	}
	for ms, want := range mute {
		require.Equal(t, want, mutePeriod(ms), "mutePeriod %d", ms)
	}
	window := map[int64]time.Duration{
		0:             chat.RateLimitOff,
		1500:          1500 * time.Millisecond,
		86_400_000:    chat.MaxRateLimitWindow,
		maxMillis + 1: math.MaxInt64,
		math.MaxInt64: math.MaxInt64,
		-1:            -time.Millisecond,
		math.MinInt64: -time.Millisecond,
	}
	for ms, want := range window {
		got := rateLimitWindow(ms)
		require.Equal(t, want, got, "rateLimitWindow %d", ms)
		require.Equal(t, ms >= 0 && ms <= 86_400_000, got >= 0 && got <= chat.MaxRateLimitWindow, "accepted %d", ms)
	}
}

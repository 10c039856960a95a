package chat

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTypingThrottleMemory checks that the throttle forgets pairs once
// they cannot throttle anything: memory holds only the pairs of the last
// two intervals.
func TestTypingThrottleMemory(t *testing.T) {
	var th typingThrottle
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range 1000 {
		require.True(t, th.allow(fmt.Sprint("u", i), "c", t0))
	}
	require.Equal(t, 1000, th.size())
	require.False(t, th.allow("u1", "c", t0.Add(TypingInterval-time.Nanosecond)))

	// One interval later the old pairs move to the previous generation:
	// still remembered (they would throttle calls until 2 s after them).
	t1 := t0.Add(TypingInterval)
	require.True(t, th.allow("new", "c", t1))
	require.Equal(t, 1001, th.size())
	require.True(t, th.allow("u1", "c", t1), "u1 last published 2 s ago")

	// Another interval later the first 1,000 are gone.
	t2 := t1.Add(TypingInterval)
	require.True(t, th.allow("newer", "c", t2))
	require.Equal(t, 3, th.size(), "only the pairs of the last two intervals: new, u1 and newer")
	require.False(t, th.allow("newer", "c", t2.Add(time.Second)))

	// After a long pause everything is forgotten at once.
	require.True(t, th.allow("u2", "c", t2.Add(time.Hour)))
	require.Equal(t, 1, th.size())

	// A clock that steps back neither panics nor lets a burst through.
	require.False(t, th.allow("u2", "c", t2))
}

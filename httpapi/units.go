package httpapi

import (
	"math"
	"time"

	chat "github.com/chatengine/chat"
)

// maxMillis is the largest number of milliseconds a time.Duration holds.
const maxMillis = math.MaxInt64 / int64(time.Millisecond)

// mutePeriod turns the wire's mutePeriod (milliseconds; -1 forever, 0
// unmute) into the Service's duration. Other negatives stay negative, so
// the Service refuses them naming mutePeriod; a period longer than a
// time.Duration holds (about 292 years) is forever.
func mutePeriod(ms int64) time.Duration {
	switch {
	case ms == -1 || ms > maxMillis:
		return chat.MuteForever
	case ms < 0:
		return -time.Millisecond
	}
	return time.Duration(ms) * time.Millisecond
}

// rateLimitWindow turns the wire's rateLimitWindow (milliseconds) into the
// Service's duration; values outside a time.Duration stay out of range,
// so the Service refuses them naming rateLimitWindow.
func rateLimitWindow(ms int64) time.Duration {
	switch {
	case ms < 0:
		return -time.Millisecond
	case ms > maxMillis:
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}

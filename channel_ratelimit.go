package chat

import (
	"context"
	"fmt"
	"time"
)

// MaxRateLimitWindow is the longest slow-mode window (one day).
const MaxRateLimitWindow = 24 * time.Hour

// RateLimitOff is the slow-mode window that turns slow mode off.
const RateLimitOff time.Duration = 0

// SetChannelRateLimit puts a channel in slow mode: each member may post
// one message per window (text, custom, image or file; a deleted message
// still counts). The window is kept in whole milliseconds, rounded up;
// RateLimitOff (0) turns slow mode off. Admins and users holding
// User/ExemptFromRateLimit are never limited. A post that comes too early
// is refused with CodeRateLimited, whose detail is a RetryAfter. The
// channel's IsRateLimited and RateLimit show the setting. Emits
// channel.didUpdate when the setting changed. Returns the channel.
// Errors: CodeBadRequest (window outside 0-MaxRateLimitWindow, naming
// rateLimitWindow), CodeNotFound, CodeForbidden (closed).
func (s *Service) SetChannelRateLimit(ctx context.Context, actorID, channelID string, window time.Duration) (*ChannelList, error) {
	if err := s.checkID("channelId", channelID); err != nil {
		return nil, err
	}
	if window < 0 || window > MaxRateLimitWindow {
		return nil, invalid("rateLimitWindow", "must be 0 (off) to %d milliseconds", MaxRateLimitWindow.Milliseconds())
	}
	ms := int((window + time.Millisecond - 1) / time.Millisecond)
	return s.changeChannel(ctx, actorID, actRateLimit, channelID, func(c *Channel) bool {
		if c.RateLimitWindow == ms && c.IsRateLimited == (ms > 0) {
			return false
		}
		c.RateLimitWindow, c.IsRateLimited = ms, ms > 0
		return true
	})
}

// RateLimit is the channel's slow-mode window (RateLimitWindow, which is
// in milliseconds), 0 when slow mode is off.
func (c *Channel) RateLimit() time.Duration {
	return time.Duration(c.RateLimitWindow) * time.Millisecond
}

// checkRateLimit refuses a post by authorID in slow-mode channel c when
// the author's last message there (deleted ones too) is less than the
// window old.
func checkRateLimit(ctx context.Context, tx Tx, c *Channel, authorID string, now time.Time) error {
	// Two posts by one author racing in concurrent transactions: the
	// second waits here for the first to end, then sees its message.
	if _, err := tx.LockChannelUser(ctx, c.ChannelID, authorID); err != nil && ErrorCode(err) != CodeNotFound {
		return err
	}
	ms, err := tx.QueryMessages(ctx, MessageFilter{ChannelID: c.ChannelID, UserID: authorID, IncludeDeleted: true, Descending: true, Limit: 1})
	if err != nil || len(ms) == 0 {
		return err
	}
	next := ms[0].CreatedAt.Add(c.RateLimit())
	if !now.Before(next) {
		return nil
	}
	ra := RetryAfter{Wait: next.Sub(now)}
	return &Error{Code: CodeRateLimited,
		Message: fmt.Sprintf("channel %s is in slow mode (one message per %d ms): user %s may post again in %d ms",
			quote(c.ChannelID), c.RateLimitWindow, quote(authorID), ra.Milliseconds()),
		Detail: []Detail{ra}}
}

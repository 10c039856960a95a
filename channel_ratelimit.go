package chat

import (
	"context"
	"fmt"
	"time"
)

// MaxRateLimitWindow is the longest slow-mode window, in milliseconds
// (one day).
const MaxRateLimitWindow = 24 * 60 * 60 * 1000

// SetChannelRateLimit puts a channel in slow mode: each member may post
// one message per window milliseconds (text, custom, image or file; a
// deleted message still counts). 0 turns slow mode off. Admins and users
// holding User/ExemptFromRateLimit are never limited. A post that comes
// too early is refused with CodeRateLimited, whose detail carries
// retryAfter (whole seconds, at least 1) and retryAfterMs. The channel's
// isRateLimited and rateLimitWindow show the setting. Emits
// channel.didUpdate when the setting changed. Returns the channel.
// Errors: CodeBadRequest (window outside 0-MaxRateLimitWindow),
// CodeNotFound, CodeForbidden (closed).
func (s *Service) SetChannelRateLimit(ctx context.Context, actorID, channelID string, window int64) (*ChannelList, error) {
	if err := s.checkID("channelId", channelID); err != nil {
		return nil, err
	}
	if window < 0 || window > MaxRateLimitWindow {
		return nil, invalid("rateLimitWindow", "must be 0 (off) to %d milliseconds", MaxRateLimitWindow)
	}
	return s.changeChannel(ctx, actorID, channelID, func(c *Channel) bool {
		if c.RateLimitWindow == int(window) && c.IsRateLimited == (window > 0) {
			return false
		}
		c.RateLimitWindow, c.IsRateLimited = int(window), window > 0
		return true
	})
}

// checkRateLimit refuses a post by authorID in slow-mode channel c when
// the author's last message there (deleted ones too) is less than the
// window old.
func checkRateLimit(ctx context.Context, tx Tx, c *Channel, authorID string, now time.Time) error {
	if l, ok := tx.(ChannelUserLocker); ok {
		// Two posts by one author racing in concurrent transactions: the
		// second waits here for the first to end, then sees its message.
		if err := l.LockChannelUser(ctx, c.ChannelID, authorID); err != nil {
			return err
		}
	}
	ms, err := tx.QueryMessages(ctx, MessageFilter{ChannelID: c.ChannelID, UserID: authorID, IncludeDeleted: true, Descending: true, Limit: 1})
	if err != nil || len(ms) == 0 {
		return err
	}
	window := time.Duration(c.RateLimitWindow) * time.Millisecond
	next := ms[0].CreatedAt.Add(window)
	if !now.Before(next) {
		return nil
	}
	wait := next.Sub(now)
	waitMs := int64((wait + time.Millisecond - 1) / time.Millisecond)
	secs := max(int((wait+time.Second-1)/time.Second), 1)
	return &Error{Code: CodeRateLimited,
		Message: fmt.Sprintf("channel %s is in slow mode (one message per %d ms): user %s may post again in %d ms",
			quote(c.ChannelID), c.RateLimitWindow, quote(authorID), waitMs),
		Detail: []any{map[string]any{"retryAfter": secs, "retryAfterMs": waitMs}}}
}

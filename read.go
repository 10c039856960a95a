package chat

import "context"

// MarkRead moves the acting user's read marker in a channel forward to
// segment (a channelSegment of the channel, 1 up to its messageCount), or
// to the channel's latest segment when segment is 0, and returns the
// channel with the actor's channelUser (readToSegment, unreadCount). A
// segment at or below the current marker changes nothing and returns the
// current marker: the marker never moves back. The actor must be a member.
// Errors: CodeBadRequest (segment negative or above the channel's latest),
// CodeNotFound, CodeForbidden (closed), CodePermissionDenied (not a
// member), CodeUserBanned.
func (s *Service) MarkRead(ctx context.Context, actorID, channelID string, segment int64) (*ChannelList, error) {
	if err := s.checkID("channelId", channelID); err != nil {
		return nil, err
	}
	if segment < 0 {
		return nil, invalid("segment", "must be a channelSegment (1 or more), or absent for the latest")
	}
	var out *ChannelList
	err := s.update(ctx, func(tx Tx, _ *events) error {
		c, err := openChannel(ctx, tx, channelID)
		if err != nil {
			return err
		}
		who, err := s.authorize(ctx, tx, actorID, actMarkRead, channelID)
		if err != nil {
			return err
		}
		cu := who.member
		to := segment
		if to == 0 {
			to = c.MessageCount
		} else if to > c.MessageCount {
			return invalid("segment", "is %d, above the latest segment of channel %s (%d)", to, quote(channelID), c.MessageCount)
		}
		if to > cu.ReadToSegment {
			if cu, err = tx.MarkRead(ctx, channelID, actorID, to); err != nil {
				return err
			}
		}
		out, err = s.channelList(ctx, tx, []*Channel{c}, []*ChannelUser{cu}, nil)
		return err
	})
	return out, err
}

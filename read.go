package chat

import "context"

// EventChannelDidMarkRead is the ephemeral event of Service.MarkRead when a
// read marker moves: like channel.didStartTyping it is published to the
// SubscribeEphemeral subscribers (of every process sharing a Postgres
// store, else of this process), never stored and never sent to webhooks, so it is not in EventNames. An event stream
// sends it to the streams of the user whose marker moved (its other tabs
// and devices) and to admins, never to the other members: their markers
// are read with GetChannel (readToSegment of each member), which is also
// how a client that may have missed the event catches up.
const EventChannelDidMarkRead = "channel.didMarkRead"

// MarkReadEventData is the data of channel.didMarkRead.
type MarkReadEventData struct {
	// ChannelID is the channel where the marker moved.
	ChannelID string `json:"channelId"`
	// UserID is the member whose marker moved.
	UserID string `json:"userId"`
	// ReadToSegment is the marker's new position.
	ReadToSegment int64 `json:"readToSegment"`
}

// MarkRead moves the acting user's read marker in a channel forward to
// segment (a channelSegment of the channel, 1 up to its messageCount), or
// to the channel's latest segment when segment is 0, and returns the
// channel with the actor's channelUser (readToSegment, unreadCount). A
// segment at or below the current marker changes nothing and returns the
// current marker: the marker never moves back. The actor must be a member.
// Errors: CodeBadRequest (segment negative or above the channel's latest),
// CodeNotFound, CodeForbidden (closed), CodePermissionDenied (not a
// member), CodeUserBanned.
//
// When the marker moves, the ephemeral event channel.didMarkRead
// {channelId, userId, readToSegment} is published after the commit.
func (s *Service) MarkRead(ctx context.Context, actorID, channelID string, segment int64) (*ChannelList, error) {
	if err := s.checkID("channelId", channelID); err != nil {
		return nil, err
	}
	if segment < 0 {
		return nil, invalid("segment", "must be a channelSegment (1 or more), or absent for the latest")
	}
	var out *ChannelList
	var moved int64 // the new marker, 0 when it did not move
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
		moved = 0 // a retried transaction starts again
		if to > cu.ReadToSegment {
			if cu, err = tx.MarkRead(ctx, channelID, actorID, to); err != nil {
				return err
			}
			moved = cu.ReadToSegment
		}
		out, err = s.channelList(ctx, tx, []*Channel{c}, []*ChannelUser{cu}, nil)
		return err
	})
	if err == nil && moved > 0 {
		ev := EphemeralEvent{
			Event:     EventChannelDidMarkRead,
			ChannelID: channelID,
			UserID:    actorID,
			Data:      mustJSON(MarkReadEventData{ChannelID: channelID, UserID: actorID, ReadToSegment: moved}),
			CreatedAt: NewTime(s.now()),
		}
		// The marker is stored; the event is a hint delivered at most
		// once, so a failure to send it is logged, not returned.
		if perr := s.emitEphemeral(ctx, ev); perr != nil {
			s.log.Warn("read marker event not sent", "channelId", channelID, "userId", actorID, "err", perr)
		}
	}
	return out, err
}

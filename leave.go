package chat

import "context"

// LeaveChannel removes the acting user's own membership of a channel
// (ext). It emits channel.didRemoveUsers with userIds [the user] and
// actorId the same user, as a removal does, so receivers that follow
// membership need nothing new; actorId equal to the removed user tells a
// leave from a removal. Leaving a channel one is not a member of is a
// no-op, as removing a non-member is, and a channel ban stays. Errors:
// CodeBadRequest, CodeNotFound, CodeForbidden (closed), CodeGlobalBanned.
func (s *Service) LeaveChannel(ctx context.Context, actorID, channelID string) error {
	if err := s.checkID("channelId", channelID); err != nil {
		return err
	}
	now := s.Now()
	return s.update(ctx, func(tx Tx, ev *events) error {
		if _, err := openChannel(ctx, tx, channelID); err != nil {
			return err
		}
		u, err := tx.GetUser(ctx, actorID)
		if ErrorCode(err) == CodeNotFound {
			return nil // a user that does not exist is a member of nothing
		}
		if err != nil {
			return err
		}
		if u.IsGlobalBan {
			return Errorf(CodeGlobalBanned, "user %s is globally banned", quote(actorID))
		}
		removed, err := deleteChannelUsers(ctx, tx, channelID, []string{actorID}, MembershipMember)
		if err != nil || len(removed) == 0 {
			return err
		}
		c, err := tx.GetChannel(ctx, channelID)
		if err != nil {
			return err
		}
		c.UpdatedAt = now
		if err := tx.UpdateChannel(ctx, c); err != nil {
			return err
		}
		presentChannel(c, now.Time)
		ev.add(EventChannelDidRemoveUsers, ChannelEventData{Channel: *c, UserIDs: removed, ActorID: actorID, Users: userValues([]*User{u})})
		return nil
	})
}

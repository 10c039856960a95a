package chat

import "context"

// checkMember is the right to act in a channel as one of its members
// (CONTRACT section 7: read state, typing): the channel exists (else
// CodeNotFound) and is open (else CodeForbidden), the acting user is not
// globally banned (CodeGlobalBanned), not banned from the channel
// (CodeUserBanned) and is a member (CodePermissionDenied), except that an
// admin passes without membership when allowAdmin is set. A user that
// does not exist yet is not a member.
func (s *Service) checkMember(ctx context.Context, tx Tx, actorID, channelID string, allowAdmin bool) error {
	if _, err := openChannel(ctx, tx, channelID); err != nil {
		return err
	}
	u, err := tx.GetUser(ctx, actorID)
	if err != nil && ErrorCode(err) != CodeNotFound {
		return err
	}
	if u != nil && u.IsGlobalBan {
		return Errorf(CodeGlobalBanned, "user %s is globally banned", quote(actorID))
	}
	cu, err := tx.GetChannelUser(ctx, channelID, actorID)
	if err != nil && ErrorCode(err) != CodeNotFound {
		return err
	}
	if cu != nil && cu.Membership == MembershipBanned {
		return Errorf(CodeUserBanned, "user %s is banned from channel %s", quote(actorID), quote(channelID))
	}
	if cu != nil && cu.Membership == MembershipMember {
		return nil
	}
	if allowAdmin && u != nil {
		_, admin, err := s.permissions(ctx, tx, u)
		if err != nil {
			return err
		}
		if admin {
			return nil
		}
	}
	return Errorf(CodePermissionDenied, "user %s is not a member of channel %s", quote(actorID), quote(channelID))
}

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
		c, err := openChannel(ctx, tx, channelID)
		if err != nil {
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
		if c, err = tx.GetChannel(ctx, channelID); err != nil {
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

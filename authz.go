package chat

import "context"

// Channel permissions (docs/api.md section 1 (Permissions of end users)). A role holding one grants it
// in every channel; admins (role global-admin) hold them all.
const (
	// PermManageChannel lets a user rename and update channels.
	PermManageChannel = "Channel/ManageChannel"
	// PermManageUsers lets a user add others to and remove others from
	// channels.
	PermManageUsers = "Channel/ManageUsers"
	// PermMuteChannel lets a user mute and unmute channels.
	PermMuteChannel = "Channel/MuteChannel"
	// PermMuteUser lets a user mute and unmute channel members.
	PermMuteUser = "Channel/MuteUser"
	// PermRateLimitChannel lets a user set a channel's slow mode.
	PermRateLimitChannel = "Channel/RateLimitChannel"
	// PermBanUser lets a user ban and unban users in channels.
	PermBanUser = "Channel/BanUser"
	// PermCloseChannel lets a user close channels.
	PermCloseChannel = "Channel/CloseChannel"
	// PermGlobalAccess lets a user read, post, react and flag in channels
	// where it is not a member.
	PermGlobalAccess = "Channel/GlobalAccess"
	// PermManageMessages lets a user delete the messages of others.
	PermManageMessages = "Channel/ManageMessages"
)

// action names one operation whose right the Service decides.
type action string

// The actions of the Service, one per operation a caller can ask for.
const (
	actQueryChannels    action = "channel.query"
	actGetChannel       action = "channel.get"
	actCreateChannel    action = "channel.create"
	actJoinChannel      action = "channel.join"
	actUpdateChannel    action = "channel.update"
	actAddUsers         action = "channel.addUsers"
	actRemoveUsers      action = "channel.removeUsers"
	actMuteChannel      action = "channel.mute"
	actMuteUsers        action = "channel.muteUsers"
	actRateLimit        action = "channel.rateLimit"
	actBanUsers         action = "channel.banUsers"
	actCloseChannel     action = "channel.close"
	actReadMessages     action = "message.read"
	actReadAllMessages  action = "message.readAll"
	actSearchMessages   action = "message.search"
	actPostMessage      action = "message.create"
	actEditMessage      action = "message.update"
	actDeleteMessage    action = "message.delete"
	actFlagMessage      action = "message.flag"
	actClearMsgFlags    action = "message.clearFlags"
	actReact            action = "reaction.add"
	actTyping           action = "channel.typing"
	actMarkRead         action = "channel.markRead"
	actQueryUsers       action = "user.query"
	actUpdateSelf       action = "user.updateSelf"
	actUpdateUser       action = "user.update"
	actFlagUser         action = "user.flag"
	actGlobalBan        action = "user.globalBan"
	actClearUserFlags   action = "user.clearFlags"
	actMintUserToken    action = "user.mintToken"
	actRevokeUserTokens action = "user.revokeTokens"
	actRoles            action = "role.manage"
	actRules            action = "rule.manage"
	actWebhooks         action = "webhook.manage"
	actAudit            action = "audit.query"
	actCheckMessage     action = "moderation.check"
	actPurgeMessages    action = "user.purgeMessages"
	actReportMessage    action = "report.message"
	actReportUser       action = "report.user"
	actReviewReports    action = "report.review"
	actExportUser       action = "user.export"
	actEraseUser        action = "user.erase"
	actBlockSelf        action = "user.blockSelf"
	actBlockOthers      action = "user.blockOthers"
	actOwnPush          action = "user.ownPush"
	actUserPush         action = "user.push"
	actChannelNotify    action = "channel.notifications"
	actOwnMentions      action = "message.ownMentions"
	actUserMentions     action = "message.userMentions"
)

// right is what an action needs from a caller who is not an admin.
type right struct {
	// adminOnly: only admins (role global-admin).
	adminOnly bool
	// perm: a permission one of the caller's roles must hold.
	perm string
	// member: membership of the channel, or PermGlobalAccess.
	member bool
	// ownRelation: the caller's own membership of the channel, admins
	// included, for calls that act on that relation (mark read).
	ownRelation bool
}

// rights is the permission table of docs/api.md section 1 (Permissions of end users). Admins may do
// everything; an action with the zero right is open to every user who is
// not globally banned. Ownership (editing and deleting one's own
// messages, updating oneself, adding or removing only oneself) is decided
// by the operation choosing the action: an author deleting its own message
// asks for actReadMessages, someone else's for actDeleteMessage.
var rights = map[action]right{
	actQueryChannels:    {},
	actGetChannel:       {},
	actCreateChannel:    {},
	actJoinChannel:      {},
	actUpdateChannel:    {perm: PermManageChannel},
	actAddUsers:         {perm: PermManageUsers},
	actRemoveUsers:      {perm: PermManageUsers},
	actMuteChannel:      {perm: PermMuteChannel},
	actMuteUsers:        {perm: PermMuteUser},
	actRateLimit:        {perm: PermRateLimitChannel},
	actBanUsers:         {perm: PermBanUser},
	actCloseChannel:     {perm: PermCloseChannel},
	actReadMessages:     {member: true},
	actReadAllMessages:  {perm: PermGlobalAccess},
	actSearchMessages:   {},
	actPostMessage:      {member: true},
	actEditMessage:      {adminOnly: true},
	actDeleteMessage:    {perm: PermManageMessages},
	actFlagMessage:      {member: true},
	actClearMsgFlags:    {adminOnly: true},
	actReact:            {member: true},
	actTyping:           {member: true},
	actMarkRead:         {ownRelation: true},
	actQueryUsers:       {},
	actUpdateSelf:       {},
	actUpdateUser:       {adminOnly: true},
	actFlagUser:         {},
	actGlobalBan:        {adminOnly: true},
	actClearUserFlags:   {adminOnly: true},
	actMintUserToken:    {adminOnly: true},
	actRevokeUserTokens: {adminOnly: true},
	actRoles:            {adminOnly: true},
	actRules:            {adminOnly: true},
	actWebhooks:         {adminOnly: true},
	actAudit:            {adminOnly: true},
	actCheckMessage:     {adminOnly: true},
	actPurgeMessages:    {adminOnly: true},
	actReportMessage:    {member: true},
	actReportUser:       {},
	actReviewReports:    {adminOnly: true},
	actExportUser:       {adminOnly: true},
	actEraseUser:        {adminOnly: true},
	actBlockSelf:        {},
	actBlockOthers:      {adminOnly: true},
	actOwnPush:          {},
	actUserPush:         {adminOnly: true},
	actChannelNotify:    {ownRelation: true},
	actOwnMentions:      {},
	actUserMentions:     {adminOnly: true},
}

// caller is an authorized actor: its user record (nil when the user does
// not exist yet), whether it is an admin, and its permissions.
type caller struct {
	id    string
	user  *User
	admin bool
	perms map[string]bool
	// member is the caller's membership of the channel the action was
	// authorized for (nil when there was none or it was not read).
	member *ChannelUser
}

// authorize decides whether actorID may perform act, on channelID when
// the action concerns a channel. It is the one place where rights are
// decided: a globally banned actor is refused every action
// (CodeGlobalBanned); an admin may do everything; anyone else needs what
// rights names, else CodePermissionDenied. For a membership action
// outside the caller's channels the answer is CodeNotFound when the
// channel does not exist. It reads only, so a refusal changes nothing.
func (s *Service) authorize(ctx context.Context, tx Tx, actorID string, act action, channelID string) (*caller, error) {
	if actorID == "" {
		return nil, Errorf(CodePermissionDenied, "no acting user")
	}
	u, err := tx.GetUser(ctx, actorID)
	if err != nil && ErrorCode(err) != CodeNotFound {
		return nil, err
	}
	return s.authorizeUser(ctx, tx, actorID, u, act, channelID)
}

// authorizeUser is authorize for a caller whose user record u the
// operation already read (nil when the user does not exist yet).
func (s *Service) authorizeUser(ctx context.Context, tx Tx, actorID string, u *User, act action, channelID string) (*caller, error) {
	r, ok := rights[act]
	if !ok {
		return nil, Errorf(CodeInternal, "no right is defined for %s", act)
	}
	if actorID == "" {
		return nil, Errorf(CodePermissionDenied, "no acting user")
	}
	c := &caller{id: actorID}
	if u != nil {
		var err error
		c.user = u
		if u.IsGlobalBan {
			return nil, &Error{Code: CodeGlobalBanned, Message: "user " + quote(actorID) + " is globally banned", Detail: []Detail{UserRef{UserID: actorID}}}
		}
		c.admin = hasRole(u.Roles, RoleGlobalAdmin)
		if !c.admin {
			if c.perms, _, err = s.permissions(ctx, tx, u); err != nil {
				return nil, err
			}
		}
	}
	if r.ownRelation {
		cu, err := tx.LockChannelUser(ctx, channelID, actorID)
		if err != nil && ErrorCode(err) != CodeNotFound {
			return nil, err
		}
		switch {
		case cu != nil && cu.Membership == MembershipMember:
			c.member = cu
			return c, nil
		case cu != nil && cu.Membership == MembershipBanned:
			return nil, &Error{Code: CodeUserBanned, Message: "user " + quote(actorID) + " is banned from channel " + quote(channelID), Detail: []Detail{UserRef{UserID: actorID}}}
		}
		return nil, &Error{Code: CodePermissionDenied, Message: "user " + quote(actorID) + " is not a member of channel " + quote(channelID), Detail: []Detail{UserRef{UserID: actorID}}}
	}
	if c.admin {
		return c, nil
	}
	deny := func(what string) error {
		return Errorf(CodePermissionDenied, "user %s may not %s", quote(actorID), what)
	}
	switch {
	case r.adminOnly:
		return nil, deny(describe(act) + ": admins only")
	case r.perm != "" && !c.perms[r.perm]:
		return nil, deny(describe(act) + " without the permission " + r.perm)
	case r.member:
		cu, err := tx.LockChannelUser(ctx, channelID, actorID)
		if err != nil && ErrorCode(err) != CodeNotFound {
			return nil, err
		}
		c.member = cu
		if cu != nil && cu.Membership == MembershipBanned {
			return nil, &Error{Code: CodeUserBanned, Message: "user " + quote(actorID) + " is banned from channel " + quote(channelID), Detail: []Detail{UserRef{UserID: actorID}}}
		}
		if cu != nil && cu.Membership == MembershipMember || c.perms[PermGlobalAccess] {
			return c, nil
		}
		if _, err := tx.GetChannel(ctx, channelID); err != nil {
			return nil, notFound(err, "channel", channelID)
		}
		return nil, deny(describe(act) + " in channel " + quote(channelID) + ", where it is not a member")
	}
	return c, nil
}

// describe says what an action does, for refusals.
func describe(act action) string {
	switch act {
	case actUpdateChannel:
		return "update channels"
	case actAddUsers:
		return "add others to channels"
	case actRemoveUsers:
		return "remove others from channels"
	case actMuteChannel:
		return "mute channels"
	case actMuteUsers:
		return "mute channel members"
	case actRateLimit:
		return "set slow mode"
	case actBanUsers:
		return "ban or unban users in channels"
	case actCloseChannel:
		return "close channels"
	case actReadMessages:
		return "read messages"
	case actReadAllMessages:
		return "read the messages of every channel (send channelId)"
	case actPostMessage:
		return "post"
	case actEditMessage:
		return "edit the messages of others"
	case actDeleteMessage:
		return "delete the messages of others"
	case actFlagMessage:
		return "flag messages"
	case actReact:
		return "react"
	case actClearMsgFlags, actClearUserFlags:
		return "clear flags"
	case actUpdateUser:
		return "change roles or the profiles of others"
	case actGlobalBan:
		return "ban users globally"
	case actMintUserToken:
		return "mint user tokens"
	case actRevokeUserTokens:
		return "revoke user tokens"
	case actRoles:
		return "manage roles"
	case actRules:
		return "manage the blacklist and whitelist"
	case actWebhooks:
		return "manage webhooks"
	case actAudit:
		return "read the audit log"
	case actCheckMessage:
		return "check messages against the moderation rules"
	case actPurgeMessages:
		return "purge the messages of users"
	case actReportMessage:
		return "report messages"
	case actReviewReports:
		return "review reports"
	case actExportUser:
		return "export the data of users"
	case actEraseUser:
		return "erase the data of users"
	case actBlockOthers:
		return "block or unblock for others, or list their blocks"
	case actUserPush:
		return "manage the devices or notification settings of others"
	case actUserMentions:
		return "list the mentions of others"
	}
	return string(act)
}

// allow authorizes act in a read-only transaction of its own, for
// operations whose work happens elsewhere (admin-only configuration).
func (s *Service) allow(ctx context.Context, actorID string, act action, channelID string) error {
	return s.view(ctx, func(tx Tx) error {
		_, err := s.authorize(ctx, tx, actorID, act, channelID)
		return err
	})
}

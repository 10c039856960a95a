package chat

import (
	"context"
	"math"
	"slices"
	"strings"
	"time"
)

// ChannelList is the response of channel reads and writes: the channels,
// the channelUsers that go with them and every user they reference.
type ChannelList struct {
	Channels     []Channel     `json:"channels"`
	ChannelUsers []ChannelUser `json:"channelUsers"`
	Users        []User        `json:"users"`
	Paging       *Paging       `json:"paging,omitempty"`
}

// CreateChannelInput is the input of Service.CreateChannel.
type CreateChannelInput struct {
	ChannelID   string
	Type        ChannelType // ChannelTypeStandard
	DisplayName string      // default: the channelId
	Metadata    map[string]any
	Tags        []string
	UserIDs     []string // initial members; the creator is not a member unless listed
	IsDistinct  bool
}

// present fills the derived fields of a channel at time now.
func presentChannel(c *Channel, now time.Time) {
	c.IsMuted = c.MuteTimeout != nil && c.MuteTimeout.After(now)
	if !c.IsMuted {
		c.MuteTimeout = nil
	}
	if c.Tags == nil {
		c.Tags = []string{}
	}
	if c.Metadata == nil {
		c.Metadata = map[string]any{}
	}
}

func presentChannelUser(cu *ChannelUser, now time.Time) {
	cu.IsMuted = cu.Membership == MembershipMember && cu.MuteTimeout != nil && cu.MuteTimeout.After(now)
	if !cu.IsMuted {
		cu.MuteTimeout = nil
	}
}

func presentUser(u *User) {
	if u.Roles == nil {
		u.Roles = []string{}
	}
	if u.Metadata == nil {
		u.Metadata = map[string]any{}
	}
	if u.Hashflag.Hash == nil {
		u.Hashflag.Hash = []uint32{}
	}
}

func userValues(us []*User) []User {
	out := make([]User, 0, len(us))
	for _, u := range us {
		presentUser(u)
		out = append(out, *u)
	}
	return out
}

// channelList assembles a response from store values, with the unread
// count of every channelUser.
func (s *Service) channelList(ctx context.Context, tx Tx, chs []*Channel, cus []*ChannelUser, extraUsers []string) (*ChannelList, error) {
	now := s.now()
	out := &ChannelList{Channels: make([]Channel, 0, len(chs)), ChannelUsers: make([]ChannelUser, 0, len(cus))}
	for _, c := range chs {
		presentChannel(c, now)
		out.Channels = append(out.Channels, *c)
	}
	unread, err := UnreadCounts(ctx, tx, cus)
	if err != nil {
		return nil, err
	}
	mentioned, err := tx.UnreadMentionCounts(ctx, cus)
	if err != nil {
		return nil, err
	}
	ids := append([]string(nil), extraUsers...)
	for i, cu := range cus {
		cu.UnreadCount = unread[i]
		if cu.Membership == MembershipMember {
			cu.UnreadMentionCount = mentioned[i]
		}
		presentChannelUser(cu, now)
		out.ChannelUsers = append(out.ChannelUsers, *cu)
		ids = append(ids, cu.UserID)
	}
	us, err := tx.GetUsers(ctx, dedupe(ids))
	if err != nil {
		return nil, err
	}
	out.Users = userValues(us)
	return out, nil
}

// openChannel returns a channel that exists and is not closed.
func openChannel(ctx context.Context, tx Tx, channelID string) (*Channel, error) {
	c, err := tx.LockChannel(ctx, channelID)
	if err != nil {
		return nil, notFound(err, "channel", channelID)
	}
	if c.IsClosed {
		return nil, Errorf(CodeForbidden, "channel %s is closed", quote(channelID))
	}
	return c, nil
}

// checkAddable rejects users that may not become members: banned in the
// channel (400304) or globally banned (400312).
func checkAddable(ctx context.Context, tx Tx, channelID string, users []*User) error {
	ids := make([]string, len(users))
	for i, u := range users {
		if u.IsGlobalBan {
			return &Error{Code: CodeGlobalBanned, Message: "user " + quote(u.UserID) + " is globally banned", Detail: []Detail{UserRef{UserID: u.UserID}}}
		}
		ids[i] = u.UserID
	}
	cus, err := tx.LockChannelUsers(ctx, channelID, ids)
	if err != nil {
		return err
	}
	for _, cu := range cus {
		if cu.Membership == MembershipBanned {
			return &Error{Code: CodeUserBanned, Message: "user " + quote(cu.UserID) + " is banned from channel " + quote(channelID), Detail: []Detail{UserRef{UserID: cu.UserID}}}
		}
	}
	return nil
}

// othersOrSelf returns act when ids name anyone but the actor, and
// actJoinChannel when the actor adds or removes only itself (as join and
// leave do).
func othersOrSelf(actorID string, ids []string, act action) action {
	for _, id := range ids {
		if id != actorID {
			return act
		}
	}
	return actJoinChannel
}

// addMembers makes users members; it returns those that were not members.
func addMembers(ctx context.Context, tx Tx, channelID string, ids []string, now Time) ([]string, error) {
	cus, err := tx.LockChannelUsers(ctx, channelID, ids)
	if err != nil {
		return nil, err
	}
	have := make(map[string]bool, len(cus))
	for _, cu := range cus {
		if cu.Membership == MembershipMember {
			have[cu.UserID] = true
		}
	}
	var added []string
	for _, id := range ids {
		if have[id] {
			continue
		}
		if err := tx.PutChannelUser(ctx, &ChannelUser{ChannelID: channelID, UserID: id, Membership: MembershipMember, CreatedAt: now, UpdatedAt: now}); err != nil {
			return nil, err
		}
		added = append(added, id)
	}
	return added, addMemberCount(ctx, tx, channelID, len(added))
}

// addMemberCount adds d to the channel's memberCount, the number of its
// relations with membership "member": callers pass how many their writes
// of relations added (or, negative, removed). The count is read from the
// channel's row held by LockChannel, so concurrent writers stay exact.
func addMemberCount(ctx context.Context, tx Tx, channelID string, d int) error {
	if d == 0 {
		return nil
	}
	c, err := tx.LockChannel(ctx, channelID)
	if err != nil {
		return err
	}
	return tx.SetMemberCount(ctx, channelID, c.MemberCount+d)
}

// CreateChannel creates a channel with its initial members (created on
// first reference). Emits channel.didCreate. Errors: CodeBadRequest
// (validation), CodeConflict (channelId used, also by a closed channel),
// CodeGlobalBanned (a member is globally banned), CodePermissionDenied (a
// user without Channel/ManageUsers names others in UserIDs).
func (s *Service) CreateChannel(ctx context.Context, actorID string, in CreateChannelInput) (*ChannelList, error) {
	if err := s.checkID("channelId", in.ChannelID); err != nil {
		return nil, err
	}
	if in.Type != ChannelTypeStandard {
		if in.Type == "" {
			return nil, invalid("type", "is required (standard)")
		}
		return nil, invalid("type", "must be standard")
	}
	if in.DisplayName == "" {
		in.DisplayName = in.ChannelID
	} else if err := s.checkDisplayName("displayName", in.DisplayName); err != nil {
		return nil, err
	}
	if err := s.checkObject("metadata", in.Metadata, s.lim.MaxMetadataBytes); err != nil {
		return nil, err
	}
	tags, err := s.checkTags("tags", in.Tags)
	if err != nil {
		return nil, err
	}
	members, err := s.checkIDs("userIds", in.UserIDs, false)
	if err != nil {
		return nil, err
	}
	now := s.Now()
	var out *ChannelList
	err = s.update(ctx, func(tx Tx, ev *events) error {
		cl, err := s.authorize(ctx, tx, actorID, actCreateChannel, "")
		if err != nil {
			return err
		}
		if othersOrSelf(actorID, members, actAddUsers) == actAddUsers {
			// Naming others adds them, as AddUsers would: the whole
			// request needs that right, before anything is created.
			if _, err := s.authorizeUser(ctx, tx, actorID, cl.user, actAddUsers, ""); err != nil {
				return err
			}
			if err := checkNotBlocked(ctx, tx, cl, actorID, members); err != nil {
				return err
			}
		}
		if !cl.admin && !slices.Contains(members, actorID) {
			// A user who creates a channel becomes a member; an admin
			// only when listed.
			members = append(members, actorID)
		}
		c := &Channel{ChannelID: in.ChannelID, Type: in.Type, DisplayName: in.DisplayName, IsDistinct: in.IsDistinct,
			Metadata: emptyMap(in.Metadata), Tags: emptyIfNil(tags), LastActivity: now, CreatedAt: now, UpdatedAt: now}
		if err := tx.CreateChannel(ctx, c); err != nil {
			if ErrorCode(err) == CodeConflict {
				return &Error{Code: CodeConflict, Message: "channelId " + quote(in.ChannelID) + " is already used", Detail: []Detail{FieldError{Field: "channelId"}}}
			}
			return err
		}
		users, err := tx.EnsureUsers(ctx, members, now.Time)
		if err != nil {
			return err
		}
		if err := checkAddable(ctx, tx, c.ChannelID, users); err != nil {
			return err
		}
		if _, err := addMembers(ctx, tx, c.ChannelID, members, now); err != nil {
			return err
		}
		if c, err = tx.LockChannel(ctx, c.ChannelID); err != nil {
			return err
		}
		cus, err := tx.LockChannelUsers(ctx, c.ChannelID, members)
		if err != nil {
			return err
		}
		if out, err = s.channelList(ctx, tx, []*Channel{c}, cus, nil); err != nil {
			return err
		}
		ev.add(EventChannelDidCreate, ChannelEventData{Channel: out.Channels[0], UserIDs: emptyIfNil(members), Users: out.Users})
		return nil
	})
	return out, err
}

// GetChannel reads one channel (closed ones too) with all its channelUsers
// (members and banned users). Errors: CodeBadRequest, CodeNotFound.
func (s *Service) GetChannel(ctx context.Context, actorID, channelID string) (*ChannelList, error) {
	if err := s.checkID("channelId", channelID); err != nil {
		return nil, err
	}
	var out *ChannelList
	err := s.view(ctx, func(tx Tx) error {
		if _, err := s.authorize(ctx, tx, actorID, actGetChannel, ""); err != nil {
			return err
		}
		c, err := tx.GetChannel(ctx, channelID)
		if err != nil {
			return notFound(err, "channel", channelID)
		}
		cus, err := tx.GetChannelUsers(ctx, channelID, nil)
		if err != nil {
			return err
		}
		out, err = s.channelList(ctx, tx, []*Channel{c}, cus, nil)
		return err
	})
	return out, err
}

// ChannelMembershipFilter selects channels by the acting admin's
// membership in a ChannelQuery.
type ChannelMembershipFilter string

// The filters of a ChannelQuery. The zero value is ChannelsAll.
const (
	ChannelsAll       ChannelMembershipFilter = "all"
	ChannelsMember    ChannelMembershipFilter = "member"
	ChannelsNotMember ChannelMembershipFilter = "notMember"
)

// ChannelQuery selects channels, newest first. Filter is relative to the
// acting admin's user; UserID keeps channels that user is a member of;
// Tags keeps channels with any of them, ExcludeTags drops channels with
// any of them; closed channels only with IncludeClosed. Skip applies to
// the first page; Token continues a query.
type ChannelQuery struct {
	Filter        ChannelMembershipFilter
	UserID        string
	Tags          []string
	ExcludeTags   []string
	IncludeClosed bool
	// Search keeps the channels whose channelId, or any word of whose
	// displayName (and the rest of the name from that word), begins with
	// it, compared case-insensitively: the user search's matching (see
	// NameKeys and MatchChannel). Empty: every channel.
	Search string
	Skip   int
	Limit  int
	Token  string
}

// QueryChannels lists channels with the acting admin's channelUsers.
// Errors: CodeBadRequest (bad filter, limit, skip or token).
func (s *Service) QueryChannels(ctx context.Context, actorID string, q ChannelQuery) (*ChannelList, error) {
	if len(q.Search) > s.lim.MaxIDBytes {
		return nil, invalid("search", "must be at most %d bytes", s.lim.MaxIDBytes)
	}
	if err := checkText("search", q.Search); err != nil {
		return nil, err
	}
	key := ""
	if q.Search != "" {
		key = SearchKey(q.Search)
	}
	f := ChannelFilter{Tags: q.Tags, ExcludeTags: q.ExcludeTags, IncludeClosed: q.IncludeClosed, Search: key}
	switch q.Filter {
	case "", ChannelsAll:
	case ChannelsMember:
		f.MemberOf = actorID
	case ChannelsNotMember:
		f.NotMemberOf = actorID
	default:
		return nil, invalid("filter", "must be all, member or notMember")
	}
	if q.UserID != "" {
		if err := s.checkID("userId", q.UserID); err != nil {
			return nil, err
		}
		if f.MemberOf != "" && f.MemberOf != q.UserID {
			return nil, invalid("userId", "cannot be combined with filter=member for another user")
		}
		f.MemberOf = q.UserID
		if f.NotMemberOf == q.UserID {
			return nil, invalid("userId", "contradicts filter=notMember")
		}
	}
	if err := s.checkFilterTags("tags", q.Tags); err != nil {
		return nil, err
	}
	if err := s.checkFilterTags("excludeTags", q.ExcludeTags); err != nil {
		return nil, err
	}
	if q.Skip < 0 {
		return nil, invalid("options.skip", "must not be negative")
	}
	limit, err := s.pageSize("options.limit", q.Limit, s.lim.DefaultPage)
	if err != nil {
		return nil, err
	}
	incl := "0"
	if q.IncludeClosed {
		incl = "1"
	}
	qh := queryHash(string(q.Filter), actorID, q.UserID, joinList(q.Tags), joinList(q.ExcludeTags), incl, key)
	var tok *pageToken
	if q.Token != "" {
		if tok, err = s.decodeToken("options.token", q.Token, "channels", qh); err != nil {
			return nil, err
		}
		cur := &ChannelCursor{CreatedAt: time.UnixMilli(tok.T).UTC(), ChannelID: tok.ID}
		if tok.D == "n" {
			f.After = cur
		} else {
			f.Before = cur
		}
		if q.Limit == 0 && tok.L > 0 {
			limit = tok.L
		}
	} else {
		f.Offset = q.Skip
	}
	f.Limit = limit + 1
	var out *ChannelList
	err = s.view(ctx, func(tx Tx) error {
		cl, err := s.authorize(ctx, tx, actorID, actQueryChannels, "")
		if err != nil {
			return err
		}
		if q.IncludeClosed && !cl.admin {
			return Errorf(CodePermissionDenied, "includeClosed: closed channels are listed for admins only")
		}
		chs, err := tx.QueryChannels(ctx, f)
		if err != nil {
			return err
		}
		more := len(chs) > limit
		if more {
			chs = chs[:limit]
		}
		if f.Before != nil {
			reverse(chs)
		}
		ids := make([]string, len(chs))
		for i, c := range chs {
			ids[i] = c.ChannelID
		}
		var cus []*ChannelUser
		if actorID != "" && len(ids) > 0 {
			if cus, err = tx.ListMemberships(ctx, actorID, ids); err != nil {
				return err
			}
		}
		if out, err = s.channelList(ctx, tx, chs, cus, nil); err != nil {
			return err
		}
		out.Paging = &Paging{}
		if len(chs) > 0 {
			first, last := chs[0], chs[len(chs)-1]
			if (tok == nil || tok.D == "n") && more || tok != nil && tok.D == "p" {
				out.Paging.Next = s.encodeToken(pageToken{K: "channels", Q: qh, D: "n", T: last.CreatedAt.UnixMilli(), ID: last.ChannelID, L: limit})
			}
			if tok != nil && (tok.D == "n" || more) || tok == nil && q.Skip > 0 {
				out.Paging.Previous = s.encodeToken(pageToken{K: "channels", Q: qh, D: "p", T: first.CreatedAt.UnixMilli(), ID: first.ChannelID, L: limit})
			}
		}
		return nil
	})
	return out, err
}

// RenameChannel changes a channel's displayName. Emits channel.didUpdate.
// Errors: CodeBadRequest, CodeNotFound, CodeForbidden (closed).
func (s *Service) RenameChannel(ctx context.Context, actorID, channelID, displayName string) (*ChannelList, error) {
	if err := s.checkID("channelId", channelID); err != nil {
		return nil, err
	}
	if err := s.checkDisplayName("displayName", displayName); err != nil {
		return nil, err
	}
	return s.changeChannel(ctx, actorID, actUpdateChannel, channelID, func(c *Channel) bool {
		c.DisplayName = displayName
		return true
	})
}

// changeChannel applies change to an open channel and, when change
// reports a difference, stores it with updatedAt now and emits
// channel.didUpdate; it returns the channel.
func (s *Service) changeChannel(ctx context.Context, actorID string, act action, channelID string, change func(c *Channel) bool) (*ChannelList, error) {
	now := s.Now()
	var out *ChannelList
	err := s.update(ctx, func(tx Tx, ev *events) error {
		if _, err := s.authorize(ctx, tx, actorID, act, channelID); err != nil {
			return err
		}
		c, err := openChannel(ctx, tx, channelID)
		if err != nil {
			return err
		}
		changed := change(c)
		if changed {
			c.UpdatedAt = now
			if err := tx.UpdateChannel(ctx, c); err != nil {
				return err
			}
		}
		if act == actRateLimit {
			if err := s.audit(ctx, tx, actorID, AuditChannelRateLimit, AuditTargetChannel, channelID, channelID,
				map[string]any{"rateLimitWindow": c.RateLimitWindow}); err != nil {
				return err
			}
		}
		if out, err = s.channelList(ctx, tx, []*Channel{c}, nil, nil); err != nil {
			return err
		}
		if changed {
			ev.add(EventChannelDidUpdate, ChannelEventData{Channel: out.Channels[0], UserIDs: []string{}, ActorID: actorID, Users: []User{}})
		}
		return nil
	})
	return out, err
}

// AddUsers adds members (created on first reference); existing members
// are a no-op. The whole request is rejected when any user is banned from
// the channel (CodeUserBanned) or globally (CodeGlobalBanned). Emits
// channel.didAddUsers when anyone was added. Errors also: CodeBadRequest,
// CodeNotFound, CodeForbidden (closed).
func (s *Service) AddUsers(ctx context.Context, actorID, channelID string, userIDs []string) (*ChannelList, error) {
	if err := s.checkID("channelId", channelID); err != nil {
		return nil, err
	}
	ids, err := s.checkIDs("userIds", userIDs, true)
	if err != nil {
		return nil, err
	}
	now := s.Now()
	var out *ChannelList
	err = s.update(ctx, func(tx Tx, ev *events) error {
		cl, err := s.authorize(ctx, tx, actorID, othersOrSelf(actorID, ids, actAddUsers), channelID)
		if err != nil {
			return err
		}
		if _, err := openChannel(ctx, tx, channelID); err != nil {
			return err
		}
		if err := checkNotBlocked(ctx, tx, cl, actorID, ids); err != nil {
			return err
		}
		users, err := tx.EnsureUsers(ctx, ids, now.Time)
		if err != nil {
			return err
		}
		if err := checkAddable(ctx, tx, channelID, users); err != nil {
			return err
		}
		added, err := addMembers(ctx, tx, channelID, ids, now)
		if err != nil {
			return err
		}
		c, err := tx.LockChannel(ctx, channelID)
		if err != nil {
			return err
		}
		if len(added) > 0 {
			c.UpdatedAt = now
			if err := tx.UpdateChannel(ctx, c); err != nil {
				return err
			}
		}
		cus, err := tx.LockChannelUsers(ctx, channelID, ids)
		if err != nil {
			return err
		}
		if out, err = s.channelList(ctx, tx, []*Channel{c}, cus, nil); err != nil {
			return err
		}
		if len(added) > 0 {
			us, err := tx.GetUsers(ctx, dedupe(append(append([]string{}, added...), actorID)))
			if err != nil {
				return err
			}
			ev.add(EventChannelDidAddUsers, ChannelEventData{Channel: out.Channels[0], UserIDs: added, AdderID: actorID, Users: userValues(us)})
		}
		return nil
	})
	return out, err
}

// deleteChannelUsers deletes the channel-user rows of ids whose
// membership is m (members for a removal, bans for an unban) and returns
// their user ids in the order the store gave them.
func deleteChannelUsers(ctx context.Context, tx Tx, channelID string, ids []string, m Membership) ([]string, error) {
	cus, err := tx.LockChannelUsers(ctx, channelID, ids)
	if err != nil {
		return nil, err
	}
	var deleted []string
	for _, cu := range cus {
		if cu.Membership != m {
			continue
		}
		if err := tx.DeleteChannelUser(ctx, channelID, cu.UserID); err != nil {
			return nil, err
		}
		deleted = append(deleted, cu.UserID)
	}
	if m != MembershipMember {
		return deleted, nil
	}
	return deleted, addMemberCount(ctx, tx, channelID, -len(deleted))
}

// RemoveUsers removes members; non-members are a no-op and bans stay.
// Emits channel.didRemoveUsers when anyone was removed. Errors:
// CodeBadRequest, CodeNotFound, CodeForbidden (closed).
func (s *Service) RemoveUsers(ctx context.Context, actorID, channelID string, userIDs []string) error {
	if err := s.checkID("channelId", channelID); err != nil {
		return err
	}
	ids, err := s.checkIDs("userIds", userIDs, true)
	if err != nil {
		return err
	}
	now := s.Now()
	return s.update(ctx, func(tx Tx, ev *events) error {
		if _, err := s.authorize(ctx, tx, actorID, othersOrSelf(actorID, ids, actRemoveUsers), channelID); err != nil {
			return err
		}
		if _, err := openChannel(ctx, tx, channelID); err != nil {
			return err
		}
		removed, err := deleteChannelUsers(ctx, tx, channelID, ids, MembershipMember)
		if err != nil {
			return err
		}
		al := s.newAudit(now)
		for _, id := range removed {
			if id != actorID {
				al.add(actorID, AuditChannelRemoveUsers, AuditTargetUser, id, channelID, nil)
			}
		}
		if err := al.write(ctx, tx); err != nil {
			return err
		}
		if len(removed) == 0 {
			return nil
		}
		c, err := touchChannel(ctx, tx, channelID, now)
		if err != nil {
			return err
		}
		us, err := tx.GetUsers(ctx, removed)
		if err != nil {
			return err
		}
		presentChannel(c, now.Time)
		ev.add(EventChannelDidRemoveUsers, ChannelEventData{Channel: *c, UserIDs: removed, ActorID: actorID, Users: userValues(us)})
		return nil
	})
}

// JoinChannel makes the acting admin's user a member. Emits
// channel.didJoin when it was not a member. Errors: CodeBadRequest,
// CodeNotFound, CodeForbidden (closed), CodeUserBanned, CodeGlobalBanned.
func (s *Service) JoinChannel(ctx context.Context, actorID, channelID string) (*ChannelList, error) {
	if err := s.checkID("channelId", channelID); err != nil {
		return nil, err
	}
	now := s.Now()
	var out *ChannelList
	err := s.update(ctx, func(tx Tx, ev *events) error {
		if _, err := s.authorize(ctx, tx, actorID, actJoinChannel, channelID); err != nil {
			return err
		}
		if _, err := openChannel(ctx, tx, channelID); err != nil {
			return err
		}
		users, err := tx.EnsureUsers(ctx, []string{actorID}, now.Time)
		if err != nil {
			return err
		}
		if err := checkAddable(ctx, tx, channelID, users); err != nil {
			return err
		}
		added, err := addMembers(ctx, tx, channelID, []string{actorID}, now)
		if err != nil {
			return err
		}
		c, err := tx.LockChannel(ctx, channelID)
		if err != nil {
			return err
		}
		cus, err := tx.LockChannelUsers(ctx, channelID, []string{actorID})
		if err != nil {
			return err
		}
		if out, err = s.channelList(ctx, tx, []*Channel{c}, cus, nil); err != nil {
			return err
		}
		if len(added) > 0 {
			ev.add(EventChannelDidJoin, ChannelEventData{Channel: out.Channels[0], UserIDs: added, Users: out.Users})
		}
		return nil
	})
	return out, err
}

// The mute periods of MuteChannel and MuteUsers that are not a length of
// time. Any other positive time.Duration mutes for that long.
const (
	// Unmute lifts a mute (mutePeriod 0 on the wire).
	Unmute time.Duration = 0
	// MuteForever mutes until unmuted: muteTimeout becomes Forever
	// (mutePeriod -1 on the wire). It is the longest time.Duration.
	MuteForever time.Duration = math.MaxInt64
)

// muteUntil turns a mute period into a muteTimeout and the mutePeriod of
// the event (milliseconds, rounded up; -1 forever): > 0 now + period,
// Unmute nil, MuteForever Forever; negatives are CodeBadRequest.
func muteUntil(now Time, d time.Duration) (*Time, int64, error) {
	switch {
	case d == Unmute:
		return nil, 0, nil
	case d == MuteForever:
		f := Forever
		return &f, -1, nil
	case d < 0:
		return nil, 0, invalid("mutePeriod", "must be -1 (forever), 0 (unmute) or a positive number of milliseconds")
	}
	ms := int64((d + time.Millisecond - 1) / time.Millisecond)
	if ms > int64(Forever.Sub(now.Time)/time.Millisecond) {
		f := Forever
		return &f, ms, nil
	}
	t := NewTime(now.Add(time.Duration(ms) * time.Millisecond))
	return &t, ms, nil
}

// MuteChannel mutes a channel for d (rounded up to whole milliseconds),
// or until unmuted with MuteForever, or unmutes it with Unmute. A mute
// expires by time alone. Emits channel.didMute; unmuting a muted channel
// also emits channel.didUnmute (reason "manual"), and a mute that had
// ended by time and was not announced yet is announced first
// (channel.didUnmute, reason "expired"; see ExpireMutes). Errors:
// CodeBadRequest (d negative, naming mutePeriod), CodeNotFound,
// CodeForbidden (closed).
func (s *Service) MuteChannel(ctx context.Context, actorID, channelID string, d time.Duration) error {
	if err := s.checkID("channelId", channelID); err != nil {
		return err
	}
	now := s.Now()
	until, period, err := muteUntil(now, d)
	if err != nil {
		return err
	}
	err = s.update(ctx, func(tx Tx, ev *events) error {
		if _, err := s.authorize(ctx, tx, actorID, actMuteChannel, channelID); err != nil {
			return err
		}
		c, err := openChannel(ctx, tx, channelID)
		if err != nil {
			return err
		}
		was := muteState(c.MuteTimeout, now)
		c.MuteTimeout = until
		c.UpdatedAt = now
		if err := tx.UpdateChannel(ctx, c); err != nil {
			return err
		}
		action, details := AuditChannelUnmute, map[string]any{}
		if until != nil {
			action, details = AuditChannelMute, map[string]any{"mutePeriod": period}
		}
		if err := s.audit(ctx, tx, actorID, action, AuditTargetChannel, channelID, channelID, details); err != nil {
			return err
		}
		if was == muteLapsed {
			ended := *c
			ended.MuteTimeout = nil
			presentChannel(&ended, now.Time)
			ev.add(EventChannelDidUnmute, ChannelEventData{Channel: ended, UserIDs: []string{}, Reason: UnmuteExpired, Users: []User{}})
		}
		presentChannel(c, now.Time)
		p := period
		ev.add(EventChannelDidMute, ChannelEventData{Channel: *c, UserIDs: []string{}, ActorID: actorID, MutePeriod: &p, Users: []User{}})
		if was == muteActive && until == nil {
			ev.add(EventChannelDidUnmute, ChannelEventData{Channel: *c, UserIDs: []string{}, ActorID: actorID, Reason: UnmuteManual, Users: []User{}})
		}
		return nil
	})
	if err == nil && until != nil {
		s.muteWritten()
	}
	return err
}

// The states of a mute at a moment: none, running, or ended by time but
// not announced yet (MuteTimeout set and not after the moment).
const (
	muteNone = iota
	muteActive
	muteLapsed
)

func muteState(timeout *Time, now Time) int {
	switch {
	case timeout == nil:
		return muteNone
	case timeout.After(now.Time):
		return muteActive
	}
	return muteLapsed
}

// MuteUsers mutes or unmutes members of a channel (d as in
// MuteChannel). Users who are not members are CodeBadRequest with a
// FieldError naming them. Emits channel.didMute with the userIds; unmuting
// members who were muted also emits channel.didUnmuteUsers naming them
// (reason "manual"), and mutes of these members that had ended by time and
// were not announced yet are announced first (channel.didUnmuteUsers,
// reason "expired"). Errors also: CodeNotFound, CodeForbidden (closed).
func (s *Service) MuteUsers(ctx context.Context, actorID, channelID string, userIDs []string, d time.Duration) error {
	if err := s.checkID("channelId", channelID); err != nil {
		return err
	}
	ids, err := s.checkIDs("userIds", userIDs, true)
	if err != nil {
		return err
	}
	now := s.Now()
	until, period, err := muteUntil(now, d)
	if err != nil {
		return err
	}
	err = s.update(ctx, func(tx Tx, ev *events) error {
		if _, err := s.authorize(ctx, tx, actorID, actMuteUsers, channelID); err != nil {
			return err
		}
		c, err := openChannel(ctx, tx, channelID)
		if err != nil {
			return err
		}
		cus, err := tx.LockChannelUsers(ctx, channelID, ids)
		if err != nil {
			return err
		}
		members := map[string]*ChannelUser{}
		for _, cu := range cus {
			if cu.Membership == MembershipMember {
				members[cu.UserID] = cu
			}
		}
		var missing []string
		for _, id := range ids {
			if members[id] == nil {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			e := invalid("userIds", "not members of channel %s: %s", quote(channelID), strings.Join(missing, ", "))
			e.Detail = []Detail{FieldError{Field: "userIds", UserIDs: missing}}
			return e
		}
		var lapsed, lifted []string
		al := s.newAudit(now)
		for _, id := range ids {
			cu := members[id]
			switch muteState(cu.MuteTimeout, now) {
			case muteLapsed:
				lapsed = append(lapsed, id)
			case muteActive:
				if until == nil {
					lifted = append(lifted, id)
				}
			}
			cu.MuteTimeout = until
			cu.UpdatedAt = now
			if err := tx.PutChannelUser(ctx, cu); err != nil {
				return err
			}
			if until != nil {
				al.add(actorID, AuditChannelMuteUsers, AuditTargetUser, id, channelID, map[string]any{"mutePeriod": period})
			} else {
				al.add(actorID, AuditChannelUnmuteUsers, AuditTargetUser, id, channelID, nil)
			}
		}
		if err := al.write(ctx, tx); err != nil {
			return err
		}
		us, err := tx.GetUsers(ctx, ids)
		if err != nil {
			return err
		}
		byID := make(map[string]*User, len(us))
		for _, u := range us {
			byID[u.UserID] = u
		}
		some := func(ids []string) []User {
			var out []*User
			for _, id := range ids {
				if u := byID[id]; u != nil {
					out = append(out, u)
				}
			}
			return userValues(out)
		}
		presentChannel(c, now.Time)
		if len(lapsed) > 0 {
			ev.add(EventChannelDidUnmuteUsers, ChannelEventData{Channel: *c, UserIDs: lapsed, Reason: UnmuteExpired, Users: some(lapsed)})
		}
		p := period
		ev.add(EventChannelDidMute, ChannelEventData{Channel: *c, UserIDs: ids, ActorID: actorID, MutePeriod: &p, Users: userValues(us)})
		if len(lifted) > 0 {
			ev.add(EventChannelDidUnmuteUsers, ChannelEventData{Channel: *c, UserIDs: lifted, ActorID: actorID, Reason: UnmuteManual, Users: some(lifted)})
		}
		return nil
	})
	if err == nil && until != nil {
		s.muteWritten()
	}
	return err
}

// BanUsers bans users from a channel: their membership goes, all their
// messages there are soft-deleted (files purged) and they cannot be
// re-added until unbanned. Idempotent; banning a non-member works (the user
// is created on first reference). Emits channel.didBanUsers. Errors:
// CodeBadRequest, CodeNotFound, CodeForbidden (closed).
func (s *Service) BanUsers(ctx context.Context, actorID, channelID string, userIDs []string) error {
	if err := s.checkID("channelId", channelID); err != nil {
		return err
	}
	ids, err := s.checkIDs("userIds", userIDs, true)
	if err != nil {
		return err
	}
	now := s.Now()
	return s.update(ctx, func(tx Tx, ev *events) error {
		if _, err := s.authorize(ctx, tx, actorID, actBanUsers, channelID); err != nil {
			return err
		}
		if _, err := openChannel(ctx, tx, channelID); err != nil {
			return err
		}
		users, err := tx.EnsureUsers(ctx, ids, now.Time)
		if err != nil {
			return err
		}
		cus, err := tx.LockChannelUsers(ctx, channelID, ids)
		if err != nil {
			return err
		}
		rel := map[string]*ChannelUser{}
		for _, cu := range cus {
			rel[cu.UserID] = cu
		}
		al := s.newAudit(now)
		left := 0
		for _, id := range ids {
			msgs, err := tx.SoftDeleteMessages(ctx, channelID, id, now.Time)
			if err != nil {
				return err
			}
			al.add(actorID, AuditChannelBanUsers, AuditTargetUser, id, channelID, map[string]any{"deletedMessages": len(msgs)})
			for _, m := range msgs {
				if err := tx.DeleteBlobs(ctx, m); err != nil {
					return err
				}
			}
			cu := rel[id]
			if cu != nil && cu.Membership == MembershipBanned {
				continue
			}
			created := now
			if cu != nil {
				created = cu.CreatedAt
			}
			if cu != nil && cu.Membership == MembershipMember {
				left++
			}
			if err := tx.PutChannelUser(ctx, &ChannelUser{ChannelID: channelID, UserID: id, Membership: MembershipBanned, CreatedAt: created, UpdatedAt: now}); err != nil {
				return err
			}
		}
		if err := addMemberCount(ctx, tx, channelID, -left); err != nil {
			return err
		}
		if err := al.write(ctx, tx); err != nil {
			return err
		}
		c, err := touchChannel(ctx, tx, channelID, now)
		if err != nil {
			return err
		}
		presentChannel(c, now.Time)
		ev.add(EventChannelDidBanUsers, ChannelEventData{Channel: *c, UserIDs: ids, ActorID: actorID, Users: userValues(users)})
		return nil
	})
}

// UnbanUsers lifts channel bans (users are not re-added). Idempotent.
// Emits channel.didUnbanUsers for the users that were banned. Errors:
// CodeBadRequest, CodeNotFound, CodeForbidden (closed).
func (s *Service) UnbanUsers(ctx context.Context, actorID, channelID string, userIDs []string) error {
	if err := s.checkID("channelId", channelID); err != nil {
		return err
	}
	ids, err := s.checkIDs("userIds", userIDs, true)
	if err != nil {
		return err
	}
	now := s.Now()
	return s.update(ctx, func(tx Tx, ev *events) error {
		if _, err := s.authorize(ctx, tx, actorID, actBanUsers, channelID); err != nil {
			return err
		}
		c, err := openChannel(ctx, tx, channelID)
		if err != nil {
			return err
		}
		unbanned, err := deleteChannelUsers(ctx, tx, channelID, ids, MembershipBanned)
		if err != nil {
			return err
		}
		al := s.newAudit(now)
		for _, id := range ids {
			al.add(actorID, AuditChannelUnbanUsers, AuditTargetUser, id, channelID, nil)
		}
		if err := al.write(ctx, tx); err != nil {
			return err
		}
		if len(unbanned) == 0 {
			return nil
		}
		us, err := tx.GetUsers(ctx, unbanned)
		if err != nil {
			return err
		}
		presentChannel(c, now.Time)
		ev.add(EventChannelDidUnbanUsers, ChannelEventData{Channel: *c, UserIDs: unbanned, ActorID: actorID, Users: userValues(us)})
		return nil
	})
}

// CloseChannel closes a channel for good, in one transaction: every
// membership (and ban) goes, every message is soft-deleted and its files
// purged, isClosed becomes true. Closing again is a no-op. Emits
// channel.didClose. Errors: CodeBadRequest, CodeNotFound.
func (s *Service) CloseChannel(ctx context.Context, actorID, channelID string) error {
	if err := s.checkID("channelId", channelID); err != nil {
		return err
	}
	now := s.Now()
	return s.update(ctx, func(tx Tx, ev *events) error {
		if _, err := s.authorize(ctx, tx, actorID, actCloseChannel, channelID); err != nil {
			return err
		}
		c, err := tx.LockChannel(ctx, channelID)
		if err != nil {
			return notFound(err, "channel", channelID)
		}
		if err := s.audit(ctx, tx, actorID, AuditChannelClose, AuditTargetChannel, channelID, channelID, nil); err != nil {
			return err
		}
		if c.IsClosed {
			return nil
		}
		cus, err := tx.LockChannelUsers(ctx, channelID, nil)
		if err != nil {
			return err
		}
		var members []string
		for _, cu := range cus {
			if cu.Membership == MembershipMember {
				members = append(members, cu.UserID)
			}
		}
		if err := tx.DeleteChannelUsers(ctx, channelID); err != nil {
			return err
		}
		if err := tx.SetMemberCount(ctx, channelID, 0); err != nil {
			return err
		}
		if _, err := tx.SoftDeleteMessages(ctx, channelID, "", now.Time); err != nil {
			return err
		}
		if err := tx.DeleteChannelBlobs(ctx, channelID); err != nil {
			return err
		}
		c.IsClosed = true
		c.MuteTimeout = nil
		c.UpdatedAt = now
		if err := tx.UpdateChannel(ctx, c); err != nil {
			return err
		}
		c.MemberCount = 0
		presentChannel(c, now.Time)
		ev.add(EventChannelDidClose, closedChannelData{
			ChannelEventData: ChannelEventData{Channel: *c, UserIDs: []string{}, ActorID: actorID, Users: []User{}},
			members:          members,
		})
		return nil
	})
}

// touchChannel reads a channel in tx and stores it with updatedAt now: a
// change to its members or bans changes the channel's updatedAt.
func touchChannel(ctx context.Context, tx Tx, channelID string, now Time) (*Channel, error) {
	c, err := tx.LockChannel(ctx, channelID)
	if err != nil {
		return nil, err
	}
	c.UpdatedAt = now
	if err := tx.UpdateChannel(ctx, c); err != nil {
		return nil, err
	}
	return c, nil
}

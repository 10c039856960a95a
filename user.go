package chat

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
)

// UserList is the response of user reads and updates.
type UserList struct {
	Users  []User  `json:"users"`
	Paging *Paging `json:"paging,omitempty"`
}

// UserFlagFilter selects users by their flags in a UserQuery.
type UserFlagFilter string

// The filters of a UserQuery. The zero value is UsersAll.
const (
	UsersAll     UserFlagFilter = "all"
	UsersFlagged UserFlagFilter = "flagged"
)

// UserQuery selects users. Search matches a case-insensitive prefix of
// any word of the displayName (and of the rest of the name from that word:
// "zebra k" finds "The Zebra Keeper") or of the whole userId (see
// NameKeys); Filter keeps every user (UsersAll, the default)
// or the flagged ones. Users are ordered by userId.
type UserQuery struct {
	Search    string
	Filter    UserFlagFilter
	PageToken string
	Limit     int
}

// QueryUsers lists users. Errors: CodeBadRequest (bad filter, limit or
// page token).
func (s *Service) QueryUsers(ctx context.Context, actorID string, q UserQuery) (*UserList, error) {
	if err := s.allow(ctx, actorID, actQueryUsers, ""); err != nil {
		return nil, err
	}
	switch q.Filter {
	case "", UsersAll, UsersFlagged:
	default:
		return nil, invalid("filter", "must be all or flagged")
	}
	if len(q.Search) > s.lim.MaxIDBytes {
		return nil, invalid("search", "must be at most %d bytes", s.lim.MaxIDBytes)
	}
	if err := checkText("search", q.Search); err != nil {
		return nil, err
	}
	limit, err := s.pageSize("limit", q.Limit, s.lim.DefaultPage)
	if err != nil {
		return nil, err
	}
	flagged := q.Filter == UsersFlagged
	key := SearchKey(q.Search)
	qh := queryHash(key, string(q.Filter))
	f := UserFilter{Search: key, Flagged: flagged, Limit: limit + 1}
	tok, _, err := s.openPage("pageToken", q.PageToken, "users", qh, q.Limit, limit)
	if err != nil {
		return nil, err
	}
	if tok != nil {
		f.After, f.Before = place(tok, &UserCursor{UserID: tok.ID})
	}
	var us []*User
	if err := s.view(ctx, func(tx Tx) error {
		var err error
		us, err = tx.QueryUsers(ctx, f)
		return err
	}); err != nil {
		return nil, err
	}
	more := len(us) > limit
	if more {
		us = us[:limit]
	}
	if f.Before != nil {
		reverse(us)
	}
	out := &UserList{Users: make([]User, 0, len(us)), Paging: &Paging{}}
	for _, u := range us {
		presentUser(u)
		out.Users = append(out.Users, *u)
	}
	if len(us) > 0 {
		first, last := us[0].UserID, us[len(us)-1].UserID
		s.setLinks(out.Paging, tok, more, pageToken{K: "users", Q: qh, ID: first}, pageToken{K: "users", Q: qh, ID: last})
	}
	return out, nil
}

func reverse[T any](v []T) {
	for i, j := 0, len(v)-1; i < j; i, j = i+1, j-1 {
		v[i], v[j] = v[j], v[i]
	}
}

// GetUser returns one user. Errors: CodeBadRequest, CodeNotFound.
func (s *Service) GetUser(ctx context.Context, actorID, userID string) (*UserList, error) {
	if err := s.allow(ctx, actorID, actQueryUsers, ""); err != nil {
		return nil, err
	}
	if err := s.checkID("userId", userID); err != nil {
		return nil, err
	}
	out := &UserList{}
	err := s.view(ctx, func(tx Tx) error {
		u, err := tx.GetUser(ctx, userID)
		if err != nil {
			return notFound(err, "user", userID)
		}
		out.Users = userValues([]*User{u})
		return nil
	})
	return out, err
}

// UpdateUserInput is a partial update of a user: nil fields stay as they are;
// Roles and Metadata replace the whole value.
type UpdateUserInput struct {
	UserID      string
	DisplayName *string
	Roles       *[]string
	Metadata    *map[string]any
}

// UpdateUser creates the user if absent (displayName = userId) and applies
// the update. Emits user.didUpdate. Errors: CodeBadRequest (validation,
// unknown role naming it), CodePermissionDenied (role global-admin).
func (s *Service) UpdateUser(ctx context.Context, actorID string, in UpdateUserInput) (*UserList, error) {
	if err := s.checkID("userId", in.UserID); err != nil {
		return nil, err
	}
	defer s.authUsers.forget(in.UserID) // also on failure: the store may have committed
	if in.DisplayName != nil {
		if err := s.checkDisplayName("displayName", *in.DisplayName); err != nil {
			return nil, err
		}
	}
	var roles []string
	if in.Roles != nil {
		var err error
		if roles, err = s.checkIDs("roles", *in.Roles, false); err != nil {
			return nil, err
		}
		for _, r := range roles {
			if r == RoleGlobalAdmin {
				return nil, Errorf(CodePermissionDenied, "roles: %s cannot be assigned through the API", RoleGlobalAdmin)
			}
		}
	}
	if in.Metadata != nil {
		if err := s.checkObject("metadata", *in.Metadata, s.lim.MaxMetadataBytes); err != nil {
			return nil, err
		}
	}
	act := actUpdateUser
	if in.UserID == actorID && in.Roles == nil {
		act = actUpdateSelf // displayName and metadata of itself
	}
	now := s.Now()
	out := &UserList{}
	err := s.update(ctx, func(tx Tx, ev *events) error {
		if _, err := s.authorize(ctx, tx, actorID, act, ""); err != nil {
			return err
		}
		if len(roles) > 0 {
			rs, err := tx.GetRoles(ctx, roles)
			if err != nil {
				return err
			}
			have := make(map[string]bool, len(rs))
			for _, r := range rs {
				have[r.RoleID] = true
			}
			for _, r := range roles {
				if !have[r] {
					return invalid("roles", "unknown role %s", quote(r))
				}
			}
		}
		if _, err := tx.EnsureUsers(ctx, []string{in.UserID}, now.Time); err != nil {
			return err
		}
		u, err := tx.LockUser(ctx, in.UserID)
		if err != nil {
			return err
		}
		if in.DisplayName != nil {
			u.DisplayName = *in.DisplayName
		}
		if in.Roles != nil {
			// Keep global-admin if the user had it: it is managed by admin accounts.
			keep := []string{}
			for _, r := range u.Roles {
				if r == RoleGlobalAdmin {
					keep = append(keep, r)
				}
			}
			u.Roles = append(keep, roles...)
		}
		if in.Metadata != nil {
			u.Metadata = emptyMap(*in.Metadata)
		}
		u.UpdatedAt = now
		if err := tx.UpdateUser(ctx, u); err != nil {
			return err
		}
		if act == actUpdateUser {
			if err := s.audit(ctx, tx, actorID, AuditUserUpdate, AuditTargetUser, in.UserID, "", updateDetails(in, roles)); err != nil {
				return err
			}
		}
		presentUser(u)
		out.Users = []User{*u}
		ev.add(EventUserDidUpdate, UserEventData{Users: []User{*u}})
		return nil
	})
	return out, err
}

// GlobalBan bans a user everywhere: the user cannot be added to channels
// (400312) nor author messages. With deleteMessages the user's messages are
// soft-deleted in every channel. Idempotent. Emits user.didGlobalBan.
// Errors: CodeBadRequest, CodeNotFound (no such user).
func (s *Service) GlobalBan(ctx context.Context, actorID, userID string, deleteMessages bool) error {
	if err := s.allow(ctx, actorID, actGlobalBan, ""); err != nil {
		return err
	}
	return s.setGlobalBan(ctx, actorID, userID, true, deleteMessages)
}

// GlobalUnban lifts a global ban (only the flag; deleted messages stay
// deleted). Idempotent. Emits user.didGlobalUnban. Errors: CodeBadRequest,
// CodeNotFound.
func (s *Service) GlobalUnban(ctx context.Context, actorID, userID string) error {
	if err := s.allow(ctx, actorID, actGlobalBan, ""); err != nil {
		return err
	}
	return s.setGlobalBan(ctx, actorID, userID, false, false)
}

func (s *Service) setGlobalBan(ctx context.Context, actorID, userID string, ban, deleteMessages bool) error {
	if err := s.checkID("userId", userID); err != nil {
		return err
	}
	now := s.Now()
	defer s.authUsers.forget(userID) // also on failure: the store may have committed
	return s.update(ctx, func(tx Tx, ev *events) error {
		u, err := tx.LockUser(ctx, userID)
		if err != nil {
			return notFound(err, "user", userID)
		}
		if ban && hasRole(u.Roles, RoleGlobalAdmin) {
			return Errorf(CodePermissionDenied, "user %s is an admin and cannot be banned", quote(userID))
		}
		action, details := AuditUserGlobalUnban, map[string]any{}
		if ban {
			action, details = AuditUserGlobalBan, map[string]any{"deleteMessages": deleteMessages}
		}
		if err := s.audit(ctx, tx, actorID, action, AuditTargetUser, userID, "", details); err != nil {
			return err
		}
		if deleteMessages {
			ids, err := tx.SoftDeleteUserMessages(ctx, userID, now.Time)
			if err != nil {
				return err
			}
			for _, id := range ids {
				if err := tx.DeleteBlobs(ctx, id); err != nil {
					return err
				}
			}
		}
		if u.IsGlobalBan == ban {
			return nil
		}
		u.IsGlobalBan = ban
		u.UpdatedAt = now
		if err := tx.UpdateUser(ctx, u); err != nil {
			return err
		}
		name := EventUserDidGlobalBan
		if !ban {
			name = EventUserDidGlobalUnban
		}
		presentUser(u)
		ev.add(name, UserEventData{Users: []User{*u}})
		return nil
	})
}

func hasRole(roles []string, role string) bool {
	for _, r := range roles {
		if r == role {
			return true
		}
	}
	return false
}

// FlagUser records that the acting admin's user flagged userID (one flag
// per flagger; flagging again is a no-op). Errors: CodeBadRequest,
// CodeNotFound.
func (s *Service) FlagUser(ctx context.Context, actorID, userID string) (*UserList, error) {
	if err := s.checkID("userId", userID); err != nil {
		return nil, err
	}
	now := s.Now()
	out := &UserList{}
	err := s.update(ctx, func(tx Tx, ev *events) error {
		if _, err := s.authorize(ctx, tx, actorID, actFlagUser, ""); err != nil {
			return err
		}
		u, err := tx.LockUser(ctx, userID)
		if err != nil {
			return notFound(err, "user", userID)
		}
		added, err := tx.AddFlag(ctx, FlagTargetUser, userID, actorID, now.Time)
		if err != nil {
			return err
		}
		if added {
			u.FlagCount++
			u.Hashflag = bloomAdd(u.Hashflag, actorID)
			u.UpdatedAt = now
			if err := tx.UpdateUser(ctx, u); err != nil {
				return err
			}
		}
		out.Users = userValues([]*User{u})
		return nil
	})
	return out, err
}

// ClearUserFlags removes every flag of a user. Errors: CodeBadRequest,
// CodeNotFound.
func (s *Service) ClearUserFlags(ctx context.Context, actorID, userID string) error {
	if err := s.allow(ctx, actorID, actClearUserFlags, ""); err != nil {
		return err
	}
	if err := s.checkID("userId", userID); err != nil {
		return err
	}
	now := s.Now()
	defer s.authUsers.forget(userID) // also on failure: the store may have committed
	return s.update(ctx, func(tx Tx, ev *events) error {
		u, err := tx.LockUser(ctx, userID)
		if err != nil {
			return notFound(err, "user", userID)
		}
		if err := tx.ClearFlags(ctx, FlagTargetUser, userID); err != nil {
			return err
		}
		if err := s.audit(ctx, tx, actorID, AuditUserClearFlags, AuditTargetUser, userID, "",
			map[string]any{"flagCount": u.FlagCount}); err != nil {
			return err
		}
		if u.FlagCount == 0 {
			return nil
		}
		u.FlagCount = 0
		u.Hashflag = Hashflag{Hash: []uint32{}}
		u.UpdatedAt = now
		return tx.UpdateUser(ctx, u)
	})
}

// Bloom filter parameters of hashflag.
const (
	bloomBits   = 1024
	bloomHashes = 4
)

// bloomAdd adds id to a hashflag bloom filter (1024 bits, 4 hashes by
// double hashing of SHA-256).
func bloomAdd(h Hashflag, id string) Hashflag {
	if h.Bits != bloomBits || len(h.Hash) != bloomBits/32 {
		h = Hashflag{Bits: bloomBits, Hashes: bloomHashes, Hash: make([]uint32, bloomBits/32)}
	} else {
		h.Hash = append([]uint32(nil), h.Hash...)
	}
	for _, bit := range bloomPositions(id) {
		h.Hash[bit/32] |= 1 << (bit % 32)
	}
	return h
}

// BloomContains reports whether id may have flagged the item (false
// positives possible, no false negatives).
func BloomContains(h Hashflag, id string) bool {
	if h.Bits != bloomBits || len(h.Hash) != bloomBits/32 {
		return false
	}
	for _, bit := range bloomPositions(id) {
		if h.Hash[bit/32]&(1<<(bit%32)) == 0 {
			return false
		}
	}
	return true
}

func bloomPositions(id string) [bloomHashes]uint32 {
	sum := sha256.Sum256([]byte(id))
	h1 := binary.BigEndian.Uint64(sum[0:8])
	h2 := binary.BigEndian.Uint64(sum[8:16]) | 1
	var out [bloomHashes]uint32
	for i := range out {
		out[i] = uint32((h1 + uint64(i)*h2) % bloomBits)
	}
	return out
}

// notFound turns a store not-found error into one that names the thing.
func notFound(err error, what, id string) error {
	if ErrorCode(err) == CodeNotFound {
		return Errorf(CodeNotFound, "%s %s not found", what, quote(id))
	}
	return err
}

// permissions returns the set of permissions of a user's roles, and
// whether the user is an admin.
func (s *Service) permissions(ctx context.Context, tx Tx, u *User) (map[string]bool, bool, error) {
	admin := false
	var ids []string
	for _, r := range u.Roles {
		if r == RoleGlobalAdmin {
			admin = true
		}
		ids = append(ids, r)
	}
	if len(ids) == 0 {
		return nil, admin, nil
	}
	rs, err := tx.GetRoles(ctx, ids)
	if err != nil {
		return nil, admin, err
	}
	var perms map[string]bool
	for _, r := range rs {
		for _, p := range r.Permissions {
			if perms == nil {
				perms = map[string]bool{}
			}
			perms[p] = true
		}
	}
	return perms, admin, nil
}

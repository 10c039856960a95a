package chat

import (
	"context"
	"encoding/json"
	"time"
)

// Internal events: written to the event log in the transaction of the
// change, so that every process sharing the store learns of it (an event
// stream opened under that access ends, docs/api.md section on the event
// stream), but never delivered to webhooks nor sent on any stream, and not
// among EventNames. Their data is AccessEventData.
const (
	// EventUserDidRevokeTokens: the user's tokens issued before RevokedAt
	// were revoked (RevokeUserTokens). Event.UserIDs names the user.
	EventUserDidRevokeTokens = "user.didRevokeTokens"
	// EventAdminDidRevokeToken: the admin account's access token stopped
	// working, revoked (RevokeAdmin) or replaced (RotateAdmin).
	EventAdminDidRevokeToken = "admin.didRevokeToken"
)

// IsInternalEvent reports whether an event of this name is internal (see
// EventUserDidRevokeTokens): kept in the log for the processes, never
// delivered to webhooks or streams.
func IsInternalEvent(name string) bool {
	return name == EventUserDidRevokeTokens || name == EventAdminDidRevokeToken ||
		name == EventUserDidBlock || name == EventUserDidUnblock
}

// AccessEventData is the data of the internal events: UserID and
// RevokedAt on user.didRevokeTokens, Admin (the account's name) and
// Rotated on admin.didRevokeToken.
type AccessEventData struct {
	UserID    string `json:"userId,omitempty"`
	RevokedAt Time   `json:"revokedAt"`
	Admin     string `json:"admin,omitempty"`
	Rotated   bool   `json:"rotated,omitempty"`
}

// AccessEvent decodes the data of user.didRevokeTokens or
// admin.didRevokeToken; ok is false for any other event (the block events
// included, see BlockEvent) or undecodable data.
func AccessEvent(e *Event) (d AccessEventData, ok bool) {
	if e.Name != EventUserDidRevokeTokens && e.Name != EventAdminDidRevokeToken {
		return d, false
	}
	return d, json.Unmarshal(e.Data, &d) == nil
}

// Access is the credential a caller authenticated with, as far as its
// validity goes, so that what the caller opens with it (an event stream,
// a stream ticket) lasts only as long as it does. An admin access token
// is AdminName and TokenHash (HashToken of the token); a user token is
// UserID with the token's iat and exp claims.
type Access struct {
	// AdminName is the admin account of an admin access token; empty for
	// a user token.
	AdminName string
	// TokenHash is the stored form of the admin access token (HashToken).
	TokenHash []byte
	// UserID is the user of a user token; empty for an admin.
	UserID string
	// IssuedAt is the user token's iat claim; nil when absent (it then
	// counts as issued at the epoch, so any revocation refuses it).
	IssuedAt *Time
	// ExpiresAt is the user token's exp claim; nil when it has none.
	ExpiresAt *Time
}

// IsAdmin reports whether a is an admin access token's.
func (a Access) IsAdmin() bool { return a.AdminName != "" || len(a.TokenHash) > 0 }

// Deadline returns when the access ends by itself: a user token's exp
// plus UserTokenLeeway, the last moment a request with it is accepted;
// ok is false when it never expires (admin tokens, user tokens without
// exp).
func (a Access) Deadline() (t time.Time, ok bool) {
	if a.IsAdmin() || a.ExpiresAt == nil {
		return time.Time{}, false
	}
	return a.ExpiresAt.Add(UserTokenLeeway), true
}

// RevokedBy reports whether a user's revocation at revokedAt revokes this
// access: a user token of that user issued before it (iat has whole
// seconds, so one issued in the second of the revocation too).
func (a Access) RevokedBy(userID string, revokedAt Time) bool {
	return !a.IsAdmin() && a.UserID == userID && tokenRevoked(a.IssuedAt, &revokedAt)
}

// tokenRevoked reports whether a user token issued at iat (nil: absent,
// the epoch) is refused by a revocation at revokedAt (nil: none).
func tokenRevoked(iat, revokedAt *Time) bool {
	if revokedAt == nil {
		return false
	}
	var t time.Time
	if iat != nil {
		t = iat.Time
	}
	return !t.After(revokedAt.Time.Truncate(time.Second))
}

// Check reports whether a is still valid in tx at now, as a request
// authenticated with it would be: nil, or CodeUnauthorized when the admin
// account was revoked or its token rotated, when the user's tokens were
// revoked after the token was issued, or when the token expired;
// CodeGlobalBanned for a globally banned user.
func (a Access) Check(ctx context.Context, tx Tx, now time.Time) error {
	if a.IsAdmin() {
		ad, err := tx.GetAdminByTokenHash(ctx, a.TokenHash)
		switch {
		case ErrorCode(err) == CodeNotFound:
			return Errorf(CodeUnauthorized, "access token was revoked")
		case err != nil:
			return err
		case ad.RevokedAt != nil || ad.Name != a.AdminName:
			return Errorf(CodeUnauthorized, "access token was revoked")
		}
		return nil
	}
	if d, ok := a.Deadline(); ok && now.After(d) {
		return Errorf(CodeUnauthorized, "user token expired")
	}
	u, err := tx.GetUser(ctx, a.UserID)
	switch {
	case ErrorCode(err) == CodeNotFound:
		return nil
	case err != nil:
		return err
	case tokenRevoked(a.IssuedAt, u.TokensRevokedAt):
		return Errorf(CodeUnauthorized, "user token was revoked")
	case u.IsGlobalBan:
		return &Error{Code: CodeGlobalBanned, Message: "user " + quote(a.UserID) + " is globally banned", Detail: []Detail{UserRef{UserID: a.UserID}}}
	}
	return nil
}

// UserTokenAccess verifies a user token as AuthenticateUser does, without
// reading the store, and returns its Access (user, iat, exp). Errors:
// CodeUnauthorized.
func (s *Service) UserTokenAccess(token string) (Access, error) {
	c, err := s.parseUserToken(token)
	if err != nil {
		return Access{}, err
	}
	a := Access{UserID: c.subject()}
	if c.IssuedAt != nil {
		t := NewTime(c.IssuedAt.Time)
		a.IssuedAt = &t
	}
	if c.ExpiresAt != nil {
		t := NewTime(c.ExpiresAt.Time)
		a.ExpiresAt = &t
	}
	return a, nil
}

// AdminAccess returns the Access of an authenticated admin account.
func AdminAccess(a *Admin) Access {
	return Access{AdminName: a.Name, TokenHash: a.TokenHash}
}

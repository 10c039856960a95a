package chat

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// UserTokenLeeway is the clock skew allowed when checking the exp and iat
// claims of a user token: a token is still accepted this long after its
// exp, and may carry an iat this far in the future.
const UserTokenLeeway = 30 * time.Second

// DefaultUserTokenTTL is the lifetime of minted user tokens when neither
// the request nor Config.UserTokenTTL gives one.
const DefaultUserTokenTTL = 24 * time.Hour

// userTokenSecretKey is the meta key of the generated user-token secret.
const userTokenSecretKey = "user_token_secret"

// userTokenMethods are the only signing methods a user token may use.
var userTokenMethods = []string{jwt.SigningMethodHS256.Alg()}

// UserClaims are the claims of a user token (docs/api.md section 1 (Permissions of end users)): the
// user's id in user_id (sub is accepted instead), an optional exp and an
// optional iat (absent counts as issued at the epoch, so any revocation
// refuses the token).
type UserClaims struct {
	UserID string `json:"user_id,omitempty"`
	jwt.RegisteredClaims
}

// subject returns the user id the claims name: user_id, else sub.
func (c *UserClaims) subject() string {
	if c.UserID != "" {
		return c.UserID
	}
	return c.Subject
}

// signUserToken returns an HS256 user token for userID signed with
// secret, issued at issuedAt and expiring after ttl (no exp claim when
// ttl <= 0).
func signUserToken(secret []byte, userID string, issuedAt time.Time, ttl time.Duration) (string, error) {
	if len(secret) == 0 {
		return "", errors.New("chat: empty user-token secret")
	}
	if userID == "" {
		return "", errors.New("chat: empty user id")
	}
	c := UserClaims{UserID: userID, RegisteredClaims: jwt.RegisteredClaims{IssuedAt: jwt.NewNumericDate(issuedAt)}}
	if ttl > 0 {
		c.ExpiresAt = jwt.NewNumericDate(issuedAt.Add(ttl))
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(secret)
}

// UserToken is a minted user token: the response of
// POST /users/:userId/token.
type UserToken struct {
	Token     string `json:"token"`
	UserID    string `json:"userId"`
	ExpiresAt *Time  `json:"expiresAt"`
}

// IssueUserToken mints a user token for userID with the Service's secret
// (the API's POST /users/:userId/token). actorID "" is the server's
// operator: a host program that signs its users in itself; any other
// actor must be an admin (users get CodePermissionDenied). ttl 0 takes
// Config.UserTokenTTL; a negative ttl mints a token without expiry. The
// user is created on first reference. A host that holds the secret
// (Config.UserTokenSecret) may instead sign UserClaims with any JWT
// library. Errors: CodeBadRequest (userId), CodePermissionDenied,
// CodeGlobalBanned.
func (s *Service) IssueUserToken(ctx context.Context, actorID, userID string, ttl time.Duration) (*UserToken, error) {
	if actorID != "" {
		if err := s.allow(ctx, actorID, actMintUserToken, ""); err != nil {
			return nil, err
		}
	}
	if ttl == 0 {
		ttl = s.tokenTTL
	}
	if err := s.checkID("userId", userID); err != nil {
		return nil, err
	}
	now := s.Now()
	var u *User
	err := s.update(ctx, func(tx Tx, _ *events) error {
		us, err := tx.EnsureUsers(ctx, []string{userID}, now.Time)
		if err != nil {
			return err
		}
		u = us[0]
		return nil
	})
	if err != nil {
		return nil, err
	}
	if u.IsGlobalBan {
		return nil, &Error{Code: CodeGlobalBanned, Message: "user " + quote(userID) + " is globally banned", Detail: []Detail{UserRef{UserID: userID}}}
	}
	// iat has whole seconds and tokens issued in the second of a
	// revocation are refused; a token minted in that second is dated
	// the next one, which the leeway accepts.
	iat := now.Time.Truncate(time.Second)
	if u.TokensRevokedAt != nil && !iat.After(u.TokensRevokedAt.Time.Truncate(time.Second)) {
		iat = u.TokensRevokedAt.Time.Truncate(time.Second).Add(time.Second)
	}
	tok, err := signUserToken(s.userKey, userID, iat, ttl)
	if err != nil {
		return nil, err
	}
	out := &UserToken{Token: tok, UserID: userID}
	if ttl > 0 {
		exp := NewTime(iat.Add(ttl))
		out.ExpiresAt = &exp
	}
	return out, nil
}

// RevokeUserTokens makes every token of userID issued before now invalid,
// including those issued in the current second (iat has whole seconds),
// and logs the internal event user.didRevokeTokens, which ends the event
// streams opened with them.
// The user is created on first reference. actorID must be an admin.
// Errors: CodeBadRequest, CodePermissionDenied.
func (s *Service) RevokeUserTokens(ctx context.Context, actorID, userID string) error {
	if err := s.allow(ctx, actorID, actRevokeUserTokens, ""); err != nil {
		return err
	}
	if err := s.checkID("userId", userID); err != nil {
		return err
	}
	now := s.Now()
	defer s.authUsers.forget(userID) // also on failure: the store may have committed
	return s.update(ctx, func(tx Tx, ev *events) error {
		if _, err := tx.EnsureUsers(ctx, []string{userID}, now.Time); err != nil {
			return err
		}
		u, err := tx.LockUser(ctx, userID)
		if err != nil {
			return err
		}
		u.TokensRevokedAt = &now
		u.UpdatedAt = now
		if err := tx.UpdateUser(ctx, u); err != nil {
			return err
		}
		// For the event streams of every process: those opened with a
		// token this revocation refuses end.
		ev.add(EventUserDidRevokeTokens, AccessEventData{UserID: userID, RevokedAt: now})
		return s.audit(ctx, tx, actorID, AuditUserRevokeTokens, AuditTargetUser, userID, "", nil)
	})
}

// IsUserToken reports whether token is presented as a user token (a JWT)
// rather than an admin access token (which starts with "chat_").
func IsUserToken(token string) bool {
	return token != "" && !strings.HasPrefix(token, tokenPrefix)
}

// AuthenticateUser verifies a user token and returns the user it names (a
// user not stored yet is returned unstored, with displayName = userId; the
// operations it performs create it, as any first reference does). The token must be HS256 with the Service's
// secret, unexpired (UserTokenLeeway of skew allowed), and issued after
// the user's last revocation (a token without iat counts as issued at the
// epoch). The user's record is remembered for up to a second (see
// userCache): revocations, bans and updates through this Service apply at
// once, those through another process sharing the store within that
// second. Errors: CodeUnauthorized (bad, expired or revoked token),
// CodeGlobalBanned (the user is globally banned).
func (s *Service) AuthenticateUser(ctx context.Context, token string) (*User, error) {
	c, err := s.parseUserToken(token)
	if err != nil {
		return nil, err
	}
	userID := c.subject()
	now := time.Now() // the cache's own clock, not the Service's
	u, gen, cached := s.authUsers.get(userID, now)
	if !cached {
		err = s.view(ctx, func(tx Tx) error {
			var err error
			u, err = tx.GetUser(ctx, userID)
			return err
		})
		if ErrorCode(err) == CodeNotFound {
			u, err = nil, nil
		}
		if err != nil {
			return nil, err
		}
		s.authUsers.put(userID, u, now, gen)
	}
	if u == nil {
		// Not stored yet: the operations that need the record create it
		// (a refused call stores nothing).
		return &User{UserID: userID, DisplayName: userID}, nil
	}
	var iat *Time // absent: the epoch
	if c.IssuedAt != nil {
		iat = &Time{Time: c.IssuedAt.Time}
	}
	if tokenRevoked(iat, u.TokensRevokedAt) {
		return nil, Errorf(CodeUnauthorized, "user token was revoked")
	}
	if u.IsGlobalBan {
		return nil, &Error{Code: CodeGlobalBanned, Message: "user " + quote(userID) + " is globally banned", Detail: []Detail{UserRef{UserID: userID}}}
	}
	return u, nil
}

// parseUserToken verifies a user token's signature, method and times, and
// that it names a valid user id. Errors: CodeUnauthorized.
func (s *Service) parseUserToken(token string) (*UserClaims, error) {
	if token == "" || len(token) > 4096 {
		return nil, Errorf(CodeUnauthorized, "missing or malformed user token")
	}
	var c UserClaims
	_, err := s.jwtParser.ParseWithClaims(token, &c, s.userKeyFunc)
	if err != nil {
		msg := "invalid user token"
		switch {
		case errors.Is(err, jwt.ErrTokenExpired):
			msg = "user token expired"
		case errors.Is(err, jwt.ErrTokenSignatureInvalid):
			msg = "user token signature is invalid"
		case errors.Is(err, jwt.ErrTokenUnverifiable), errors.Is(err, jwt.ErrTokenMalformed):
			msg = "user token is malformed or not signed with HS256"
		case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
			msg = "user token is issued in the future"
		}
		return nil, Errorf(CodeUnauthorized, "%s", msg)
	}
	userID := c.subject()
	if userID == "" {
		return nil, Errorf(CodeUnauthorized, "user token names no user (user_id or sub)")
	}
	if s.checkID("user_id", userID) != nil {
		return nil, Errorf(CodeUnauthorized, "user token names an invalid user id")
	}
	return &c, nil
}

// userKeyFunc hands the parser the secret; the parser has already
// refused every method but HS256.
func (s *Service) userKeyFunc(*jwt.Token) (any, error) { return s.userKey, nil }

// newJWTParser returns the parser of user tokens: HS256 only, the leeway,
// iat checked when present, the Service's clock.
func newJWTParser(now func() time.Time) *jwt.Parser {
	return jwt.NewParser(jwt.WithValidMethods(userTokenMethods), jwt.WithLeeway(UserTokenLeeway),
		jwt.WithIssuedAt(), jwt.WithTimeFunc(now))
}

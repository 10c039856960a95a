package chat

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"time"
)

// tokenPrefix marks admin access tokens so they are easy to recognise in
// secret scanners.
const tokenPrefix = "chat_"

// HashToken returns the stored form of an access token (SHA-256).
func HashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// CreateAdmin creates an admin account acting as userID (default: the
// name), creates that user if needed and gives it the global-admin role. It
// returns the account and its access token, which is shown only here and
// stored only as a hash. actorID is the acting user recorded in the audit
// log, "" for the server's operator (see the package documentation, Acting
// user). Errors: CodeBadRequest, CodeConflict (name taken).
func (s *Service) CreateAdmin(ctx context.Context, actorID, name, userID string) (*Admin, string, error) {
	return s.createAdmin(ctx, actorID, name, userID, nil)
}

// createAdmin is CreateAdmin with the panel password's hash (nil: none).
func (s *Service) createAdmin(ctx context.Context, actorID, name, userID string, passwordHash []byte) (*Admin, string, error) {
	if err := s.checkID("name", name); err != nil {
		return nil, "", err
	}
	if userID == "" {
		userID = name
	}
	if err := s.checkID("userId", userID); err != nil {
		return nil, "", err
	}
	token, err := newAdminToken()
	if err != nil {
		return nil, "", err
	}
	now := s.Now()
	a := &Admin{Name: name, UserID: userID, TokenHash: HashToken(token), PasswordHash: passwordHash, CreatedAt: now}
	err = s.update(ctx, func(tx Tx, _ *events) error {
		if err := tx.CreateAdmin(ctx, a); err != nil {
			if ErrorCode(err) == CodeConflict {
				return Errorf(CodeConflict, "admin %s already exists", quote(name))
			}
			return err
		}
		if err := s.audit(ctx, tx, actorID, AuditAdminCreate, AuditTargetAdmin, name, "",
			map[string]any{"userId": userID}); err != nil {
			return err
		}
		if _, err := tx.EnsureUsers(ctx, []string{userID}, now.Time); err != nil {
			return err
		}
		u, err := tx.LockUser(ctx, userID)
		if err != nil {
			return err
		}
		if !hasRole(u.Roles, RoleGlobalAdmin) {
			u.Roles = append(u.Roles, RoleGlobalAdmin)
			u.UpdatedAt = now
			return tx.UpdateUser(ctx, u)
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return a, token, nil
}

// Authenticate returns the admin owning token. A token found is
// remembered for up to a second (authCacheTTL): revoking or rotating it
// through this Service refuses it at once, through another process sharing
// the store within that second. Errors: CodeUnauthorized (missing, unknown
// or revoked token).
func (s *Service) Authenticate(ctx context.Context, token string) (*Admin, error) {
	if token == "" || len(token) > 512 || !strings.HasPrefix(token, tokenPrefix) {
		return nil, Errorf(CodeUnauthorized, "missing or unknown access token")
	}
	hash := HashToken(token)
	now := time.Now() // the cache's own clock, not the Service's
	a, gen, ok := s.admins.get(hash, now)
	if ok {
		return a, nil
	}
	err := s.view(ctx, func(tx Tx) error {
		var err error
		a, err = tx.GetAdminByTokenHash(ctx, hash)
		return err
	})
	if ErrorCode(err) == CodeNotFound {
		return nil, Errorf(CodeUnauthorized, "missing or unknown access token")
	}
	if err != nil {
		return nil, err
	}
	if a.RevokedAt != nil {
		return nil, Errorf(CodeUnauthorized, "access token was revoked")
	}
	s.admins.put(hash, a, now, gen)
	return a, nil
}

// ListAdmins returns every admin account (without tokens). Errors: only
// the store's (CodeUnavailable, CodeInternal).
func (s *Service) ListAdmins(ctx context.Context) ([]Admin, error) {
	var out []Admin
	err := s.view(ctx, func(tx Tx) error {
		as, err := tx.ListAdmins(ctx)
		for _, a := range as {
			out = append(out, *a)
		}
		return err
	})
	return out, err
}

// HasAdmins reports whether any admin account exists (revoked ones count).
// Errors: only the store's (CodeUnavailable, CodeInternal).
func (s *Service) HasAdmins(ctx context.Context) (bool, error) {
	as, err := s.ListAdmins(ctx)
	return len(as) > 0, err
}

// RotateAdmin gives an existing admin a new access token and returns it;
// the old token stops working at once, and the event streams opened with
// it end (the internal event admin.didRevokeToken). A revoked admin is active again
// under the new token (rotation is how a revoked name is reused). Errors:
// CodeBadRequest, CodeNotFound. actorID as in CreateAdmin.
func (s *Service) RotateAdmin(ctx context.Context, actorID, name string) (string, error) {
	if err := s.checkID("name", name); err != nil {
		return "", err
	}
	token, err := newAdminToken()
	if err != nil {
		return "", err
	}
	now := s.Now()
	err = s.update(ctx, func(tx Tx, ev *events) error {
		if err := tx.RotateAdmin(ctx, name, HashToken(token)); err != nil {
			return notFound(err, "admin", name)
		}
		ev.add(EventAdminDidRevokeToken, AccessEventData{Admin: name, RevokedAt: now, Rotated: true})
		return s.audit(ctx, tx, actorID, AuditAdminRotate, AuditTargetAdmin, name, "", nil)
	})
	s.admins.forget() // also on failure: the store may have committed
	if err != nil {
		return "", err
	}
	return token, nil
}

// newAdminToken returns a fresh random admin access token.
func newAdminToken() (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(raw[:]), nil
}

// RevokeAdmin revokes an admin's token; the next request with it fails,
// and the event streams opened with it end (the internal event
// admin.didRevokeToken).
// It also ends the admin's panel sessions, and a revoked admin cannot sign
// in to the panel. Idempotent. actorID as in CreateAdmin. Errors:
// CodeNotFound.
func (s *Service) RevokeAdmin(ctx context.Context, actorID, name string) error {
	now := s.Now()
	defer s.admins.forget() // also on failure: the store may have committed
	return s.update(ctx, func(tx Tx, ev *events) error {
		if err := tx.RevokeAdmin(ctx, name, now.Time); err != nil {
			return notFound(err, "admin", name)
		}
		ev.add(EventAdminDidRevokeToken, AccessEventData{Admin: name, RevokedAt: now})
		if _, err := tx.DeleteAdminSessions(ctx, name); err != nil {
			return err
		}
		return s.audit(ctx, tx, actorID, AuditAdminRevoke, AuditTargetAdmin, name, "", nil)
	})
}

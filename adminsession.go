package chat

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"
)

// Admin panel sign-in: passwords and server-side sessions.
//
// Passwords are hashed with bcrypt (golang.org/x/crypto/bcrypt): a slow,
// salted hash whose library writes and reads its own self-describing
// encoding (cost and salt included) and compares in constant time, so the
// engine encodes nothing by hand. Its one limit, 72 bytes of input, is
// enforced as the password's maximum length rather than truncated silently.

// Password bounds for admin panel passwords.
const (
	MinAdminPasswordChars = 10
	MaxAdminPasswordBytes = 72 // bcrypt's input limit
)

// AdminPasswordCost is the bcrypt cost of admin passwords (2^12 rounds,
// about a quarter of a second on one core).
const AdminPasswordCost = 12

// AdminSession is a signed-in session of the admin panel. The session id
// itself lives only in the browser's cookie; the store keeps its SHA-256
// (IDHash), so a copy of the table does not let anybody sign in. CSRFToken
// is the token every state-changing request of the session must carry.
type AdminSession struct {
	IDHash     []byte
	Name       string // the admin's name
	CSRFToken  string
	CreatedAt  Time
	LastSeenAt Time
}

// AdminSessionStore persists admin panel sessions, so that every process
// sharing the store shares them and signing out ends a session everywhere.
type AdminSessionStore interface {
	// CreateAdminSession inserts s; CodeConflict if its IDHash exists.
	CreateAdminSession(ctx context.Context, s *AdminSession) error
	// GetAdminSession returns the session or CodeNotFound.
	GetAdminSession(ctx context.Context, idHash []byte) (*AdminSession, error)
	// TouchAdminSession sets LastSeenAt; CodeNotFound if absent.
	TouchAdminSession(ctx context.Context, idHash []byte, now time.Time) error
	// DeleteAdminSession deletes the session (absent: no error).
	DeleteAdminSession(ctx context.Context, idHash []byte) error
	// DeleteAdminSessions deletes every session of the admin name and
	// returns how many there were.
	DeleteAdminSessions(ctx context.Context, name string) (int, error)
	// DeleteIdleAdminSessions deletes the sessions last seen before
	// cutoff and returns how many there were.
	DeleteIdleAdminSessions(ctx context.Context, cutoff time.Time) (int, error)
}

// DefaultAdminSessionIdle is how long an admin panel session lasts without
// a request.
const DefaultAdminSessionIdle = 30 * time.Minute

// checkAdminPassword validates a new admin password.
func checkAdminPassword(password string) error {
	switch {
	case !utf8.ValidString(password):
		return InvalidField("password", "the password must be valid UTF-8")
	case utf8.RuneCountInString(password) < MinAdminPasswordChars:
		return InvalidField("password", "the password must have at least %d characters", MinAdminPasswordChars)
	case len(password) > MaxAdminPasswordBytes:
		return InvalidField("password", "the password must have at most %d bytes", MaxAdminPasswordBytes)
	}
	for _, r := range password {
		if r < 0x20 || r == 0x7f {
			return InvalidField("password", "the password must not contain control characters")
		}
	}
	return nil
}

// passwordCost is the configured bcrypt cost.
func (s *Service) passwordCost() int {
	if c := s.cfg.AdminPasswordCost; c >= bcrypt.MinCost && c <= bcrypt.MaxCost {
		return c
	}
	return AdminPasswordCost
}

// hashAdminPassword validates password and returns its bcrypt hash.
func (s *Service) hashAdminPassword(password string) ([]byte, error) {
	if err := checkAdminPassword(password); err != nil {
		return nil, err
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), s.passwordCost())
	if err != nil {
		return nil, WrapError(CodeInternal, err, "hashing the password failed")
	}
	return h, nil
}

// CreateAdminWithPassword is CreateAdmin that also sets the admin panel
// password, in the same transaction. Errors: as CreateAdmin, and
// CodeBadRequest naming "password" (fewer than MinAdminPasswordChars
// characters, more than MaxAdminPasswordBytes bytes, control characters).
func (s *Service) CreateAdminWithPassword(ctx context.Context, actorID, name, userID, password string) (*Admin, string, error) {
	h, err := s.hashAdminPassword(password)
	if err != nil {
		return nil, "", err
	}
	return s.createAdmin(ctx, actorID, name, userID, h)
}

// SetAdminPassword sets or changes the admin panel password of the admin
// name and ends every panel session of that admin. Errors:
// CodeBadRequest (see CreateAdminWithPassword), CodeNotFound.
func (s *Service) SetAdminPassword(ctx context.Context, name, password string) error {
	if err := s.checkID("name", name); err != nil {
		return err
	}
	h, err := s.hashAdminPassword(password)
	if err != nil {
		return err
	}
	return s.update(ctx, func(tx Tx, _ *events) error {
		if err := notFound(tx.SetAdminPassword(ctx, name, h), "admin", name); err != nil {
			return err
		}
		_, err := tx.DeleteAdminSessions(ctx, name)
		return err
	})
}

// dummyHashes holds, per bcrypt cost, a hash compared against when the
// admin does not exist or has no password, so that a wrong name costs as
// much time as a wrong password. Made on first use.
var dummyHashes sync.Map // int -> []byte

// burnCompare spends the time of one password comparison.
func (s *Service) burnCompare(password string) {
	cost := s.passwordCost()
	h, ok := dummyHashes.Load(cost)
	if !ok {
		b, err := bcrypt.GenerateFromPassword([]byte("not the password of anybody"), cost)
		if err != nil {
			return
		}
		h, _ = dummyHashes.LoadOrStore(cost, b)
	}
	_ = bcrypt.CompareHashAndPassword(h.([]byte), []byte(password))
}

// errSignIn is the one answer to every failed sign-in: it does not tell
// which of name and password was wrong.
func errSignIn() error {
	return Errorf(CodeUnauthorized, "wrong admin name or password")
}

// SignInAdmin checks an admin's name and panel password and, when they
// match an active admin, opens a panel session. It returns the admin, the
// session (with its CSRF token) and the session id for the cookie, which
// is shown only here and stored only as a hash. Errors: CodeUnauthorized
// for an unknown name, a wrong password, an admin without a password or a
// revoked admin (one message for all, "wrong admin name or password",
// except revocation, which is said).
func (s *Service) SignInAdmin(ctx context.Context, name, password string) (*Admin, *AdminSession, string, error) {
	if name == "" || len(name) > s.lim.MaxIDBytes || len(password) > 1024 {
		return nil, nil, "", errSignIn()
	}
	var a *Admin
	err := s.view(ctx, func(tx Tx) error {
		var err error
		a, err = tx.GetAdmin(ctx, name)
		return err
	})
	if ErrorCode(err) == CodeNotFound {
		s.burnCompare(password)
		return nil, nil, "", errSignIn()
	}
	if err != nil {
		return nil, nil, "", err
	}
	if len(a.PasswordHash) == 0 {
		s.burnCompare(password)
		return nil, nil, "", errSignIn()
	}
	if bcrypt.CompareHashAndPassword(a.PasswordHash, []byte(password)) != nil {
		return nil, nil, "", errSignIn()
	}
	if a.RevokedAt != nil {
		return nil, nil, "", Errorf(CodeUnauthorized, "admin %s was revoked", quote(name))
	}
	id, err := randomToken()
	if err != nil {
		return nil, nil, "", err
	}
	csrf, err := randomToken()
	if err != nil {
		return nil, nil, "", err
	}
	now := s.Now()
	sess := &AdminSession{IDHash: HashToken(id), Name: a.Name, CSRFToken: csrf, CreatedAt: now, LastSeenAt: now}
	err = s.update(ctx, func(tx Tx, _ *events) error {
		return tx.CreateAdminSession(ctx, sess)
	})
	if err != nil {
		return nil, nil, "", err
	}
	return a, sess, id, nil
}

// AdminSessionFor returns the active admin and the session of a panel
// session id, and records the request: a session is valid while it was
// last seen less than idle ago (0: DefaultAdminSessionIdle). An idle
// session is deleted. Errors: CodeUnauthorized (unknown, ended or idle
// session, revoked admin).
func (s *Service) AdminSessionFor(ctx context.Context, sessionID string, idle time.Duration) (*Admin, *AdminSession, error) {
	return s.adminSession(ctx, sessionID, idle, true)
}

// CheckAdminSession is AdminSessionFor without recording a request: it
// returns the admin and the session while the session is valid, without
// extending it, for what the panel's pages do by themselves (refreshing a
// list, keeping an event stream open), which must not keep an unattended
// session alive. An idle session is deleted. Errors: as AdminSessionFor.
func (s *Service) CheckAdminSession(ctx context.Context, sessionID string, idle time.Duration) (*Admin, *AdminSession, error) {
	return s.adminSession(ctx, sessionID, idle, false)
}

// adminSession resolves a panel session; touch records the request.
func (s *Service) adminSession(ctx context.Context, sessionID string, idle time.Duration, touch bool) (*Admin, *AdminSession, error) {
	if idle <= 0 {
		idle = DefaultAdminSessionIdle
	}
	unauth := Errorf(CodeUnauthorized, "not signed in, or the session ended")
	if sessionID == "" || len(sessionID) > 128 {
		return nil, nil, unauth
	}
	h := HashToken(sessionID)
	var a *Admin
	var sess *AdminSession
	err := s.view(ctx, func(tx Tx) error {
		var err error
		if sess, err = tx.GetAdminSession(ctx, h); err != nil {
			return err
		}
		a, err = tx.GetAdmin(ctx, sess.Name)
		return err
	})
	if ErrorCode(err) == CodeNotFound {
		return nil, nil, unauth
	}
	if err != nil {
		return nil, nil, err
	}
	now := s.Now()
	if now.Sub(sess.LastSeenAt.Time) >= idle || a.RevokedAt != nil {
		_ = s.EndAdminSession(ctx, sessionID)
		return nil, nil, unauth
	}
	// Write the last-seen time at most once a minute: a page that polls
	// does not turn every read into a write.
	if touch && (now.Sub(sess.LastSeenAt.Time) >= time.Minute || idle <= 2*time.Minute) {
		err = s.update(ctx, func(tx Tx, _ *events) error {
			return tx.TouchAdminSession(ctx, h, now.Time)
		})
		if ErrorCode(err) == CodeNotFound {
			return nil, nil, unauth
		}
		if err != nil {
			return nil, nil, err
		}
		sess.LastSeenAt = now
	}
	return a, sess, nil
}

// CheckCSRF reports whether token is the session's CSRF token, in
// constant time.
func (sess *AdminSession) CheckCSRF(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(sess.CSRFToken)) == 1
}

// EndAdminSession deletes a panel session (signing out); the id stops
// working at once in every process sharing the store. Ending an unknown
// session succeeds.
func (s *Service) EndAdminSession(ctx context.Context, sessionID string) error {
	if sessionID == "" {
		return nil
	}
	return s.update(ctx, func(tx Tx, _ *events) error {
		return tx.DeleteAdminSession(ctx, HashToken(sessionID))
	})
}

// PruneAdminSessions deletes the panel sessions idle for idle or longer
// (0: DefaultAdminSessionIdle) and returns how many. Idle sessions are
// refused anyway; pruning only keeps the table small.
func (s *Service) PruneAdminSessions(ctx context.Context, idle time.Duration) (int, error) {
	if idle <= 0 {
		idle = DefaultAdminSessionIdle
	}
	var n int
	cutoff := s.now().Add(-idle)
	err := s.update(ctx, func(tx Tx, _ *events) error {
		var err error
		n, err = tx.DeleteIdleAdminSessions(ctx, cutoff)
		return err
	})
	return n, err
}

// randomToken returns 32 random bytes, base64url-encoded.
func randomToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

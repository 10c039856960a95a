package sqlite

import (
	"context"
	"time"

	chat "github.com/chatengine/chat"
)

// Admin panel passwords and sessions.

// nullBytes passes an empty byte slice as NULL.
func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// GetAdmin implements chat.AdminStore.
func (t *tx) GetAdmin(ctx context.Context, name string) (*chat.Admin, error) {
	as, err := keyed(t, ctx, scanAdmin, "SELECT "+adminCols+" FROM admins WHERE name = ?", name)
	if err != nil {
		return nil, err
	}
	if len(as) == 0 {
		return nil, notFound("admin", name)
	}
	return as[0], nil
}

// SetAdminPassword implements chat.AdminStore.
func (t *tx) SetAdminPassword(ctx context.Context, name string, hash []byte) error {
	n, err := t.execN(ctx, "UPDATE admins SET password_hash = ? WHERE name = ?", nullBytes(hash), name)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("admin", name)
	}
	return nil
}

const sessionCols = "id_hash, name, csrf_token, created_at, last_seen_at"

func scanSession(sc scanner) (*chat.AdminSession, error) {
	var s chat.AdminSession
	var created, seen int64
	if err := sc.Scan(&s.IDHash, &s.Name, &s.CSRFToken, &created, &seen); err != nil {
		return nil, err
	}
	s.CreatedAt, s.LastSeenAt = fromMs(created), fromMs(seen)
	return &s, nil
}

// CreateAdminSession implements chat.AdminSessionStore.
func (t *tx) CreateAdminSession(ctx context.Context, s *chat.AdminSession) error {
	_, err := t.exec(ctx, "INSERT INTO admin_sessions ("+sessionCols+") VALUES (?,?,?,?,?)",
		s.IDHash, s.Name, s.CSRFToken, ms(s.CreatedAt), ms(s.LastSeenAt))
	return asConflict(err, "admin session", s.Name)
}

// GetAdminSession implements chat.AdminSessionStore.
func (t *tx) GetAdminSession(ctx context.Context, idHash []byte) (*chat.AdminSession, error) {
	ss, err := keyed(t, ctx, scanSession, "SELECT "+sessionCols+" FROM admin_sessions WHERE id_hash = ?", idHash)
	if err != nil {
		return nil, err
	}
	if len(ss) == 0 {
		return nil, &chat.Error{Code: chat.CodeNotFound, Message: "admin session not found"}
	}
	return ss[0], nil
}

// TouchAdminSession implements chat.AdminSessionStore.
func (t *tx) TouchAdminSession(ctx context.Context, idHash []byte, now time.Time) error {
	n, err := t.execN(ctx, "UPDATE admin_sessions SET last_seen_at = ? WHERE id_hash = ?", ms(chat.NewTime(now)), idHash)
	if err != nil {
		return err
	}
	if n == 0 {
		return &chat.Error{Code: chat.CodeNotFound, Message: "admin session not found"}
	}
	return nil
}

// DeleteAdminSession implements chat.AdminSessionStore.
func (t *tx) DeleteAdminSession(ctx context.Context, idHash []byte) error {
	_, err := t.exec(ctx, "DELETE FROM admin_sessions WHERE id_hash = ?", idHash)
	return err
}

// DeleteAdminSessions implements chat.AdminSessionStore.
func (t *tx) DeleteAdminSessions(ctx context.Context, name string) (int, error) {
	n, err := t.execN(ctx, "DELETE FROM admin_sessions WHERE name = ?", name)
	return int(n), err
}

// DeleteIdleAdminSessions implements chat.AdminSessionStore.
func (t *tx) DeleteIdleAdminSessions(ctx context.Context, cutoff time.Time) (int, error) {
	n, err := t.execN(ctx, "DELETE FROM admin_sessions WHERE last_seen_at < ?", ms(chat.NewTime(cutoff)))
	return int(n), err
}

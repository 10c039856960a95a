package postgres

import (
	"context"
	"database/sql"
	"time"

	chat "github.com/chatengine/chat"
)

// ---- admin panel passwords and sessions ----

// nullBytes passes an empty byte slice as NULL.
func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

func (t *tx) GetAdmin(ctx context.Context, name string) (*chat.Admin, error) {
	as, err := t.admins(ctx, `SELECT `+adminCols+` FROM {s}admins WHERE name = $1`, name)
	if err != nil {
		return nil, err
	}
	if len(as) == 0 {
		return nil, chat.Errorf(chat.CodeNotFound, "admin %q not found", name)
	}
	return as[0], nil
}

func (t *tx) SetAdminPassword(ctx context.Context, name string, hash []byte) error {
	n, err := t.exec(ctx, `UPDATE {s}admins SET password_hash = $2 WHERE name = $1`, name, nullBytes(hash))
	if err != nil {
		return err
	}
	if n == 0 {
		return chat.Errorf(chat.CodeNotFound, "admin %q not found", name)
	}
	return nil
}

const sessionCols = `id_hash, name, csrf_token, created_at, last_seen_at`

func (t *tx) CreateAdminSession(ctx context.Context, s *chat.AdminSession) error {
	n, err := t.exec(ctx, `INSERT INTO {s}admin_sessions (`+sessionCols+`) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
		bytesArg(s.IDHash), s.Name, s.CSRFToken, timeArg(s.CreatedAt), timeArg(s.LastSeenAt))
	if err != nil {
		return err
	}
	if n == 0 {
		return chat.Errorf(chat.CodeConflict, "admin session already exists")
	}
	return nil
}

func (t *tx) GetAdminSession(ctx context.Context, idHash []byte) (*chat.AdminSession, error) {
	var out *chat.AdminSession
	err := t.query(ctx, `SELECT `+sessionCols+` FROM {s}admin_sessions WHERE id_hash = $1`, []any{bytesArg(idHash)}, func(r *sql.Rows) error {
		var s chat.AdminSession
		var created, seen time.Time
		if err := r.Scan(&s.IDHash, &s.Name, &s.CSRFToken, &created, &seen); err != nil {
			return err
		}
		s.CreatedAt, s.LastSeenAt = ct(created), ct(seen)
		out = &s
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, chat.Errorf(chat.CodeNotFound, "admin session not found")
	}
	return out, nil
}

func (t *tx) TouchAdminSession(ctx context.Context, idHash []byte, now time.Time) error {
	n, err := t.exec(ctx, `UPDATE {s}admin_sessions SET last_seen_at = $2 WHERE id_hash = $1`,
		bytesArg(idHash), timeArg(chat.NewTime(now)))
	if err != nil {
		return err
	}
	if n == 0 {
		return chat.Errorf(chat.CodeNotFound, "admin session not found")
	}
	return nil
}

func (t *tx) DeleteAdminSession(ctx context.Context, idHash []byte) error {
	_, err := t.exec(ctx, `DELETE FROM {s}admin_sessions WHERE id_hash = $1`, bytesArg(idHash))
	return err
}

func (t *tx) DeleteAdminSessions(ctx context.Context, name string) (int, error) {
	n, err := t.exec(ctx, `DELETE FROM {s}admin_sessions WHERE name = $1`, name)
	return int(n), err
}

func (t *tx) DeleteIdleAdminSessions(ctx context.Context, cutoff time.Time) (int, error) {
	n, err := t.exec(ctx, `DELETE FROM {s}admin_sessions WHERE last_seen_at < $1`, timeArg(chat.NewTime(cutoff)))
	return int(n), err
}

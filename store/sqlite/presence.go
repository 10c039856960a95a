package sqlite

import (
	"context"
	"database/sql"
	"time"

	chat "github.com/chatengine/chat"
)

// Write transactions run one at a time, so the locks of chat.PresenceStore
// hold by themselves and SKIP LOCKED skips nothing.

// PutPresenceProcess implements chat.PresenceStore.
func (t *tx) PutPresenceProcess(ctx context.Context, p *chat.PresenceProcess) error {
	_, err := t.exec(ctx, `INSERT INTO presence_processes (process_id, renewed_at, expires_at) VALUES (?,?,?)
		ON CONFLICT (process_id) DO UPDATE SET renewed_at = excluded.renewed_at, expires_at = excluded.expires_at`,
		p.ProcessID, ms(p.RenewedAt), ms(p.ExpiresAt))
	return err
}

// RenewPresenceProcess implements chat.PresenceStore.
func (t *tx) RenewPresenceProcess(ctx context.Context, processID string, now, until time.Time) (bool, error) {
	n, err := t.execN(ctx, `UPDATE presence_processes SET renewed_at = ?, expires_at = ?
		WHERE process_id = ? AND expires_at > ?`,
		ms(chat.NewTime(now)), ms(chat.NewTime(until)), processID, ms(chat.NewTime(now)))
	return n > 0, err
}

// ExpiredPresenceProcesses implements chat.PresenceStore
// (presence_processes_expires_idx).
func (t *tx) ExpiredPresenceProcesses(ctx context.Context, now time.Time, limit int) ([]*chat.PresenceProcess, error) {
	return list(t, ctx, func(sc scanner) (*chat.PresenceProcess, error) {
		var p chat.PresenceProcess
		var renewed, expires int64
		if err := sc.Scan(&p.ProcessID, &renewed, &expires); err != nil {
			return nil, err
		}
		p.RenewedAt, p.ExpiresAt = fromMs(renewed), fromMs(expires)
		return &p, nil
	}, `SELECT process_id, renewed_at, expires_at FROM presence_processes WHERE expires_at <= ?
		ORDER BY expires_at, process_id LIMIT `+limitParam, ms(chat.NewTime(now)), limitArg(limit))
}

func scanString(sc scanner) (string, error) {
	var s string
	err := sc.Scan(&s)
	return s, err
}

// DeletePresenceProcess implements chat.PresenceStore
// (presence_streams_process_idx).
func (t *tx) DeletePresenceProcess(ctx context.Context, processID string) ([]string, error) {
	if _, err := t.exec(ctx, `DELETE FROM presence_processes WHERE process_id = ?`, processID); err != nil {
		return nil, err
	}
	return list(t, ctx, scanString, `DELETE FROM presence_streams WHERE process_id = ? RETURNING user_id`, processID)
}

// AddPresenceStream implements chat.PresenceStore.
func (t *tx) AddPresenceStream(ctx context.Context, processID, userID string) error {
	_, err := t.exec(ctx, `INSERT INTO presence_streams (user_id, process_id) VALUES (?,?) ON CONFLICT DO NOTHING`,
		userID, processID)
	return err
}

// RemovePresenceStream implements chat.PresenceStore.
func (t *tx) RemovePresenceStream(ctx context.Context, processID, userID string) error {
	_, err := t.exec(ctx, `DELETE FROM presence_streams WHERE user_id = ? AND process_id = ?`, userID, processID)
	return err
}

// LivePresence implements chat.PresenceStore (the primary keys of
// presence_streams and presence_processes).
func (t *tx) LivePresence(ctx context.Context, userIDs []string, now time.Time) ([]string, error) {
	if len(userIDs) == 0 {
		return nil, nil
	}
	return list(t, ctx, scanString, `SELECT DISTINCT s.user_id FROM presence_streams s
		JOIN presence_processes p ON p.process_id = s.process_id
		WHERE s.user_id IN `+inIDs+` AND p.expires_at > ? ORDER BY s.user_id`, jsonIDs(userIDs), ms(chat.NewTime(now)))
}

func scanPresence(sc scanner) (*chat.PresenceState, error) {
	var p chat.PresenceState
	var active, since sql.NullInt64
	if err := sc.Scan(&p.UserID, &p.Online, &active, &since); err != nil {
		return nil, err
	}
	p.LastActiveAt, p.OfflineSince = fromMsp(active), fromMsp(since)
	return &p, nil
}

// LockPresence implements chat.PresenceStore.
func (t *tx) LockPresence(ctx context.Context, userID string) (*chat.PresenceState, error) {
	ps, err := list(t, ctx, scanPresence, `SELECT user_id, online, last_active_at, offline_since FROM users WHERE user_id = ?`, userID)
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, notFound("user", userID)
	}
	return ps[0], nil
}

// SetPresence implements chat.PresenceStore.
func (t *tx) SetPresence(ctx context.Context, p *chat.PresenceState) error {
	n, err := t.execN(ctx, `UPDATE users SET online = ?, last_active_at = ?, offline_since = ? WHERE user_id = ?`,
		p.Online, msp(p.LastActiveAt), msp(p.OfflineSince), p.UserID)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("user", p.UserID)
	}
	return nil
}

// LapsedPresence implements chat.PresenceStore (users_offline_since_idx).
func (t *tx) LapsedPresence(ctx context.Context, cutoff time.Time, limit int) ([]*chat.PresenceState, error) {
	return list(t, ctx, scanPresence, `SELECT user_id, online, last_active_at, offline_since FROM users
		WHERE offline_since IS NOT NULL AND offline_since <= ? AND online
		ORDER BY offline_since, user_id LIMIT `+limitParam, ms(chat.NewTime(cutoff)), limitArg(limit))
}

package postgres

import (
	"context"
	"database/sql"
	"time"

	chat "github.com/chatengine/chat"
)

const (
	// livePresenceQuery reads presence_streams by its primary key (user
	// first) and each row's lease by the primary key of
	// presence_processes.
	livePresenceQuery = `SELECT DISTINCT s.user_id FROM {s}presence_streams s
		JOIN {s}presence_processes p ON p.process_id = s.process_id
		WHERE s.user_id = ANY($1::text[]) AND p.expires_at > $2 ORDER BY s.user_id`
	// lapsedPresenceQuery reads users_offline_since_idx, which holds only
	// the users in a grace period.
	lapsedPresenceQuery = `SELECT user_id, online, last_active_at, offline_since FROM {s}users
		WHERE offline_since IS NOT NULL AND offline_since <= $1 AND online
		ORDER BY offline_since, user_id LIMIT $2`
)

// PutPresenceProcess implements chat.PresenceStore.
func (t *tx) PutPresenceProcess(ctx context.Context, p *chat.PresenceProcess) error {
	_, err := t.exec(ctx, `INSERT INTO {s}presence_processes (process_id, renewed_at, expires_at) VALUES ($1, $2, $3)
		ON CONFLICT (process_id) DO UPDATE SET renewed_at = EXCLUDED.renewed_at, expires_at = EXCLUDED.expires_at`,
		p.ProcessID, timeArg(p.RenewedAt), timeArg(p.ExpiresAt))
	return err
}

// RenewPresenceProcess implements chat.PresenceStore. A sweeper that
// holds the expired lease (ExpiredPresenceProcesses) makes it wait; the
// condition is then evaluated again on the row as that transaction left
// it (gone, or still expired).
func (t *tx) RenewPresenceProcess(ctx context.Context, processID string, now, until time.Time) (bool, error) {
	n, err := t.exec(ctx, `UPDATE {s}presence_processes SET renewed_at = $2, expires_at = $3
		WHERE process_id = $1 AND expires_at > $2`,
		processID, timeArg(chat.NewTime(now)), timeArg(chat.NewTime(until)))
	return n > 0, err
}

// ExpiredPresenceProcesses implements chat.PresenceStore
// (presence_processes_expires_idx); in an Update the rows are taken with
// FOR UPDATE SKIP LOCKED, so sweepers in several processes split them.
func (t *tx) ExpiredPresenceProcesses(ctx context.Context, now time.Time, limit int) ([]*chat.PresenceProcess, error) {
	skip := ""
	if t.write {
		skip = " FOR UPDATE SKIP LOCKED"
	}
	var args argList
	q := `SELECT process_id, renewed_at, expires_at FROM {s}presence_processes WHERE expires_at <= ` +
		args.add(timeArg(chat.NewTime(now))) + ` ORDER BY expires_at, process_id` + limitOffset(&args, limit, 0) + skip
	var out []*chat.PresenceProcess
	err := t.query(ctx, q, args, func(r *sql.Rows) error {
		var p chat.PresenceProcess
		var renewed, expires time.Time
		if err := r.Scan(&p.ProcessID, &renewed, &expires); err != nil {
			return err
		}
		p.RenewedAt, p.ExpiresAt = ct(renewed), ct(expires)
		out = append(out, &p)
		return nil
	})
	return out, err
}

// strings runs a query whose rows are one text column.
func (t *tx) strings(ctx context.Context, q string, args ...any) ([]string, error) {
	var out []string
	err := t.query(ctx, q, args, func(r *sql.Rows) error {
		var s string
		err := r.Scan(&s)
		out = append(out, s)
		return err
	})
	return out, err
}

// DeletePresenceProcess implements chat.PresenceStore
// (presence_streams_process_idx).
func (t *tx) DeletePresenceProcess(ctx context.Context, processID string) ([]string, error) {
	if _, err := t.exec(ctx, `DELETE FROM {s}presence_processes WHERE process_id = $1`, processID); err != nil {
		return nil, err
	}
	return t.strings(ctx, `WITH d AS (DELETE FROM {s}presence_streams WHERE process_id = $1 RETURNING user_id)
		SELECT user_id FROM d ORDER BY user_id`, processID)
}

// AddPresenceStream implements chat.PresenceStore.
func (t *tx) AddPresenceStream(ctx context.Context, processID, userID string) error {
	_, err := t.exec(ctx, `INSERT INTO {s}presence_streams (user_id, process_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
		userID, processID)
	return err
}

// RemovePresenceStream implements chat.PresenceStore.
func (t *tx) RemovePresenceStream(ctx context.Context, processID, userID string) error {
	_, err := t.exec(ctx, `DELETE FROM {s}presence_streams WHERE user_id = $1 AND process_id = $2`, userID, processID)
	return err
}

// LivePresence implements chat.PresenceStore (the primary keys of
// presence_streams and presence_processes).
func (t *tx) LivePresence(ctx context.Context, userIDs []string, now time.Time) ([]string, error) {
	if len(userIDs) == 0 {
		return nil, nil
	}
	return t.strings(ctx, livePresenceQuery, textArray(userIDs), timeArg(chat.NewTime(now)))
}

func (t *tx) presence(ctx context.Context, q string, args ...any) ([]*chat.PresenceState, error) {
	var out []*chat.PresenceState
	err := t.query(ctx, q, args, func(r *sql.Rows) error {
		var p chat.PresenceState
		var active, since sql.NullTime
		if err := r.Scan(&p.UserID, &p.Online, &active, &since); err != nil {
			return err
		}
		p.LastActiveAt, p.OfflineSince = ctp(active), ctp(since)
		out = append(out, &p)
		return nil
	})
	return out, err
}

// LockPresence implements chat.PresenceStore: in an Update the user's row
// is taken FOR NO KEY UPDATE, which does not stop the inserts that
// reference it.
func (t *tx) LockPresence(ctx context.Context, userID string) (*chat.PresenceState, error) {
	lock := ""
	if t.write {
		lock = " FOR NO KEY UPDATE"
	}
	ps, err := t.presence(ctx, `SELECT user_id, online, last_active_at, offline_since FROM {s}users WHERE user_id = $1`+lock, userID)
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, chat.Errorf(chat.CodeNotFound, "user %q not found", userID)
	}
	t.heldUser(userID)
	return ps[0], nil
}

// SetPresence implements chat.PresenceStore.
func (t *tx) SetPresence(ctx context.Context, p *chat.PresenceState) error {
	n, err := t.exec(ctx, `UPDATE {s}users SET online = $2, last_active_at = $3, offline_since = $4 WHERE user_id = $1`,
		p.UserID, p.Online, timePtrArg(p.LastActiveAt), timePtrArg(p.OfflineSince))
	if err != nil {
		return err
	}
	if n == 0 {
		return chat.Errorf(chat.CodeNotFound, "user %q not found", p.UserID)
	}
	t.heldUser(p.UserID)
	return nil
}

// LapsedPresence implements chat.PresenceStore (users_offline_since_idx);
// in an Update the rows are taken with FOR NO KEY UPDATE SKIP LOCKED.
func (t *tx) LapsedPresence(ctx context.Context, cutoff time.Time, limit int) ([]*chat.PresenceState, error) {
	skip := ""
	if t.write {
		skip = " FOR NO KEY UPDATE SKIP LOCKED"
	}
	var lim any // NULL: no limit
	if limit > 0 {
		lim = limit
	}
	return t.presence(ctx, lapsedPresenceQuery+skip, timeArg(chat.NewTime(cutoff)), lim)
}

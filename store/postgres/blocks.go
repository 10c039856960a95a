package postgres

import (
	"context"
	"database/sql"
	"time"

	chat "github.com/chatengine/chat"
)

// PutBlock implements chat.BlockStore.
func (t *tx) PutBlock(ctx context.Context, userID, blockedID string, now time.Time) (bool, error) {
	n, err := t.exec(ctx, `INSERT INTO {s}blocks (user_id, blocked_id, created_at) VALUES ($1, $2, $3)
		ON CONFLICT DO NOTHING`, userID, blockedID, timeArg(chat.NewTime(now)))
	return n == 1, err
}

// DeleteBlock implements chat.BlockStore.
func (t *tx) DeleteBlock(ctx context.Context, userID, blockedID string) (bool, error) {
	n, err := t.exec(ctx, `DELETE FROM {s}blocks WHERE user_id = $1 AND blocked_id = $2`, userID, blockedID)
	return n > 0, err
}

// ListBlocks implements chat.BlockStore.
func (t *tx) ListBlocks(ctx context.Context, userID string) ([]*chat.Block, error) {
	var out []*chat.Block
	err := t.query(ctx, `SELECT user_id, blocked_id, created_at FROM {s}blocks WHERE user_id = $1
		ORDER BY created_at, blocked_id`, []any{userID}, func(r *sql.Rows) error {
		var b chat.Block
		var at time.Time
		if err := r.Scan(&b.UserID, &b.BlockedID, &at); err != nil {
			return err
		}
		b.CreatedAt = chat.NewTime(at)
		out = append(out, &b)
		return nil
	})
	return out, err
}

// BlockersAmong implements chat.BlockStore.
func (t *tx) BlockersAmong(ctx context.Context, blockedID string, userIDs []string) ([]string, error) {
	if len(userIDs) == 0 {
		return nil, nil
	}
	var out []string
	err := t.query(ctx, `SELECT user_id FROM {s}blocks WHERE blocked_id = $1 AND user_id = ANY($2::text[])`,
		[]any{blockedID, textArray(userIDs)}, func(r *sql.Rows) error {
			var id string
			if err := r.Scan(&id); err != nil {
				return err
			}
			out = append(out, id)
			return nil
		})
	return out, err
}

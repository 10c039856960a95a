package sqlite

import (
	"context"
	"time"

	chat "github.com/chatengine/chat"
)

// PutBlock implements chat.BlockStore.
func (t *tx) PutBlock(ctx context.Context, userID, blockedID string, now time.Time) (bool, error) {
	n, err := t.execN(ctx, "INSERT OR IGNORE INTO blocks (user_id, blocked_id, created_at) VALUES (?,?,?)",
		userID, blockedID, ms(chat.NewTime(now)))
	return n > 0, err
}

// DeleteBlock implements chat.BlockStore.
func (t *tx) DeleteBlock(ctx context.Context, userID, blockedID string) (bool, error) {
	n, err := t.execN(ctx, "DELETE FROM blocks WHERE user_id = ? AND blocked_id = ?", userID, blockedID)
	return n > 0, err
}

func scanBlock(sc scanner) (*chat.Block, error) {
	var b chat.Block
	var at int64
	if err := sc.Scan(&b.UserID, &b.BlockedID, &at); err != nil {
		return nil, err
	}
	b.CreatedAt = fromMs(at)
	return &b, nil
}

// ListBlocks implements chat.BlockStore. Every message query of a user
// asks it (usually to find nothing); keyed runs it on the driver
// connection.
func (t *tx) ListBlocks(ctx context.Context, userID string) ([]*chat.Block, error) {
	return keyed(t, ctx, scanBlock, `SELECT user_id, blocked_id, created_at FROM blocks WHERE user_id = ?
		ORDER BY created_at, blocked_id`, userID)
}

// BlockersAmong implements chat.BlockStore.
func (t *tx) BlockersAmong(ctx context.Context, blockedID string, userIDs []string) ([]string, error) {
	if len(userIDs) == 0 {
		return nil, nil
	}
	return keyed(t, ctx, func(sc scanner) (string, error) {
		var id string
		err := sc.Scan(&id)
		return id, err
	}, "SELECT user_id FROM blocks WHERE blocked_id = ? AND user_id IN "+inIDs, blockedID, jsonIDs(userIDs))
}

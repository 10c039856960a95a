package sqlite

import (
	"context"
	"database/sql/driver"
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

// scanBlockValues is scanBlock from the driver's values (see rawList).
func scanBlockValues(v []driver.Value) (*chat.Block, error) {
	if len(v) != 3 {
		return nil, errColumns
	}
	text := func(x driver.Value) (string, bool) {
		switch x := x.(type) {
		case string:
			return x, true
		case []byte:
			return string(x), true
		}
		return "", false
	}
	u, ok1 := text(v[0])
	b, ok2 := text(v[1])
	at, ok3 := v[2].(int64)
	if !ok1 || !ok2 || !ok3 {
		return nil, errColumns
	}
	return &chat.Block{UserID: u, BlockedID: b, CreatedAt: fromMs(at)}, nil
}

// ListBlocks implements chat.BlockStore. Every message query of a user
// asks it (usually to find nothing), so it reads through rawList.
func (t *tx) ListBlocks(ctx context.Context, userID string) ([]*chat.Block, error) {
	return rawList(t, ctx, scanBlockValues, scanBlock, `SELECT user_id, blocked_id, created_at FROM blocks WHERE user_id = ?
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

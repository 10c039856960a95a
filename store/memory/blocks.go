package memory

import (
	"context"
	"sort"
	"time"

	chat "github.com/chatengine/chat"
)

// ---- blocks ----

// PutBlock implements chat.BlockStore.
func (t *tx) PutBlock(_ context.Context, userID, blockedID string, now time.Time) (bool, error) {
	if err := t.writable(); err != nil {
		return false, err
	}
	by := innerMap(t, t.d.blocks, userID)
	if _, ok := by[blockedID]; ok {
		return false, nil
	}
	setKey(t, by, blockedID, chat.NewTime(now))
	return true, nil
}

// DeleteBlock implements chat.BlockStore.
func (t *tx) DeleteBlock(_ context.Context, userID, blockedID string) (bool, error) {
	if err := t.writable(); err != nil {
		return false, err
	}
	by := t.d.blocks[userID]
	if _, ok := by[blockedID]; !ok {
		return false, nil
	}
	delKey(t, by, blockedID)
	return true, nil
}

// ListBlocks implements chat.BlockStore.
func (t *tx) ListBlocks(_ context.Context, userID string) ([]*chat.Block, error) {
	by := t.d.blocks[userID]
	if len(by) == 0 {
		return nil, nil
	}
	out := make([]*chat.Block, 0, len(by))
	for id, at := range by {
		out = append(out, &chat.Block{UserID: userID, BlockedID: id, CreatedAt: at})
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt.Time) {
			return out[i].CreatedAt.Before(out[j].CreatedAt.Time)
		}
		return out[i].BlockedID < out[j].BlockedID
	})
	return out, nil
}

// BlockersAmong implements chat.BlockStore.
func (t *tx) BlockersAmong(_ context.Context, blockedID string, userIDs []string) ([]string, error) {
	var out []string
	for _, u := range userIDs {
		if _, ok := t.d.blocks[u][blockedID]; ok {
			out = append(out, u)
		}
	}
	return out, nil
}

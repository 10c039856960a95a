package storetest

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

var blockCases = []tcase{
	{"PutListDelete", testBlockPutListDelete},
	{"BlockersAmong", testBlockersAmong},
	{"Rollback", testBlockRollback},
}

func (e *env) listBlocks(userID string) []*chat.Block {
	e.t.Helper()
	var out []*chat.Block
	e.view(func(tx chat.Tx) (err error) { out, err = tx.ListBlocks(e.ctx, userID); return })
	return out
}

func (e *env) putBlock(userID, blockedID string, ms int64) bool {
	e.t.Helper()
	var added bool
	e.update(func(tx chat.Tx) (err error) { added, err = tx.PutBlock(e.ctx, userID, blockedID, at(ms).Time); return })
	return added
}

func testBlockPutListDelete(t *testing.T, e *env) {
	require.Empty(t, e.listBlocks("alice"))
	require.True(t, e.putBlock("alice", "mallory", 2000))
	require.True(t, e.putBlock("alice", "bob", 1000))
	require.True(t, e.putBlock("alice", "carol", 2000))
	require.False(t, e.putBlock("alice", "bob", 3000), "blocking again is not new")
	require.True(t, e.putBlock("bob", "alice", 1000))
	// Oldest first, then by blocked id; the first time is kept.
	require.Equal(t, []*chat.Block{
		{UserID: "alice", BlockedID: "bob", CreatedAt: at(1000)},
		{UserID: "alice", BlockedID: "carol", CreatedAt: at(2000)},
		{UserID: "alice", BlockedID: "mallory", CreatedAt: at(2000)},
	}, e.listBlocks("alice"))
	require.Equal(t, "UTC", e.listBlocks("alice")[0].CreatedAt.Location().String())

	var deleted bool
	e.update(func(tx chat.Tx) (err error) { deleted, err = tx.DeleteBlock(e.ctx, "alice", "carol"); return })
	require.True(t, deleted)
	e.update(func(tx chat.Tx) (err error) { deleted, err = tx.DeleteBlock(e.ctx, "alice", "carol"); return })
	require.False(t, deleted, "nothing left to delete")
	e.update(func(tx chat.Tx) (err error) { deleted, err = tx.DeleteBlock(e.ctx, "nobody", "alice"); return })
	require.False(t, deleted)
	require.Len(t, e.listBlocks("alice"), 2)
	require.Equal(t, []*chat.Block{{UserID: "bob", BlockedID: "alice", CreatedAt: at(1000)}}, e.listBlocks("bob"))
}

func testBlockersAmong(t *testing.T, e *env) {
	e.putBlock("alice", "mallory", 1000)
	e.putBlock("carol", "mallory", 1000)
	e.putBlock("mallory", "dave", 1000)
	var got []string
	e.view(func(tx chat.Tx) (err error) {
		got, err = tx.BlockersAmong(e.ctx, "mallory", []string{"alice", "bob", "carol", "dave", "mallory"})
		return
	})
	sort.Strings(got)
	require.Equal(t, []string{"alice", "carol"}, got)
	e.view(func(tx chat.Tx) (err error) {
		got, err = tx.BlockersAmong(e.ctx, "mallory", []string{"bob", "dave"})
		return
	})
	require.Empty(t, got)
	e.view(func(tx chat.Tx) (err error) { got, err = tx.BlockersAmong(e.ctx, "mallory", nil); return })
	require.Empty(t, got)
}

func testBlockRollback(t *testing.T, e *env) {
	e.putBlock("alice", "bob", 1000)
	err := e.s.Update(e.ctx, func(tx chat.Tx) error {
		if _, err := tx.PutBlock(e.ctx, "alice", "carol", at(2000).Time); err != nil {
			return err
		}
		if _, err := tx.DeleteBlock(e.ctx, "alice", "bob"); err != nil {
			return err
		}
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
	require.Equal(t, []*chat.Block{{UserID: "alice", BlockedID: "bob", CreatedAt: at(1000)}}, e.listBlocks("alice"))
}

package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// docsRows returns the rows of search_docs of word: "bucket first n msgs"
// (msgs NULL when the row holds first alone).
func docsRows(t *testing.T, s *Store, word string) []string {
	t.Helper()
	rows, err := s.rdb.Query(`SELECT d.bucket, d.first, d.n, coalesce(d.msgs, 'NULL') FROM search_docs d
		JOIN search_vocab v ON v.id = d.word_id WHERE v.word = ? ORDER BY d.bucket, d.first`, word)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var b, first, n int64
		var msgs string
		require.NoError(t, rows.Scan(&b, &first, &n, &msgs))
		out = append(out, fmt.Sprintf("%d %d %d %s", b, first, n, msgs))
	}
	require.NoError(t, rows.Err())
	return out
}

// searchIDs returns the ids of the messages SearchMessages finds for f.
func searchIDs(t *testing.T, s *Store, f chat.MessageSearch) []string {
	t.Helper()
	var ids []string
	require.NoError(t, s.View(context.Background(), func(tx chat.Tx) error {
		ms, err := tx.SearchMessages(context.Background(), f)
		for _, m := range ms {
			ids = append(ids, m.MessageID)
		}
		return err
	}))
	return ids
}

// TestSearchDocsRows: IndexSearch writes one row of search_docs per word
// and bucket of its batch, holding the batch's messages with the word; an
// edit takes a message out of its words' rows (a row left empty is
// deleted) and puts it back, also into the row it was the first of.
func TestSearchDocsRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, nil)
	later := t0.Add(time.Second)
	require.NoError(t, s.Update(ctx, func(ctx2 chat.Tx) error {
		tx := ctx2.(*tx)
		if err := tx.CreateChannel(ctx, testChannel("c")); err != nil {
			return err
		}
		for i := 0; i < 5; i++ {
			m, err := postMessage(ctx, tx, "c", fmt.Sprintf("m%d", i), fmt.Sprintf("alpha beta w%d", i))
			if err != nil {
				return err
			}
			if i >= 3 {
				// Another bucket: later createdAt, stored after the others.
				if _, err := tx.exec(ctx, "UPDATE messages SET created_at = ? WHERE message_id = ?", later.UnixMilli(), m.MessageID); err != nil {
					return err
				}
			}
		}
		return nil
	}))
	n, err := s.IndexSearch(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, 5, n)
	var ids string
	require.NoError(t, s.rdb.QueryRow("SELECT json_group_array(rowid) FROM (SELECT rowid FROM messages ORDER BY rowid)").Scan(&ids))
	var rowids []int64
	require.NoError(t, json.Unmarshal([]byte(ids), &rowids))
	require.Len(t, rowids, 5)
	b0, b1 := t0.UnixMilli()>>searchBucketShift, later.UnixMilli()>>searchBucketShift
	require.Less(t, b0, b1)
	row := func(b, first int64, ids ...int64) string {
		msgs := "NULL"
		if len(ids) > 1 || ids[0] != first {
			msgs = mustJSONInts(t, ids)
		}
		return fmt.Sprintf("%d %d %d %s", b, first, len(ids), msgs)
	}
	r := rowids
	require.Equal(t, []string{row(b0, r[0], r[0], r[1], r[2]), row(b1, r[3], r[3], r[4])}, docsRows(t, s, "alpha"))
	require.Equal(t, []string{row(b0, r[2], r[2])}, docsRows(t, s, "w2"))
	newestFirst := []string{"m4", "m3", "m2", "m1", "m0"}
	require.Equal(t, newestFirst, searchIDs(t, s, chat.MessageSearch{Words: []string{"alpha"}}))
	require.Equal(t, newestFirst, searchIDs(t, s, chat.MessageSearch{Words: []string{"alpha", "beta"}}))
	require.Equal(t, []string{"m0", "m1", "m2", "m3", "m4"}, searchIDs(t, s, chat.MessageSearch{Words: []string{"alpha"},
		Before: &chat.MessageSearchCursor{CreatedAt: t0.Add(-time.Hour), MessageID: ""}}))
	require.Equal(t, []string{"m2", "m1"}, searchIDs(t, s, chat.MessageSearch{Words: []string{"alpha"}, Limit: 2,
		After: &chat.MessageSearchCursor{CreatedAt: t0, MessageID: "m3"}}))

	edit := func(id, text string) {
		t.Helper()
		require.NoError(t, s.Update(ctx, func(tx chat.Tx) error {
			m, err := tx.GetMessage(ctx, id)
			if err != nil {
				return err
			}
			m.Data = map[string]any{"text": text}
			return tx.UpdateMessage(ctx, m)
		}))
	}
	// m0, the first of its row, loses alpha, then w0: the alpha row keeps
	// its key and the others; w0's row is deleted.
	edit("m0", "beta w0")
	edit("m0", "beta")
	require.Equal(t, []string{row(b0, r[0], r[1], r[2]), row(b1, r[3], r[3], r[4])}, docsRows(t, s, "alpha"))
	require.Empty(t, docsRows(t, s, "w0"))
	require.Equal(t, []string{"m4", "m3", "m2", "m1"}, searchIDs(t, s, chat.MessageSearch{Words: []string{"alpha"}}))
	require.Empty(t, searchIDs(t, s, chat.MessageSearch{Words: []string{"w0"}}))
	// And gets alpha back: into the row it is the first of, once.
	edit("m0", "alpha beta gamma")
	require.Equal(t, []string{row(b0, r[0], r[1], r[2], r[0]), row(b1, r[3], r[3], r[4])}, docsRows(t, s, "alpha"))
	require.Equal(t, []string{row(b0, r[0], r[0])}, docsRows(t, s, "gamma"))
	require.Equal(t, newestFirst, searchIDs(t, s, chat.MessageSearch{Words: []string{"alpha"}}))
	require.Equal(t, []string{"m0"}, searchIDs(t, s, chat.MessageSearch{Words: []string{"alpha", "gam"}, Prefix: true}))
}

func mustJSONInts(t *testing.T, ids []int64) string {
	t.Helper()
	b, err := json.Marshal(ids)
	require.NoError(t, err)
	return string(b)
}

// TestMigrateSearchDocs upgrades a database indexed in search_postings
// (before migration 26): its postings become rows of search_docs, one per
// word and bucket, and what was found is found, in the same order.
func TestMigrateSearchDocs(t *testing.T) {
	t.Parallel()
	requireCgo(t)
	ctx := context.Background()
	path, db := migratedBefore(t, "search_docs")
	// Messages a0-a2 in one bucket, a3 in the next, b0 without the word;
	// a4 stored but not yet indexed.
	at := []int64{16000, 16001, 16015, 16016, 16002, 16003}
	for i, id := range []string{"a0", "a1", "a2", "a3", "b0", "a4"} {
		text := "apple pie"
		if id == "b0" {
			text = "banana"
		}
		_, err := db.ExecContext(ctx, `INSERT INTO messages (rowid, message_id, channel_id, channel_segment, user_id, type, data, text, created_at, updated_at)
			VALUES (?, ?, 'c', ?, 'u', 'text', '', ?, ?, ?)`, i+1, id, i+1, text, at[i], at[i])
		require.NoError(t, err)
	}
	execAll(t, db,
		"INSERT INTO search_vocab (id, word) VALUES (1, 'apple'), (2, 'pie'), (3, 'banana')",
		`INSERT INTO search_postings (word_id, created_at, msg) VALUES (1, 16000, 1), (2, 16000, 1), (1, 16001, 2), (2, 16001, 2),
			(1, 16015, 3), (2, 16015, 3), (1, 16016, 4), (2, 16016, 4), (3, 16002, 5)`,
		"UPDATE meta SET value = '5' WHERE key = 'search.indexed'")
	s := upgrade(t, path, db)
	require.Equal(t, []string{"1000 1 3 [1,2,3]", "1001 4 1 NULL"}, docsRows(t, s, "apple"))
	require.Equal(t, []string{"1000 5 1 NULL"}, docsRows(t, s, "banana"))
	require.Equal(t, []string{"a3", "a2", "a1", "a0"}, searchIDs(t, s, chat.MessageSearch{Words: []string{"apple", "pie"}}))
	n, err := s.IndexSearch(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the position is kept")
	// a4 is in a second row of the first bucket, and sorted by createdAt
	// among that bucket's messages.
	require.Equal(t, []string{"1000 1 3 [1,2,3]", "1000 6 1 NULL", "1001 4 1 NULL"}, docsRows(t, s, "apple"))
	require.Equal(t, []string{"a3", "a2", "a4", "a1", "a0"}, searchIDs(t, s, chat.MessageSearch{Words: []string{"apple"}}))
	require.Equal(t, []string{"a3", "a2", "a4", "a1", "a0"}, searchIDs(t, s, chat.MessageSearch{Words: []string{"app"}, Prefix: true}))
	require.Equal(t, []string{"a2", "a4"}, searchIDs(t, s, chat.MessageSearch{Words: []string{"apple", "pie"}, Limit: 2,
		After: &chat.MessageSearchCursor{CreatedAt: time.UnixMilli(16016), MessageID: "a3"}}))
}

package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	chat "github.com/chatengine/chat"
)

// searchProbe bounds the count of one word's rows of search_docs that
// SearchMessages reads, and the count of their messages it takes, to
// choose the word that drives a search (see SearchMessages).
const searchProbe = 2000

// searchScopeProbe bounds the count of the messages of a search's channels
// that SearchMessages reads: fewer are read one by one.
const searchScopeProbe = 500

// writeUserKeys replaces the search keys of a user (chat.IDKey and
// chat.NameKeys) in user_keys.
func (t *tx) writeUserKeys(ctx context.Context, userID, displayName string, replace bool) error {
	if replace {
		if _, err := t.exec(ctx, "DELETE FROM user_keys WHERE user_id = ?", userID); err != nil {
			return err
		}
	}
	keys := append([]string{chat.IDKey(userID)}, chat.NameKeys(displayName)...)
	_, err := t.exec(ctx, "INSERT OR IGNORE INTO user_keys (key, user_id) SELECT value, ? FROM json_each(?)", userID, jsonIDs(keys))
	return err
}

// searchCursor is the meta row holding the rowid of the last message
// IndexSearch indexed (see migration *_message_search_index.sql).
const searchCursor = "search.indexed"

// DefaultSearchBatch is the number of messages IndexSearch indexes in one
// transaction when asked for max <= 0.
const DefaultSearchBatch = 2000

// wordsRow is a message as the search index sees it: its rowid, createdAt
// (milliseconds) and the fields chat.MessageWords reads.
type wordsRow struct {
	rowid   int64
	created int64
	typ     chat.MessageType
	data    string
	text    sql.NullString // the text column: when set, data is '' (see messageCols)
	deleted bool
}

// wordsDataCols are the data and text columns of a wordsRow.
const wordsDataCols = "CASE WHEN text IS NULL THEN data ELSE '' END, text"

// words returns the search words of the row (chat.MessageWords).
func (r *wordsRow) words() ([]string, error) {
	m := chat.Message{Type: r.typ, IsDeleted: r.deleted}
	if r.deleted || (r.typ != chat.MessageTypeText && r.typ != chat.MessageTypeImage && r.typ != chat.MessageTypeFile) {
		return nil, nil
	}
	if r.text.Valid {
		m.Data = map[string]any{"text": r.text.String}
	} else if err := fromJSON(r.data, &m.Data); err != nil {
		return nil, err
	}
	return chat.MessageWords(&m), nil
}

// searchBucketShift: a row of search_docs holds messages of one bucket
// of createdAt, created_at >> searchBucketShift (16 ms; see migration
// *_search_docs.sql, which groups the older index the same way).
const searchBucketShift = 4

// searchBucket is the shift of a createdAt to its bucket in SQL.
var searchBucket = ">> " + strconv.Itoa(searchBucketShift)

// posting is a message's words to add to the index: its rowid and
// createdAt (milliseconds).
type posting struct {
	rowid, created int64
	words          []string
}

// docsEach returns the table of the rowids of the row of search_docs
// named a: json_each over its msgs, or over its first alone when msgs is
// NULL (a row of one message stores its rowid once, in first).
func docsEach(a string) string {
	return "json_each(coalesce(" + a + ".msgs, json_array(" + a + ".first)))"
}

// docsHas returns the condition that the row of search_docs named a
// holds the message whose rowid is the expression id.
func docsHas(a, id string) string {
	return "CASE WHEN " + a + ".msgs IS NULL THEN " + a + ".first = " + id + " ELSE EXISTS (SELECT 1 FROM json_each(" + a + ".msgs) WHERE value = " + id + ") END"
}

// docsKey is a row of search_docs being written: a word and a bucket.
type docsKey struct {
	word   string
	bucket int64
}

// addPostings numbers the new words of ps (one statement for all) and
// adds the messages of ps to search_docs: one row per word and bucket of
// ps, holding the rowids of the messages of ps in that bucket that hold
// the word (msgs NULL when there is one), one statement each. ps is in
// rowid order, so a row's first rowid is its smallest. A row whose key
// exists already (a word an edit gives back to the first message of a
// row) gains the rowids.
func (t *tx) addPostings(ctx context.Context, ps []posting) error {
	var words []string
	var keys []docsKey
	rows := map[docsKey][]int64{}
	seen := map[string]bool{}
	for _, p := range ps {
		b := p.created >> searchBucketShift
		for _, w := range p.words {
			if !seen[w] {
				seen[w] = true
				words = append(words, w)
			}
			k := docsKey{w, b}
			if _, ok := rows[k]; !ok {
				keys = append(keys, k)
			}
			rows[k] = append(rows[k], p.rowid)
		}
	}
	if len(words) == 0 {
		return nil
	}
	if _, err := t.exec(ctx, "INSERT OR IGNORE INTO search_vocab (word) SELECT value FROM json_each(?)", jsonIDs(words)); err != nil {
		return err
	}
	for _, k := range keys {
		ids := rows[k]
		var msgs any // NULL: ids[0] alone
		if len(ids) > 1 {
			b, err := json.Marshal(ids)
			if err != nil {
				return err
			}
			msgs = string(b)
		}
		if _, err := t.exec(ctx, `INSERT INTO search_docs (word_id, bucket, first, n, msgs)
		SELECT id, ?, ?, ?, ? FROM search_vocab WHERE word = ?
		ON CONFLICT (word_id, bucket, first) DO UPDATE SET n = n + excluded.n,
		msgs = (SELECT json_group_array(value) FROM (SELECT value FROM `+docsEach("search_docs")+` UNION ALL SELECT value FROM `+docsEach("excluded")+`))`,
			k.bucket, ids[0], len(ids), msgs, k.word); err != nil {
			return err
		}
	}
	return nil
}

// removePostings removes the message (rowid, created) from the rows of
// search_docs of the words ws, and deletes the rows it leaves empty.
func (t *tx) removePostings(ctx context.Context, rowid, created int64, ws []string) error {
	if len(ws) == 0 {
		return nil
	}
	const words = "word_id IN (SELECT v.id FROM json_each(?) j CROSS JOIN search_vocab v ON v.word = j.value) AND bucket = ?"
	b := created >> searchBucketShift
	if _, err := t.exec(ctx, `UPDATE search_docs SET n = n - 1,
		msgs = (SELECT json_group_array(value) FROM `+docsEach("search_docs")+` WHERE value <> ?)
		WHERE `+words+` AND EXISTS (SELECT 1 FROM `+docsEach("search_docs")+` WHERE value = ?)`, rowid, jsonIDs(ws), b, rowid); err != nil {
		return err
	}
	_, err := t.exec(ctx, "DELETE FROM search_docs WHERE "+words+" AND n = 0", jsonIDs(ws), b)
	return err
}

// searchIndexed returns the rowid of the last message IndexSearch indexed.
func (t *tx) searchIndexed(ctx context.Context) (int64, error) {
	var v string
	if err := t.row(ctx, "SELECT value FROM meta WHERE key = ?", []any{searchCursor}, &v); err != nil {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

// reindexMessage keeps the index of an edited message: when the message
// (whose row before the edit is old) is already indexed, the words it lost
// are deleted and the words it gained added, in the edit's transaction. A
// message not yet indexed is left to IndexSearch, which reads it as it is
// then.
func (t *tx) reindexMessage(ctx context.Context, old *wordsRow, m *chat.Message) error {
	done, err := t.searchIndexed(ctx)
	if err != nil || old.rowid > done {
		return err
	}
	was, err := old.words()
	if err != nil {
		return err
	}
	now := chat.MessageWords(m)
	if slices.Equal(was, now) {
		return nil
	}
	if err := t.removePostings(ctx, old.rowid, old.created, minus(was, now)); err != nil {
		return err
	}
	return t.addPostings(ctx, []posting{{old.rowid, old.created, minus(now, was)}})
}

// minus returns the words of a that are not in b.
func minus(a, b []string) []string {
	var out []string
	for _, w := range a {
		if !slices.Contains(b, w) {
			out = append(out, w)
		}
	}
	return out
}

// IndexSearch indexes, in one write transaction, the messages stored
// after the last one indexed, at most max of them (DefaultSearchBatch when
// max <= 0), and returns how many it read; fewer than max means it caught
// up. When nothing is new it only reads. Messages are taken in rowid
// order, the order of their commits; the position is the meta row
// 'search.indexed', written in the same transaction, so a store that was
// closed, or ran without an indexer, catches up from where it stopped.
// It implements chat.SearchIndexer; chat.SearchIndexerRunner calls it.
//
// The words are found before the write transaction, from a read of the
// same rows (about a third of the work, which posts would otherwise wait
// for); the transaction reads the rows again and finds anew the words of
// any row that differs from that read (edited or deleted meanwhile, or
// new).
func (s *Store) IndexSearch(ctx context.Context, max int) (int, error) {
	if max <= 0 {
		max = DefaultSearchBatch
	}
	var read []wordsRow
	var words [][]string
	if err := s.View(ctx, func(ctx2 chat.Tx) error {
		t := ctx2.(*tx)
		var err error
		if read, err = t.unindexed(ctx, max); err != nil {
			return err
		}
		words = make([][]string, len(read))
		for i := range read {
			if words[i], err = read[i].words(); err != nil {
				return err
			}
		}
		return nil
	}); err != nil || len(read) == 0 {
		return 0, err
	}
	return s.indexRead(ctx, max, read, words)
}

// indexRead is the write transaction of IndexSearch: words[i] are the
// words of read[i], a read of the rows to index made before it.
func (s *Store) indexRead(ctx context.Context, max int, read []wordsRow, words [][]string) (int, error) {
	n := 0
	err := s.Update(ctx, func(ctx2 chat.Tx) error {
		t := ctx2.(*tx)
		rows, err := t.unindexed(ctx, max)
		if err != nil {
			return err
		}
		n = len(rows)
		if n == 0 {
			return nil
		}
		ps := make([]posting, 0, n)
		for i := range rows {
			var ws []string
			if j, ok := slices.BinarySearchFunc(read, rows[i].rowid, func(r wordsRow, id int64) int { return cmp.Compare(r.rowid, id) }); ok && read[j] == rows[i] {
				ws = words[j]
			} else if ws, err = rows[i].words(); err != nil {
				return err
			}
			if len(ws) > 0 {
				ps = append(ps, posting{rows[i].rowid, rows[i].created, ws})
			}
		}
		if err := t.addPostings(ctx, ps); err != nil {
			return err
		}
		_, err = t.exec(ctx, "UPDATE meta SET value = ? WHERE key = ?", strconv.FormatInt(rows[n-1].rowid, 10), searchCursor)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// unindexed reads the messages after the position of the index, at most
// max of them, in rowid order: a range of the rowid bounded by max, read
// with keyed.
func (t *tx) unindexed(ctx context.Context, max int) ([]wordsRow, error) {
	done, err := t.searchIndexed(ctx)
	if err != nil {
		return nil, err
	}
	return keyed(t, ctx, func(sc scanner) (wordsRow, error) {
		var r wordsRow
		err := sc.Scan(&r.rowid, &r.created, &r.typ, &r.data, &r.text, &r.deleted)
		return r, err
	}, "SELECT rowid, created_at, type, "+wordsDataCols+", is_deleted FROM messages WHERE rowid > ? ORDER BY rowid LIMIT "+limitParam, done, max)
}

// memberChannels selects the channels where the user (the argument) is a
// member.
const memberChannels = "(SELECT channel_id FROM channel_users WHERE user_id = ? AND membership = 'member')"

// wordCond returns the condition on column col that selects one search
// key (a prefix range when prefix is set) and its arguments.
func wordCond(col, w string, prefix bool) (string, []any) {
	if !prefix {
		return col + " = " + textParam, []any{w}
	}
	lo, hi := prefixRange(w)
	if hi == "" {
		return col + " >= ?", []any{lo}
	}
	return "(" + col + " >= ? AND " + col + " < ?)", []any{lo, hi}
}

// wordIDCond returns the condition on col, a column of word numbers
// (search_vocab), that selects one search word (the words of a prefix
// range when prefix is set) and its arguments.
func wordIDCond(col, w string, prefix bool) (string, []any) {
	if !prefix {
		return col + " = (SELECT id FROM search_vocab WHERE word = " + textParam + ")", []any{w}
	}
	c, a := wordCond("word", w, true)
	return col + " IN (SELECT id FROM search_vocab WHERE " + c + ")", a
}

// SearchMessages implements chat.SearchStore from search_docs (see
// migration *_search_docs.sql); messages not yet indexed are not found. A
// search in one channel, or in a member's channels, that hold fewer than
// searchScopeProbe messages reads those messages (by channel) and checks each
// word by a point lookup (the word's rows of the message's bucket), then
// sorts. Otherwise it counts, for each word, at most searchProbe of its
// messages (in at most searchProbe rows) and lets the word with the fewest
// drive: an exact word walks its rows bucket by bucket, newest first,
// joined to messages for the scope, sorting each bucket's messages, and
// stops at the limit; a prefix word that drives has fewer than searchProbe
// messages (or is the only word), which are sorted. Every other word is
// checked by a point lookup.
func (t *tx) SearchMessages(ctx context.Context, f chat.MessageSearch) ([]*chat.Message, error) {
	if len(f.Words) == 0 {
		return nil, nil
	}
	isPrefix := func(i int) bool { return f.Prefix && i == len(f.Words)-1 }
	// The scope, on messages m.
	var scope []string
	var sargs []any
	if f.ChannelID != "" {
		scope = append(scope, "m.channel_id = "+textParam)
		sargs = append(sargs, f.ChannelID)
	}
	if f.MemberOf != "" {
		scope = append(scope, "m.channel_id IN "+memberChannels)
		sargs = append(sargs, f.MemberOf)
	}
	// One statement counts, at most to their probes, the scope's messages
	// and each word's messages (a single exact word drives whatever its
	// count: it is not counted).
	var cq []string
	var cargs []any
	if len(scope) > 0 {
		cq = append(cq, "(SELECT count(*) FROM (SELECT 1 FROM messages m WHERE "+scope[0]+" LIMIT "+strconv.Itoa(searchScopeProbe)+"))")
		cargs = append(cargs, sargs[0])
	}
	counted := len(f.Words) > 1 || f.Prefix
	if counted {
		probe := strconv.Itoa(searchProbe)
		for i, w := range f.Words {
			c, a := wordIDCond("word_id", w, isPrefix(i))
			cq = append(cq, "(SELECT min(coalesce(sum(n), 0), "+probe+") FROM (SELECT n FROM search_docs WHERE "+c+" LIMIT "+probe+"))")
			cargs = append(cargs, a...)
		}
	}
	counts := make([]int64, len(cq))
	dest := make([]any, len(counts))
	for i := range counts {
		dest[i] = &counts[i]
	}
	if len(cq) > 0 {
		if err := t.row(ctx, "SELECT "+strings.Join(cq, ", "), cargs, dest...); err != nil {
			return nil, err
		}
	}
	if len(scope) > 0 {
		if counts[0] < searchScopeProbe {
			return t.searchScope(ctx, f, scope, sargs)
		}
		counts = counts[1:]
	}
	if !counted {
		return t.searchWalk(ctx, f, scope, sargs, 0)
	}
	d := 0
	for i, n := range counts {
		if n == 0 {
			return nil, nil
		}
		// Fewer rows drive; at the cap an exact word beats a prefix.
		if n < counts[d] || n == counts[d] && isPrefix(d) {
			d = i
		}
	}
	if isPrefix(d) {
		// The messages holding a word of the prefix, sorted.
		c, a := wordIDCond("p.word_id", f.Words[d], true)
		where := []string{"m.rowid IN (SELECT e.value FROM search_docs p, " + docsEach("p") + " e WHERE " + c + ")"}
		return t.searchWhere(ctx, f, append(where, scope...), append(a, sargs...), d)
	}
	return t.searchWalk(ctx, f, scope, sargs, d)
}

// searchFilters returns the conditions on messages m every search has
// (live, author, the keyset position) and the point lookups of the words
// other than skip (-1: all), with their arguments.
func searchFilters(f chat.MessageSearch, skip int) ([]string, []any) {
	where := []string{"NOT m.is_deleted"}
	var args []any
	if f.UserID != "" {
		where = append(where, "m.user_id = ?")
		args = append(args, f.UserID)
	}
	if f.After != nil {
		where = append(where, "(m.created_at, m.message_id) < (?, ?)")
		args = append(args, f.After.CreatedAt.UnixMilli(), f.After.MessageID)
	}
	if f.Before != nil {
		where = append(where, "(m.created_at, m.message_id) > (?, ?)")
		args = append(args, f.Before.CreatedAt.UnixMilli(), f.Before.MessageID)
	}
	for i, w := range f.Words {
		if i == skip {
			continue
		}
		c, a := wordIDCond("x.word_id", w, f.Prefix && i == len(f.Words)-1)
		where = append(where, "EXISTS (SELECT 1 FROM search_docs x WHERE "+c+" AND x.bucket = m.created_at "+searchBucket+" AND "+docsHas("x", "m.rowid")+")")
		args = append(args, a...)
	}
	return where, args
}

// searchScope answers a search whose scope holds few messages: those
// messages, each word checked by a point lookup, sorted.
func (t *tx) searchScope(ctx context.Context, f chat.MessageSearch, scope []string, sargs []any) ([]*chat.Message, error) {
	return t.searchWhere(ctx, f, scope, sargs, -1)
}

// searchWhere selects the messages matching where (with args) and the
// filters of f (the words other than skip), in the search order, sorted.
func (t *tx) searchWhere(ctx context.Context, f chat.MessageSearch, where []string, args []any, skip int) ([]*chat.Message, error) {
	fw, fa := searchFilters(f, skip)
	where = append(where, fw...)
	args = append(append([]any{}, args...), fa...)
	order := " ORDER BY m.created_at DESC, m.message_id DESC"
	if f.Before != nil {
		order = " ORDER BY m.created_at, m.message_id"
	}
	q := "SELECT " + messageCols + " FROM messages m WHERE " + strings.Join(where, " AND ") + order + " LIMIT " + limitParam
	return list(t, ctx, newMessageRow(f.Limit).scan, q, append(args, limitArg(f.Limit))...)
}

// searchWalk walks the rows of the exact word d bucket by bucket, newest
// first (oldest first with Before), joined to messages, to the limit.
// Buckets are ranges of createdAt, so sorting each bucket's messages (by
// createdAt, then messageId) gives the search order.
func (t *tx) searchWalk(ctx context.Context, f chat.MessageSearch, scope []string, sargs []any, d int) ([]*chat.Message, error) {
	c, a := wordIDCond("p.word_id", f.Words[d], false)
	fw, fa := searchFilters(f, d)
	where := append(append([]string{c}, scope...), fw...)
	args := append(append(append([]any{}, a...), sargs...), fa...)
	if f.After != nil {
		where = append(where, "p.bucket <= ?")
		args = append(args, f.After.CreatedAt.UnixMilli()>>searchBucketShift)
	}
	if f.Before != nil {
		where = append(where, "p.bucket >= ?")
		args = append(args, f.Before.CreatedAt.UnixMilli()>>searchBucketShift)
	}
	order := " ORDER BY p.bucket DESC, m.created_at DESC, m.message_id DESC"
	if f.Before != nil {
		order = " ORDER BY p.bucket, m.created_at, m.message_id"
	}
	q := "SELECT " + messageCols + " FROM search_docs p, " + docsEach("p") + " e CROSS JOIN messages m ON m.rowid = e.value WHERE " +
		strings.Join(where, " AND ") + order + " LIMIT " + limitParam
	return list(t, ctx, newMessageRow(f.Limit).scan, q, append(args, limitArg(f.Limit))...)
}

// backfillBatch is the number of users indexed per
// transaction by backfillSearch.
const backfillBatch = 500

// backfillSearch indexes the users stored before migration
// *_search.sql (whose words come from Go code, not SQL); see backfill.
func (s *Store) backfillSearch(ctx context.Context) error {
	return s.backfill(ctx, "search.backfill", (*tx).backfillStep)
}

// backfill runs step, a batch per transaction, while the meta row key
// exists: step indexes the batch after the cursor kept in that row and
// returns the next cursor, "" when done (then the row is deleted). A store
// without the row starts with one read transaction and no write. Writes
// made meanwhile index themselves.
func (s *Store) backfill(ctx context.Context, key string, step func(t *tx, ctx context.Context, cur string) (string, error)) error {
	pending := false
	if err := s.View(ctx, func(tx chat.Tx) error {
		_, err := tx.GetMeta(ctx, key)
		pending = err == nil
		if chat.ErrorCode(err) == chat.CodeNotFound {
			return nil
		}
		return err
	}); err != nil || !pending {
		return err
	}
	for {
		done := false
		err := s.Update(ctx, func(ctx2 chat.Tx) error {
			t := ctx2.(*tx)
			var cur string
			if err := t.row(ctx, "SELECT value FROM meta WHERE key = ?", []any{key}, &cur); err != nil {
				if chat.ErrorCode(err) == chat.CodeNotFound {
					done = true
					return nil
				}
				return err
			}
			next, err := step(t, ctx, cur)
			if err != nil {
				return err
			}
			if next == "" {
				done = true
				_, err = t.exec(ctx, "DELETE FROM meta WHERE key = ?", key)
				return err
			}
			_, err = t.exec(ctx, "UPDATE meta SET value = ? WHERE key = ?", next, key)
			return err
		})
		if err != nil || done {
			return err
		}
	}
}

// backfillStep indexes one batch of users after cur ("" or "u<userId>")
// and returns the next cursor, "" when done. (Messages are indexed by
// IndexSearch.)
func (t *tx) backfillStep(ctx context.Context, cur string) (string, error) {
	after := strings.TrimPrefix(cur, "u")
	type nameRow struct{ id, name string }
	rows, err := list(t, ctx, func(sc scanner) (nameRow, error) {
		var r nameRow
		err := sc.Scan(&r.id, &r.name)
		return r, err
	}, "SELECT user_id, display_name FROM users WHERE user_id > ? ORDER BY user_id LIMIT "+limitParam, after, backfillBatch)
	if err != nil {
		return "", err
	}
	for _, r := range rows {
		if err := t.writeUserKeys(ctx, r.id, r.name, true); err != nil {
			return "", err
		}
	}
	if len(rows) < backfillBatch {
		return "", nil
	}
	return "u" + rows[len(rows)-1].id, nil
}

package sqlite

import (
	"context"
	"strconv"
	"strings"

	chat "github.com/chatengine/chat"
)

// searchProbe bounds the count of one word's rows that SearchMessages reads
// to choose the word that drives a search (see SearchMessages).
const searchProbe = 2000

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

// writeMessageWords stores the search words of m (chat.MessageWords), after
// deleting the ones stored before when replace is set.
func (t *tx) writeMessageWords(ctx context.Context, m *chat.Message, replace bool) error {
	if replace {
		if _, err := t.exec(ctx, "DELETE FROM message_words WHERE message_id = ?", m.MessageID); err != nil {
			return err
		}
	}
	ws := chat.MessageWords(m)
	if len(ws) == 0 {
		return nil
	}
	// One statement for all the words: json_each unpacks the list.
	_, err := t.exec(ctx, `INSERT OR IGNORE INTO message_words (word, created_at, message_id, channel_id, user_id)
		SELECT value, ?, ?, ?, ? FROM json_each(?)`, ms(m.CreatedAt), m.MessageID, m.ChannelID, m.UserID, jsonIDs(ws))
	return err
}

// memberChannels selects the channels where the user (the argument) is a
// member.
const memberChannels = "(SELECT channel_id FROM channel_users WHERE user_id = ? AND membership = 'member')"

// wordCond returns the condition on column col that selects one search
// word (a prefix range when prefix is set) and its arguments.
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

// SearchMessages implements chat.SearchStore from message_words. It first
// counts, for each word, at most searchProbe of its rows (one short index
// range each; in the channel when f.ChannelID is set, in the member's
// channels when f.MemberOf is) and lets the word
// with the fewest drive: its rows are read from the primary key (or, in
// one channel, from message_words_channel_idx; for a member whose
// channels hold fewer than searchProbe rows of it, from that index too,
// then sorted), newest first, and every other word is checked by
// message_words_message_idx. An exact word walks its index in order and
// stops at the limit; a prefix word that drives has fewer than
// searchProbe rows (or is the only word), which are sorted.
func (t *tx) SearchMessages(ctx context.Context, f chat.MessageSearch) ([]*chat.Message, error) {
	if len(f.Words) == 0 {
		return nil, nil
	}
	isPrefix := func(i int) bool { return f.Prefix && i == len(f.Words)-1 }
	var cq strings.Builder
	var cargs []any
	cq.WriteString("SELECT ")
	for i, w := range f.Words {
		if i > 0 {
			cq.WriteString(", ")
		}
		c, a := wordCond("word", w, isPrefix(i))
		switch {
		case f.ChannelID != "":
			// The word's rows in that channel (message_words_channel_idx).
			c = "channel_id = ? AND " + c
			a = append([]any{f.ChannelID}, a...)
		case f.MemberOf != "":
			// The word's rows in the member's channels.
			c = "channel_id IN " + memberChannels + " AND " + c
			a = append([]any{f.MemberOf}, a...)
		}
		cq.WriteString("(SELECT count(*) FROM (SELECT 1 FROM message_words WHERE " + c + " LIMIT " + strconv.Itoa(searchProbe) + "))")
		cargs = append(cargs, a...)
	}
	counts := make([]int64, len(f.Words))
	dest := make([]any, len(counts))
	for i := range counts {
		dest[i] = &counts[i]
	}
	if err := t.row(ctx, cq.String(), cargs, dest...); err != nil {
		return nil, err
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
	// A prefix matches several words of one message: each message once.
	// An exact word has one row per message (the primary key).
	distinct := ""
	if isPrefix(d) {
		distinct = "DISTINCT "
	}
	var q strings.Builder
	var args []any
	c, a := wordCond("w.word", f.Words[d], isPrefix(d))
	from := "message_words w"
	switch {
	case f.ChannelID != "":
		// One channel: its rows of the word, whatever other channels hold.
		from = "message_words w INDEXED BY message_words_channel_idx"
		c = "w.channel_id = ? AND " + c
		a = append([]any{f.ChannelID}, a...)
		if f.MemberOf != "" {
			c += " AND w.channel_id IN " + memberChannels
			a = append(a, f.MemberOf)
		}
	case f.MemberOf != "" && counts[d] < searchProbe:
		// Few rows of the word in the member's channels: read them there
		// (then sort them) rather than walk the word's rows everywhere.
		from = "message_words w INDEXED BY message_words_channel_idx"
		c = "w.channel_id IN " + memberChannels + " AND " + c
		a = append([]any{f.MemberOf}, a...)
	case f.MemberOf != "":
		c += " AND w.channel_id IN " + memberChannels
		a = append(a, f.MemberOf)
	}
	q.WriteString("SELECT " + messageCols + " FROM (SELECT " + distinct + "w.message_id, w.created_at FROM " + from + " WHERE " + c)
	args = append(args, a...)
	if f.UserID != "" {
		q.WriteString(" AND w.user_id = ?")
		args = append(args, f.UserID)
	}
	if f.After != nil {
		q.WriteString(" AND (w.created_at, w.message_id) < (?, ?)")
		args = append(args, f.After.CreatedAt.UnixMilli(), f.After.MessageID)
	}
	if f.Before != nil {
		q.WriteString(" AND (w.created_at, w.message_id) > (?, ?)")
		args = append(args, f.Before.CreatedAt.UnixMilli(), f.Before.MessageID)
	}
	for i, w := range f.Words {
		if i == d {
			continue
		}
		c, a := wordCond("x.word", w, isPrefix(i))
		q.WriteString(" AND EXISTS (SELECT 1 FROM message_words x WHERE x.message_id = w.message_id AND " + c + ")")
		args = append(args, a...)
	}
	order := " ORDER BY w.created_at DESC, w.message_id DESC"
	outer := " ORDER BY s.created_at DESC, s.message_id DESC"
	if f.Before != nil {
		order = " ORDER BY w.created_at, w.message_id"
		outer = " ORDER BY s.created_at, s.message_id"
	}
	q.WriteString(order + " LIMIT " + limitParam + ") s CROSS JOIN messages m ON m.message_id = s.message_id WHERE NOT m.is_deleted" + outer)
	args = append(args, limitArg(f.Limit))
	return list(t, ctx, newMessageRow(f.Limit).scan, q.String(), args...)
}

// backfillBatch is the number of users or messages indexed per
// transaction by backfillSearch.
const backfillBatch = 500

// backfillSearch indexes the users and messages stored before migration
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

// backfillStep indexes one batch after cur ("" or "u<userId>": users;
// "m<rowid>": messages) and returns the next cursor, "" when done.
func (t *tx) backfillStep(ctx context.Context, cur string) (string, error) {
	if cur == "" || cur[0] == 'u' {
		after := strings.TrimPrefix(cur, "u")
		type nameRow struct{ id, name string }
		rows, err := list(t, ctx, func(sc scanner) (nameRow, error) {
			var r nameRow
			err := sc.Scan(&r.id, &r.name)
			return r, err
		}, "SELECT user_id, display_name FROM users WHERE user_id > ? ORDER BY user_id LIMIT ?", after, backfillBatch)
		if err != nil {
			return "", err
		}
		for _, r := range rows {
			if err := t.writeUserKeys(ctx, r.id, r.name, true); err != nil {
				return "", err
			}
		}
		if len(rows) < backfillBatch {
			return "m0", nil
		}
		return "u" + rows[len(rows)-1].id, nil
	}
	after, err := strconv.ParseInt(cur[1:], 10, 64)
	if err != nil {
		return "", chat.Errorf(chat.CodeInternal, "sqlite: bad search backfill cursor %q", cur)
	}
	type idRow struct {
		rowid int64
		id    string
	}
	rows, err := list(t, ctx, func(sc scanner) (idRow, error) {
		var r idRow
		err := sc.Scan(&r.rowid, &r.id)
		return r, err
	}, "SELECT rowid, message_id FROM messages WHERE rowid > ? ORDER BY rowid LIMIT ?", after, backfillBatch)
	if err != nil {
		return "", err
	}
	if len(rows) == 0 {
		return "", nil
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.id
	}
	msgs, err := t.GetMessages(ctx, ids)
	if err != nil {
		return "", err
	}
	for _, m := range msgs {
		if err := t.writeMessageWords(ctx, m, true); err != nil {
			return "", err
		}
	}
	return "m" + strconv.FormatInt(rows[len(rows)-1].rowid, 10), nil
}

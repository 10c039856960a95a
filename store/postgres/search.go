package postgres

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	chat "github.com/chatengine/chat"
)

// searchProbe bounds the count of one word's rows that SearchMessages reads
// to choose the word that drives a search (see SearchMessages).
const searchProbe = 2000

// writeUserKeys stores the search keys (chat.IDKey and chat.NameKeys) of
// the users ids with display names names, after deleting their old keys
// when replace is set.
func (t *tx) writeUserKeys(ctx context.Context, ids, names []string, replace bool) error {
	if len(ids) == 0 {
		return nil
	}
	if replace {
		if _, err := t.exec(ctx, `DELETE FROM {s}user_keys WHERE user_id = ANY($1::text[])`, textArray(ids)); err != nil {
			return err
		}
	}
	var keys, owners []string
	for i, id := range ids {
		for _, k := range append([]string{chat.IDKey(id)}, chat.NameKeys(names[i])...) {
			keys = append(keys, k)
			owners = append(owners, id)
		}
	}
	_, err := t.exec(ctx, `INSERT INTO {s}user_keys (key, user_id)
		SELECT k, u FROM unnest($1::text[], $2::text[]) AS x(k, u) ON CONFLICT DO NOTHING`,
		textArray(keys), textArray(owners))
	return err
}

// writeMessageWords stores the search words of m (chat.MessageWords), after
// deleting the ones stored before when replace is set.
func (t *tx) writeMessageWords(ctx context.Context, m *chat.Message, replace bool) error {
	if replace {
		if _, err := t.exec(ctx, `DELETE FROM {s}message_words WHERE message_id = $1`, m.MessageID); err != nil {
			return err
		}
	}
	ws := chat.MessageWords(m)
	if len(ws) == 0 {
		return nil
	}
	_, err := t.exec(ctx, `INSERT INTO {s}message_words (word, created_at, message_id, channel_id, user_id)
		SELECT w, $2, $3, $4, $5 FROM unnest($1::text[]) AS x(w) ON CONFLICT DO NOTHING`,
		textArray(ws), timeArg(m.CreatedAt), m.MessageID, m.ChannelID, m.UserID)
	return err
}

// wordCond returns the condition on column col that selects one search
// word (a prefix range when prefix is set), adding its arguments to args.
func wordCond(args *argList, col, w string, prefix bool) string {
	if !prefix {
		return col + " = " + args.add(w)
	}
	lo := args.add(w)
	if end := prefixEnd(w); end != "" {
		return "(" + col + " >= " + lo + " AND " + col + " < " + args.add(end) + ")"
	}
	return col + " >= " + lo
}

// SearchMessages implements chat.SearchStore from message_words, as the
// SQLite adapter does: one statement counts at most searchProbe rows of
// each word (an index-only range each, in the channel when f.ChannelID is
// set, in the member's channels when f.MemberOf is), and the word with the fewest drives: its primary key range (in one
// channel, its message_words_channel_idx range; the planner picks the
// index for a member's channels) is read newest first while every other
// word is checked through message_words_message_idx. An exact word walks
// its index in order and stops at the limit; a prefix word drives only
// when it has fewer than searchProbe rows (or is the only word), which are
// sorted.
func (t *tx) SearchMessages(ctx context.Context, f chat.MessageSearch) ([]*chat.Message, error) {
	if len(f.Words) == 0 {
		return nil, nil
	}
	isPrefix := func(i int) bool { return f.Prefix && i == len(f.Words)-1 }
	var cargs argList
	parts := make([]string, len(f.Words))
	for i, w := range f.Words {
		scope := ""
		switch {
		case f.ChannelID != "":
			// The word's rows in that channel (message_words_channel_idx).
			scope = "channel_id = " + cargs.add(f.ChannelID) + " AND "
		case f.MemberOf != "":
			// The word's rows in the member's channels.
			scope = "channel_id = ANY(ARRAY(SELECT channel_id FROM {s}channel_users WHERE user_id = " + cargs.add(f.MemberOf) +
				" AND membership = 'member')) AND "
		}
		parts[i] = "(SELECT count(*) FROM (SELECT 1 FROM {s}message_words WHERE " + scope + wordCond(&cargs, "word", w, isPrefix(i)) +
			" LIMIT " + strconv.Itoa(searchProbe) + ") p)"
	}
	counts := make([]int64, len(f.Words))
	dest := make([]any, len(counts))
	for i := range counts {
		dest[i] = &counts[i]
	}
	if err := t.queryRow(ctx, "SELECT "+strings.Join(parts, ", "), cargs, dest...); err != nil {
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
	var args argList
	where := []string{wordCond(&args, "w.word", f.Words[d], isPrefix(d))}
	if f.ChannelID != "" {
		where = append(where, "w.channel_id = "+args.add(f.ChannelID))
	}
	if f.UserID != "" {
		where = append(where, "w.user_id = "+args.add(f.UserID))
	}
	// Few rows of the driving word in the member's channels: read them
	// channel by channel (message_words_channel_idx, through LATERAL),
	// rather than walk the word's rows in every channel. The planner does
	// not know how few there are.
	perChannel := f.MemberOf != "" && f.ChannelID == "" && counts[d] < searchProbe
	if f.MemberOf != "" && !perChannel {
		// An array computed once (an InitPlan), not a join: the statement
		// is prepared, and a generic plan chose to hash-join every row of
		// the word.
		where = append(where, "w.channel_id = ANY(ARRAY(SELECT channel_id FROM {s}channel_users WHERE user_id = "+
			args.add(f.MemberOf)+" AND membership = 'member'))")
	}
	if f.After != nil {
		where = append(where, "(w.created_at, w.message_id) < ("+args.add(timeArg(chat.NewTime(f.After.CreatedAt)))+", "+args.add(f.After.MessageID)+")")
	}
	if f.Before != nil {
		where = append(where, "(w.created_at, w.message_id) > ("+args.add(timeArg(chat.NewTime(f.Before.CreatedAt)))+", "+args.add(f.Before.MessageID)+")")
	}
	for i, w := range f.Words {
		if i != d {
			where = append(where, "EXISTS (SELECT 1 FROM {s}message_words x WHERE x.message_id = w.message_id AND "+
				wordCond(&args, "x.word", w, isPrefix(i))+")")
		}
	}
	dir := " DESC"
	if f.Before != nil {
		dir = ""
	}
	limit := ""
	if f.Limit > 0 {
		limit = " LIMIT " + args.add(f.Limit)
	}
	cols := strings.Split(messageCols, ",")
	for i, c := range cols {
		cols[i] = "m." + strings.TrimSpace(c)
	}
	page := " ORDER BY w.created_at" + dir + ", w.message_id" + dir + limit
	driver := "SELECT " + distinct + "w.message_id, w.created_at FROM {s}message_words w WHERE " + strings.Join(where, " AND ") + page
	if perChannel {
		driver = "SELECT w.message_id, w.created_at FROM (SELECT channel_id FROM {s}channel_users WHERE user_id = " +
			args.add(f.MemberOf) + " AND membership = 'member') cu CROSS JOIN LATERAL (SELECT " + distinct +
			"w.message_id, w.created_at FROM {s}message_words w WHERE w.channel_id = cu.channel_id AND " +
			strings.Join(where, " AND ") + page + ") w" + page
	}
	q := "SELECT " + strings.Join(cols, ", ") + " FROM (" + driver +
		") s JOIN {s}messages m ON m.message_id = s.message_id WHERE NOT m.is_deleted ORDER BY s.created_at" + dir + ", s.message_id" + dir
	return t.messages(ctx, q, args...)
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
// exists: step indexes the batch after the cursor kept in that row (locked,
// so processes starting together take turns) and returns the next cursor,
// "" when done (then the row is deleted). Writes made meanwhile index
// themselves.
func (s *Store) backfill(ctx context.Context, key string, step func(t *tx, ctx context.Context, cur string) (string, error)) error {
	for {
		done := false
		err := s.Update(ctx, func(ctx2 chat.Tx) error {
			t := ctx2.(*tx)
			var cur string
			err := t.queryRow(ctx, `SELECT value FROM {s}meta WHERE key = $1 FOR UPDATE`, []any{key}, &cur)
			if chat.ErrorCode(err) == chat.CodeNotFound {
				done = true
				return nil
			}
			if err != nil {
				return err
			}
			next, err := step(t, ctx, cur)
			if err != nil {
				return err
			}
			if next == "" {
				done = true
				_, err = t.exec(ctx, `DELETE FROM {s}meta WHERE key = $1`, key)
				return err
			}
			_, err = t.exec(ctx, `UPDATE {s}meta SET value = $1 WHERE key = $2`, next, key)
			return err
		})
		if err != nil || done {
			return err
		}
	}
}

// backfillStep indexes one batch after cur ("" or "u<userId>": users;
// "m<messageId>": messages) and returns the next cursor, "" when done.
func (t *tx) backfillStep(ctx context.Context, cur string) (string, error) {
	if cur == "" || cur[0] == 'u' {
		var ids, names []string
		err := t.query(ctx, `SELECT user_id, display_name FROM {s}users WHERE user_id > $1 ORDER BY user_id LIMIT $2`,
			[]any{strings.TrimPrefix(cur, "u"), backfillBatch}, func(r *sql.Rows) error {
				var id, name string
				err := r.Scan(&id, &name)
				ids, names = append(ids, id), append(names, name)
				return err
			})
		if err != nil {
			return "", err
		}
		if err := t.writeUserKeys(ctx, ids, names, true); err != nil {
			return "", err
		}
		if len(ids) < backfillBatch {
			return "m", nil
		}
		return "u" + ids[len(ids)-1], nil
	}
	ms, err := t.messages(ctx, `SELECT `+messageCols+` FROM {s}messages WHERE message_id > $1
		ORDER BY message_id LIMIT $2 FOR UPDATE`, cur[1:], backfillBatch)
	if err != nil {
		return "", err
	}
	if len(ms) == 0 {
		return "", nil
	}
	for _, m := range ms {
		if err := t.writeMessageWords(ctx, m, true); err != nil {
			return "", err
		}
	}
	return "m" + ms[len(ms)-1].MessageID, nil
}

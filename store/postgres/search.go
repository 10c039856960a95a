package postgres

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	chat "github.com/chatengine/chat"
)

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

// wordCond returns the condition on column col that selects one search
// key (a prefix range when prefix is set), adding its arguments to args.
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

// searchArg is the value of messages.search for m: its search words
// (chat.MessageWords) as a text array, which the statements turn into a
// tsvector of exactly those lexemes (array_to_tsvector); NULL when it has
// none.
func searchArg(m *chat.Message) any {
	ws := chat.MessageWords(m)
	if len(ws) == 0 {
		return nil
	}
	return textArray(ws)
}

// writeSearch stores the search words of m in its row (messages.search).
func (t *tx) writeSearch(ctx context.Context, m *chat.Message) error {
	_, err := t.exec(ctx, `UPDATE {s}messages SET search = array_to_tsvector($2::text[]) WHERE message_id = $1`,
		m.MessageID, searchArg(m))
	return err
}

// tsLexemes returns the tsquery of words that all must be found, the last
// one as a prefix when prefix is set. Words (chat.Words) hold only
// letters, digits and marks, so a quoted lexeme needs no escape.
func tsLexemes(words []string, prefix bool) string {
	parts := make([]string, len(words))
	for i, w := range words {
		parts[i] = "'" + w + "'"
		if prefix && i == len(words)-1 {
			parts[i] += ":*"
		}
	}
	return strings.Join(parts, " & ")
}

// searchWindow is the number of a channel's newest messages (after the
// keyset position) that SearchMessages reads first, checking each one's
// words, before it asks the GIN index.
const searchWindow = 100

// maxSearchWindow bounds the window of one channel that SearchMessages
// reads when the first window found some matches but too few for a page.
const maxSearchWindow = 5000

// maxWindowChannels is the most member channels whose windows
// SearchMessages reads before it asks the GIN index.
const maxWindowChannels = 32

// SearchMessages implements chat.SearchStore from messages.search and its
// GIN index. A search in one channel, or in the channels of a member of at
// most maxWindowChannels channels, first reads the newest searchWindow
// messages of each channel (after the keyset position; by
// messages_channel_created_idx) and checks their words: that answers
// exactly when the page fills from messages newer than every full window's
// oldest message, or when the windows held the whole scope, as for a word
// common in the scope. In one channel, when the window found some matches
// but too few, a window sized for a page by that share (at most
// maxSearchWindow) is read next. Otherwise the GIN index finds the
// messages holding the words the windows found least (exact words before
// the prefix; without windows, every exact word, or the prefix alone),
// which are filtered (the other words, the scope, the keyset position) and
// sorted.
func (t *tx) SearchMessages(ctx context.Context, f chat.MessageSearch) ([]*chat.Message, error) {
	if len(f.Words) == 0 {
		return nil, nil
	}
	var counts []int64
	if f.ChannelID != "" || f.MemberOf != "" {
		ms, ok, wc, err := t.searchWindows(ctx, f)
		if err != nil || ok {
			return ms, err
		}
		counts = wc
	}
	return t.searchGIN(ctx, f, counts)
}

// messageColsOf is messageCols with each column prefixed by alias and a
// dot.
func messageColsOf(alias string) string {
	cols := strings.Split(messageCols, ",")
	for i, c := range cols {
		cols[i] = alias + "." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// searchKeyset returns the conditions on the columns created_at and
// message_id (of alias) of f's keyset position.
func searchKeyset(args *argList, f chat.MessageSearch, alias string) []string {
	var where []string
	if f.After != nil {
		where = append(where, "("+alias+".created_at, "+alias+".message_id) < ("+args.add(timeArg(chat.NewTime(f.After.CreatedAt)))+", "+args.add(f.After.MessageID)+")")
	}
	if f.Before != nil {
		where = append(where, "("+alias+".created_at, "+alias+".message_id) > ("+args.add(timeArg(chat.NewTime(f.Before.CreatedAt)))+", "+args.add(f.Before.MessageID)+")")
	}
	return where
}

// searchChannels returns the channels whose windows a search reads: f's
// channel (none when f.MemberOf is not a member of it), or f.MemberOf's
// channels; many is set when there are more than maxWindowChannels.
func (t *tx) searchChannels(ctx context.Context, f chat.MessageSearch) (chans []string, many bool, _ error) {
	if f.ChannelID != "" {
		if f.MemberOf != "" {
			var member bool
			if err := t.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM {s}channel_users WHERE channel_id = $1 AND user_id = $2
				AND membership = 'member')`, []any{f.ChannelID, f.MemberOf}, &member); err != nil || !member {
				return nil, false, err
			}
		}
		return []string{f.ChannelID}, false, nil
	}
	err := t.query(ctx, `SELECT channel_id FROM {s}channel_users WHERE user_id = $1 AND membership = 'member'
		ORDER BY channel_id LIMIT $2`, []any{f.MemberOf, maxWindowChannels + 1}, func(r *sql.Rows) error {
		var id string
		err := r.Scan(&id)
		chans = append(chans, id)
		return err
	})
	return chans, len(chans) > maxWindowChannels, err
}

// searchWindows answers f from the newest messages of each channel of its
// scope (see SearchMessages); ok is false when that cannot tell the page,
// and counts then holds, for each word, the windows' messages holding it.
func (t *tx) searchWindows(ctx context.Context, f chat.MessageSearch) (_ []*chat.Message, ok bool, counts []int64, _ error) {
	chans, many, err := t.searchChannels(ctx, f)
	if err != nil || many {
		return nil, false, nil, err
	}
	if len(chans) == 0 {
		return nil, true, nil, nil
	}
	desc := f.Before == nil
	dir := " DESC"
	if !desc {
		dir = ""
	}
	one := len(chans) == 1
	for size := searchWindow; ; {
		var args argList
		var scope, from string
		if one {
			scope = "x.channel_id = " + args.add(chans[0])
		} else {
			scope = "x.channel_id = c.channel_id"
			from = "unnest(" + args.add(textArray(chans)) + "::text[]) AS c(channel_id) CROSS JOIN LATERAL "
		}
		kw := ""
		if keyset := searchKeyset(&args, f, "x"); len(keyset) > 0 {
			kw = " AND " + strings.Join(keyset, " AND ")
		}
		window := "(SELECT x.* FROM {s}messages x WHERE " + scope + kw + " ORDER BY x.created_at" + dir + ", x.message_id" + dir +
			" LIMIT " + strconv.Itoa(size) + ") w"
		all := args.add(tsLexemes(f.Words, f.Prefix))
		match := "w.search @@ " + all + "::tsquery AND NOT w.is_deleted"
		if f.UserID != "" {
			match += " AND w.user_id = " + args.add(f.UserID)
		}
		// The page's statement has the limit as its last argument; the
		// counts' statement shares the others.
		pargs := append(argList{}, args...)
		limit := ""
		if f.Limit > 0 {
			limit = " LIMIT " + pargs.add(f.Limit)
		}
		order := " ORDER BY w.created_at" + dir + ", w.message_id" + dir
		// In one channel the rows come in the window's order: the read
		// stops at the limit.
		ms, err := t.messages(ctx, "SELECT "+messageColsOf("w")+" FROM "+from+window+" WHERE "+match+order+limit, pargs...)
		if err != nil {
			return nil, false, nil, err
		}
		if one && f.Limit > 0 && len(ms) == f.Limit {
			return ms, true, nil, nil // the newest matches of the channel
		}
		// Each window's size and last message, its matches, and each
		// word's count: a match outside the windows comes after every
		// full window's last message in the order.
		last := "ORDER BY w.created_at" + map[bool]string{true: "", false: " DESC"}[desc] + ", w.message_id" + map[bool]string{true: "", false: " DESC"}[desc]
		cols := []string{"count(*)", "(array_agg(w.created_at " + last + "))[1]", "(array_agg(w.message_id " + last + "))[1]",
			"count(*) FILTER (WHERE " + match + ")"}
		for i, w := range f.Words {
			cols = append(cols, "count(*) FILTER (WHERE w.search @@ "+args.add(tsLexemes([]string{w}, f.Prefix && i == len(f.Words)-1))+"::tsquery)")
		}
		group := " GROUP BY c.channel_id"
		if one {
			group = ""
		}
		counts = make([]int64, len(f.Words))
		var edge *chat.Message // the full windows' last message that comes first
		matches := int64(0)
		err = t.query(ctx, "SELECT "+strings.Join(cols, ", ")+" FROM "+from+window+group, args, func(r *sql.Rows) error {
			var rows, m int64
			var at sql.NullTime
			var id sql.NullString
			wc := make([]int64, len(f.Words))
			dest := []any{&rows, &at, &id, &m}
			for i := range wc {
				dest = append(dest, &wc[i])
			}
			if err := r.Scan(dest...); err != nil {
				return err
			}
			matches += m
			for i := range wc {
				counts[i] += wc[i]
			}
			if rows == int64(size) {
				e := &chat.Message{CreatedAt: chat.NewTime(at.Time), MessageID: id.String}
				if edge == nil || searchBefore(e, edge, desc) {
					edge = e
				}
			}
			return nil
		})
		if err != nil {
			return nil, false, nil, err
		}
		if edge == nil {
			return ms, true, nil, nil // the windows held the whole scope
		}
		n := 0
		for n < len(ms) && !searchBefore(edge, ms[n], desc) {
			n++
		}
		if f.Limit > 0 && n >= f.Limit {
			return ms[:f.Limit], true, nil, nil
		}
		// Some matches in one channel: a window sized for a page.
		if !one || matches == 0 || size >= maxSearchWindow || f.Limit <= 0 {
			return nil, false, counts, nil
		}
		size = min(maxSearchWindow, int(int64(size)*int64(f.Limit)*3/(2*matches))+1)
	}
}

// searchBefore reports whether a comes strictly before b in the search
// order: newest first (createdAt, then messageId, descending) when desc is
// set, else oldest first.
func searchBefore(a, b *chat.Message, desc bool) bool {
	c := a.CreatedAt.Compare(b.CreatedAt.Time)
	if c == 0 {
		c = strings.Compare(a.MessageID, b.MessageID)
	}
	if desc {
		return c > 0
	}
	return c < 0
}

// searchGIN answers f from the GIN index: the messages holding the words
// chosen by counts (see SearchMessages), read by a bitmap of the index in
// a materialized step (so that no plan walks another index in order
// instead), then filtered (every word, the scope, the keyset position)
// and sorted.
func (t *tx) searchGIN(ctx context.Context, f chat.MessageSearch, counts []int64) ([]*chat.Message, error) {
	isPrefix := func(i int) bool { return f.Prefix && i == len(f.Words)-1 }
	var exact []string
	prefix := false // exact is the prefix word alone
	switch {
	case counts == nil && f.Prefix && len(f.Words) > 1:
		// Every exact word (GIN skips through the common ones).
		exact = f.Words[:len(f.Words)-1]
	case counts == nil:
		exact, prefix = f.Words, f.Prefix
	default:
		// The words the windows found least; an exact word before the
		// prefix, whose matching words GIN reads whole.
		low := counts[0]
		for _, c := range counts {
			low = min(low, c)
		}
		for i, w := range f.Words {
			if counts[i] == low && !isPrefix(i) {
				exact = append(exact, w)
			}
		}
		if len(exact) == 0 {
			exact, prefix = f.Words[len(f.Words)-1:], true
		}
	}
	var args argList
	inner := []string{"search @@ " + args.add(tsLexemes(exact, prefix)) + "::tsquery"}
	if f.ChannelID != "" {
		inner = append(inner, "channel_id = "+args.add(f.ChannelID))
	}
	if f.UserID != "" {
		inner = append(inner, "user_id = "+args.add(f.UserID))
	}
	outer := []string{"NOT h.is_deleted", "h.search @@ " + args.add(tsLexemes(f.Words, f.Prefix)) + "::tsquery"}
	if f.MemberOf != "" {
		outer = append(outer, "h.channel_id = ANY(ARRAY(SELECT channel_id FROM {s}channel_users WHERE user_id = "+
			args.add(f.MemberOf)+" AND membership = 'member'))")
	}
	outer = append(outer, searchKeyset(&args, f, "h")...)
	dir := " DESC"
	if f.Before != nil {
		dir = ""
	}
	limit := ""
	if f.Limit > 0 {
		limit = " LIMIT " + args.add(f.Limit)
	}
	q := "WITH h AS MATERIALIZED (SELECT " + messageCols + ", search FROM {s}messages WHERE " + strings.Join(inner, " AND ") + ")" +
		" SELECT " + messageColsOf("h") + " FROM h WHERE " + strings.Join(outer, " AND ") +
		" ORDER BY h.created_at" + dir + ", h.message_id" + dir + limit
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
		if err := t.writeSearch(ctx, m); err != nil {
			return "", err
		}
	}
	return "m" + ms[len(ms)-1].MessageID, nil
}

package postgres

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"time"

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
const searchWindow = 200

// maxWindowChannels is the most member channels whose windows
// SearchMessages reads before it asks the GIN index.
const maxWindowChannels = 32

// SearchMessages implements chat.SearchStore from messages.search and its
// GIN index. A search in one channel, or in the channels of a member of at
// most maxWindowChannels channels, first reads the newest searchWindow
// messages of each channel (after the keyset position; by
// messages_channel_created_idx) and checks their words: that answers
// exactly when the page fills from messages newer than every window's
// oldest message, or when the windows held the whole scope, as for a word
// common in the scope. Otherwise (a rarer word, a search of every
// channel) the GIN index finds the messages holding every exact word (or
// the prefix, for a prefix alone), which are filtered and sorted.
func (t *tx) SearchMessages(ctx context.Context, f chat.MessageSearch) ([]*chat.Message, error) {
	if len(f.Words) == 0 {
		return nil, nil
	}
	if f.ChannelID != "" || f.MemberOf != "" {
		ms, ok, err := t.searchWindows(ctx, f)
		if err != nil || ok {
			return ms, err
		}
	}
	return t.searchGIN(ctx, f)
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

// searchWindows answers f from the newest searchWindow messages of each
// channel of its scope (see SearchMessages); ok is false when that cannot
// tell the page.
func (t *tx) searchWindows(ctx context.Context, f chat.MessageSearch) (_ []*chat.Message, ok bool, _ error) {
	var chans []string
	if f.ChannelID != "" {
		if f.MemberOf != "" {
			var member bool
			if err := t.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM {s}channel_users WHERE channel_id = $1 AND user_id = $2
				AND membership = 'member')`, []any{f.ChannelID, f.MemberOf}, &member); err != nil {
				return nil, false, err
			}
			if !member {
				return nil, true, nil
			}
		}
		chans = []string{f.ChannelID}
	} else {
		err := t.query(ctx, `SELECT channel_id FROM {s}channel_users WHERE user_id = $1 AND membership = 'member'
			ORDER BY channel_id LIMIT $2`, []any{f.MemberOf, maxWindowChannels + 1}, func(r *sql.Rows) error {
			var id string
			err := r.Scan(&id)
			chans = append(chans, id)
			return err
		})
		if err != nil {
			return nil, false, err
		}
		if len(chans) == 0 {
			return nil, true, nil
		}
		if len(chans) > maxWindowChannels {
			return nil, false, nil
		}
	}
	desc := f.Before == nil
	dir := " DESC"
	if !desc {
		dir = ""
	}
	var args argList
	one := len(chans) == 1
	var scope string
	if one {
		scope = "x.channel_id = " + args.add(chans[0])
	} else {
		scope = "x.channel_id = c.channel_id"
	}
	kw := ""
	if keyset := searchKeyset(&args, f, "x"); len(keyset) > 0 {
		kw = " AND " + strings.Join(keyset, " AND ")
	}
	window := "SELECT x.* FROM {s}messages x WHERE " + scope + kw + " ORDER BY x.created_at" + dir + ", x.message_id" + dir
	match := "w.search @@ " + args.add(tsLexemes(f.Words, f.Prefix)) + "::tsquery AND NOT w.is_deleted"
	if f.UserID != "" {
		match += " AND w.user_id = " + args.add(f.UserID)
	}
	limit := ""
	if f.Limit > 0 {
		limit = " LIMIT " + args.add(f.Limit)
	}
	order := " ORDER BY w.created_at" + dir + ", w.message_id" + dir
	var q string
	if one {
		// In the window's order: stops at the limit.
		q = "SELECT " + messageColsOf("w") + " FROM (" + window + " LIMIT " + strconv.Itoa(searchWindow) + ") w WHERE " + match + order + limit
	} else {
		q = "SELECT " + messageColsOf("w") + " FROM unnest(" + args.add(textArray(chans)) + "::text[]) AS c(channel_id) CROSS JOIN LATERAL (" +
			window + " LIMIT " + strconv.Itoa(searchWindow) + ") w WHERE " + match + order + limit
	}
	ms, err := t.messages(ctx, q, args...)
	if err != nil {
		return nil, false, err
	}
	if one && f.Limit > 0 && len(ms) == f.Limit {
		return ms, true, nil // the newest matches of the channel
	}
	// The last message of each full window: a match outside the windows
	// comes after every one of them in the order.
	var eargs argList
	escope := "x.channel_id = c.channel_id"
	ekw := ""
	if keyset := searchKeyset(&eargs, f, "x"); len(keyset) > 0 {
		ekw = " AND " + strings.Join(keyset, " AND ")
	}
	eq := "SELECT e.created_at, e.message_id FROM unnest(" + eargs.add(textArray(chans)) + "::text[]) AS c(channel_id) CROSS JOIN LATERAL (" +
		"SELECT x.created_at, x.message_id FROM {s}messages x WHERE " + escope + ekw + " ORDER BY x.created_at" + dir + ", x.message_id" + dir +
		" OFFSET " + strconv.Itoa(searchWindow-1) + " LIMIT 1) e"
	var edge *chat.Message // the edge that comes first in the order
	err = t.query(ctx, eq, eargs, func(r *sql.Rows) error {
		var e chat.Message
		var at time.Time
		if err := r.Scan(&at, &e.MessageID); err != nil {
			return err
		}
		e.CreatedAt = chat.NewTime(at)
		if edge == nil || searchBefore(&e, edge, desc) {
			edge = &e
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if edge == nil {
		return ms, true, nil // the windows held the whole scope
	}
	n := 0
	for n < len(ms) && !searchBefore(edge, ms[n], desc) {
		n++
	}
	if f.Limit > 0 && n >= f.Limit {
		return ms[:f.Limit], true, nil
	}
	return nil, false, nil
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

// searchGIN answers f from the GIN index: the messages holding every exact
// word of f (the prefix, when it is the only word), read by a bitmap of
// the index in a materialized step (so that no plan walks another index
// in order instead), then filtered (the prefix word, the scope, the
// keyset position) and sorted.
func (t *tx) searchGIN(ctx context.Context, f chat.MessageSearch) ([]*chat.Message, error) {
	exact, prefix := f.Words, f.Prefix
	if f.Prefix && len(f.Words) > 1 {
		exact, prefix = f.Words[:len(f.Words)-1], false
	}
	var args argList
	inner := []string{"search @@ " + args.add(tsLexemes(exact, prefix)) + "::tsquery"}
	if f.ChannelID != "" {
		inner = append(inner, "channel_id = "+args.add(f.ChannelID))
	}
	if f.UserID != "" {
		inner = append(inner, "user_id = "+args.add(f.UserID))
	}
	outer := []string{"NOT h.is_deleted"}
	if len(exact) < len(f.Words) {
		outer = append(outer, "h.search @@ "+args.add(tsLexemes(f.Words, f.Prefix))+"::tsquery")
	}
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

package chat

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"
)

// Search limits. A query longer than MaxSearchQueryBytes or with more than
// MaxSearchWords words is refused (CodeBadRequest); words are indexed and
// compared by their first MaxWordBytes bytes.
const (
	MaxSearchQueryBytes = 512
	MaxSearchWords      = 16
	MaxWordBytes        = 64
)

// Fold returns the case-folded form of s that every store indexes and
// compares: each rune becomes the representative of its Unicode simple
// case-folding orbit (the equivalence the blacklist's case-insensitive
// matching uses), so "K", "k" and the Kelvin sign fold alike, as do "Σ",
// "σ" and "ς". Two strings are equal under simple case folding, rune by
// rune, exactly when their folded forms are equal; hence a
// case-insensitive prefix test is strings.HasPrefix(Fold(s), Fold(p)), a
// range on an indexed column.
func Fold(s string) string { return lowerText(s) }

// clip cuts s to at most n bytes without splitting a rune.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Words splits s into its search words, in order of first appearance and
// without repeats: the maximal runs of word runes (Unicode letters,
// decimal digits and nonspacing marks, the runes the blacklist's whole-word
// matching treats as word runes), folded with Fold and cut to their first
// MaxWordBytes bytes. Every store indexes message texts and captions with
// it, so all of them find the same messages.
func Words(s string) []string {
	var out []string
	seen := map[string]bool{}
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		w := clip(Fold(s[start:end]), MaxWordBytes)
		start = -1
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	for i, r := range s {
		if isWordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		flush(i)
	}
	flush(len(s))
	return out
}

// NameKeys returns the keys a user's displayName is found by in a user
// search: for each word of the name (see Words for what a word is), the
// folded rest of the name from that word's first rune, cut to
// MaxWordBytes bytes. A search matches the name when its folded form (cut
// the same way) is a prefix of one of the keys: "The Zebra Keeper" has the
// keys "the zebra keeper", "zebra keeper" and "keeper", so it is found by
// "zeb", "keep" and "zebra k".
func NameKeys(name string) []string {
	var out []string
	seen := map[string]bool{}
	prev := false
	for i, r := range name {
		w := isWordRune(r)
		if w && !prev {
			k := clip(Fold(name[i:]), MaxWordBytes)
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
		prev = w
	}
	return out
}

// SearchKey returns the form of a user search string that is matched as a
// prefix of the keys of NameKeys and of Fold(userId): folded and cut to
// MaxWordBytes bytes.
func SearchKey(s string) string { return clip(Fold(s), MaxWordBytes) }

// IDKey returns the key of a userId in a user search: Fold(userId) cut to
// MaxWordBytes bytes (a search longer than that compares its first
// MaxWordBytes bytes).
func IDKey(id string) string { return clip(Fold(id), MaxWordBytes) }

// MatchUser reports whether a user search (already passed through
// SearchKey) matches the user's displayName or userId; the memory store
// uses it, and the SQL stores answer the same from their indexes.
func MatchUser(key string, u *User) bool {
	if strings.HasPrefix(IDKey(u.UserID), key) {
		return true
	}
	for _, k := range NameKeys(u.DisplayName) {
		if strings.HasPrefix(k, key) {
			return true
		}
	}
	return false
}

// ChannelKeys returns the keys a channel is found by in a channel search:
// IDKey of its channelId, then NameKeys of its displayName (without
// repeats). The SQL stores index them.
func ChannelKeys(c *Channel) []string {
	keys := []string{IDKey(c.ChannelID)}
	for _, k := range NameKeys(c.DisplayName) {
		if k != keys[0] {
			keys = append(keys, k)
		}
	}
	return keys
}

// MatchChannel reports whether a channel search (already passed through
// SearchKey) matches the channel's channelId or displayName: a prefix of
// one of its ChannelKeys. The memory store uses it, and the SQL stores
// answer the same from their indexes.
func MatchChannel(key string, c *Channel) bool {
	for _, k := range ChannelKeys(c) {
		if strings.HasPrefix(k, key) {
			return true
		}
	}
	return false
}

// MessageWords returns the search words of a message: those of the text
// of a text message or the caption of an image or file message (see
// Words); nil for a deleted message and for other types.
func MessageWords(m *Message) []string {
	if m.IsDeleted {
		return nil
	}
	var field string
	switch m.Type {
	case MessageTypeText:
		field = "text"
	case MessageTypeImage, MessageTypeFile:
		field = "caption"
	default:
		return nil
	}
	s, _ := m.Data[field].(string)
	if s == "" {
		return nil
	}
	return Words(s)
}

// MessageSearchCursor is a keyset position in the search order (CreatedAt
// descending, then MessageID descending).
type MessageSearchCursor struct {
	CreatedAt time.Time
	MessageID string
}

// MessageSearch selects live messages whose search words (MessageWords)
// include every one of Words, the last one as a prefix when Prefix is set.
// Words are folded, distinct and not empty. ChannelID, UserID and MemberOf
// (only channels where that user is a member) narrow the search. Results
// are newest first (CreatedAt descending, then MessageID descending); with
// After set only messages strictly after that position in this order; with
// Before set only those strictly before it, returned in reverse order.
// Limit > 0 bounds the count.
type MessageSearch struct {
	Words     []string
	Prefix    bool
	ChannelID string
	UserID    string
	MemberOf  string
	After     *MessageSearchCursor
	Before    *MessageSearchCursor
	Limit     int
}

// Matches reports whether a message with the search words ws (see
// MessageWords) matches the words of f.
func (f *MessageSearch) Matches(ws []string) bool {
	for i, w := range f.Words {
		prefix := f.Prefix && i == len(f.Words)-1
		found := false
		for _, x := range ws {
			if x == w || prefix && strings.HasPrefix(x, w) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// SearchStore finds messages by their words. SQL adapters answer from an
// index of (word, createdAt, messageId) rows kept in the transaction of
// every message write; a soft delete removes a message's rows.
type SearchStore interface {
	// SearchMessages returns the messages matching f (see MessageSearch).
	SearchMessages(ctx context.Context, f MessageSearch) ([]*Message, error)
}

// SearchMessagesQuery is the input of Service.SearchMessages.
type SearchMessagesQuery struct {
	// Query holds the words to find (every one; the last one may be the
	// beginning of a word).
	Query string
	// ChannelID, when set, searches that channel only.
	ChannelID string
	// UserID, when set, finds that author's messages only.
	UserID string
	// Limit is the page size (default 20, at most 100).
	Limit int
	// Token is a paging token from an earlier answer to the same query.
	Token string
}

// searchTerms returns the words of a query: Words(query), the last one
// marked as a prefix; a last word that is a prefix of an earlier word, or
// equal to one, adds nothing and is dropped.
func searchTerms(query string) ([]string, bool) {
	ws := Words(query)
	if len(ws) == 0 {
		return nil, false
	}
	last := ws[len(ws)-1]
	// Words dedupes, so the last word of the query may sit earlier in ws.
	if qs := Words(lastWordOf(query)); len(qs) == 1 {
		last = qs[0]
	}
	var rest []string
	for _, w := range ws {
		if w != last {
			rest = append(rest, w)
		}
	}
	for _, w := range rest {
		if strings.HasPrefix(w, last) {
			return rest, false
		}
	}
	return append(rest, last), true
}

// lastWordOf returns the last run of word runes of s.
func lastWordOf(s string) string {
	end := -1
	for i := len(s); i > 0; {
		r, n := utf8.DecodeLastRuneInString(s[:i])
		if isWordRune(r) {
			if end < 0 {
				end = i
			}
		} else if end >= 0 {
			return s[i:end]
		}
		i -= n
	}
	if end < 0 {
		return ""
	}
	return s[:end]
}

// SearchMessages finds text messages and the captions of image and file
// messages that contain every word of q.Query (case-insensitive, the last
// word as a prefix), newest first, with keyset paging. Admins search every
// channel (or q.ChannelID); a user with the permission
// Channel/GlobalAccess likewise; any other user searches the channels
// where it is a member (q.ChannelID must be one of them). Deleted messages
// are never found. Errors: CodeBadRequest (empty or too long query, bad
// ids, limit or token), CodePermissionDenied, CodeNotFound (channel).
func (s *Service) SearchMessages(ctx context.Context, actorID string, q SearchMessagesQuery) (*MessageList, error) {
	if q.Query == "" {
		return nil, invalid("query", "is required")
	}
	if err := checkText("query", q.Query); err != nil {
		return nil, err
	}
	if len(q.Query) > MaxSearchQueryBytes {
		return nil, invalid("query", "must be at most %d bytes", MaxSearchQueryBytes)
	}
	words, prefix := searchTerms(q.Query)
	if len(words) == 0 {
		return nil, invalid("query", "must contain at least one word (letters or digits)")
	}
	if len(words) > MaxSearchWords {
		return nil, invalid("query", "must have at most %d words", MaxSearchWords)
	}
	if q.ChannelID != "" {
		if err := s.checkID("channelId", q.ChannelID); err != nil {
			return nil, err
		}
	}
	if q.UserID != "" {
		if err := s.checkID("userId", q.UserID); err != nil {
			return nil, err
		}
	}
	limit, err := s.pageSize("options[limit]", q.Limit, s.lim.DefaultMessagePage)
	if err != nil {
		return nil, err
	}
	f := MessageSearch{Words: words, Prefix: prefix, ChannelID: q.ChannelID, UserID: q.UserID, Limit: limit + 1}
	prefixMark := ""
	if prefix {
		prefixMark = "*"
	}
	var out *MessageList
	err = s.view(ctx, func(tx Tx) error {
		act := actReadMessages
		if q.ChannelID == "" {
			act = actSearchMessages
		}
		c, err := s.authorize(ctx, tx, actorID, act, q.ChannelID)
		if err != nil {
			return err
		}
		if q.ChannelID == "" && !c.admin && !c.perms[PermGlobalAccess] {
			f.MemberOf = actorID
		}
		// The token is bound to the words, the scope and who may see what.
		qh := queryHash(joinList(words), prefixMark, q.ChannelID, q.UserID, f.MemberOf)
		tok, _, err := s.openPage("options[token]", q.Token, "search", qh, q.Limit, limit)
		if err != nil {
			return err
		}
		if tok != nil {
			f.After, f.Before = place(tok, &MessageSearchCursor{CreatedAt: tok.at(), MessageID: tok.ID})
		}
		ms, err := tx.SearchMessages(ctx, f)
		if err != nil {
			return err
		}
		out, err = s.newestFirstPage(ctx, tx, ms, limit, f.Before != nil, tok, "search", qh)
		return err
	})
	return out, err
}

// newestFirstPage makes the page of a newest-first keyset query (search,
// mentions) from ms, the rows it read: up to limit+1 of them, oldest first
// when it read backwards (before the token's row). The paging tokens carry
// kind and the query's hash qh; tok is the request's token, nil on the
// first page.
func (s *Service) newestFirstPage(ctx context.Context, tx Tx, ms []*Message, limit int, backwards bool, tok *pageToken, kind, qh string) (*MessageList, error) {
	more := len(ms) > limit
	if more {
		ms = ms[:limit]
	}
	if backwards {
		reverse(ms)
	}
	out, err := s.messageList(ctx, tx, ms)
	if err != nil {
		return nil, err
	}
	out.Paging = &Paging{}
	if len(ms) > 0 {
		first, last := ms[0], ms[len(ms)-1]
		s.setLinks(out.Paging, tok, more,
			pageToken{K: kind, Q: qh, T: first.CreatedAt.UnixMilli(), ID: first.MessageID},
			pageToken{K: kind, Q: qh, T: last.CreatedAt.UnixMilli(), ID: last.MessageID})
	}
	return out, nil
}

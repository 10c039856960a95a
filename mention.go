package chat

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxMentions is the most users one message mentions: the first
// MaxMentions distinct @userId candidates of a text are looked up, later
// ones are ignored, and more explicit mentionedUserIds than this are
// refused.
const MaxMentions = 100

// mentionTrail are the characters a mention may be followed by that are
// not part of the user id when the id with them is not a member's (see
// mentionCandidates).
const mentionTrail = `.,;:!?'")]}>…`

// mentionRun is one @ mention of a text: the run of characters after the
// @, and the run without its trailing punctuation (mentionTrail).
type mentionRun struct{ full, trimmed string }

// mentionRuns returns the mentions of a text (see docs/api.md, Mentions):
// an @ at the start of the text or after a character that is not a
// letter, digit, underscore or @ starts a mention, which runs to the next
// whitespace or control character. At most limit runs.
func mentionRuns(text string, limit int) []mentionRun {
	if strings.IndexByte(text, '@') < 0 {
		return nil
	}
	var out []mentionRun
	prev := rune(-1) // the rune before i; -1 at the start
	for i := 0; i < len(text) && len(out) < limit; {
		r, n := utf8.DecodeRuneInString(text[i:])
		if r != '@' || prev == '@' || prev == '_' || unicode.IsLetter(prev) || unicode.IsDigit(prev) {
			prev = r
			i += n
			continue
		}
		start := i + n
		end := start
		for end < len(text) {
			c, m := utf8.DecodeRuneInString(text[end:])
			if unicode.IsSpace(c) || unicode.IsControl(c) || c == utf8.RuneError && m == 1 {
				break
			}
			end += m
		}
		run := text[start:end]
		if t := strings.TrimRight(run, mentionTrail); t != "" {
			out = append(out, mentionRun{full: run, trimmed: t})
		}
		prev = '@'
		if end > start {
			prev, _ = utf8.DecodeLastRuneInString(run)
		}
		i = end
	}
	return out
}

// mentionText returns the text whose @userId mentions count: data.text
// of a text message, the caption of an image message, "" otherwise.
func mentionText(typ MessageType, data map[string]any) string {
	var t any
	switch typ {
	case MessageTypeText:
		t = data["text"]
	case MessageTypeImage:
		t = data["caption"]
	}
	s, _ := t.(string)
	return s
}

// mentions returns the users a message by authorID in channelID mentions:
// the members among the @userId candidates of text, then the explicit
// ids (validated, without duplicates), each of which must be a member
// (else CodeBadRequest on mentionedUserIds). The author is never among
// them. Nil, without reading the store, when the text has no @ and there
// are no explicit ids: the cost of a message without mentions.
func (s *Service) mentions(ctx context.Context, tx Tx, channelID, authorID, text string, explicit []string) ([]string, error) {
	runs := mentionRuns(text, MaxMentions)
	if len(runs) == 0 && len(explicit) == 0 {
		return nil, nil
	}
	ids := make([]string, 0, 2*len(runs)+len(explicit))
	for _, r := range runs {
		ids = append(ids, r.full)
		if r.trimmed != r.full {
			ids = append(ids, r.trimmed)
		}
	}
	ids = append(ids, explicit...)
	keep := ids[:0]
	for _, id := range ids {
		if id != authorID && len(id) <= s.lim.MaxIDBytes {
			keep = append(keep, id)
		}
	}
	ids = dedupe(keep)
	if len(ids) == 0 {
		return nil, nil
	}
	cus, err := tx.GetChannelUsers(ctx, channelID, ids)
	if err != nil {
		return nil, err
	}
	member := make(map[string]bool, len(cus))
	for _, cu := range cus {
		if cu.Membership == MembershipMember {
			member[cu.UserID] = true
		}
	}
	for _, id := range explicit {
		if id != authorID && !member[id] {
			return nil, invalid("mentionedUserIds", "user %s is not a member of channel %s", quote(id), quote(channelID))
		}
	}
	// In text order, then the explicit ones; of a run, the whole run
	// when it names a member ("@bob." is bob. when that is a member),
	// else the run without its trailing punctuation.
	var out []string
	seen := make(map[string]bool, len(ids))
	take := func(id string) bool {
		if id == authorID || !member[id] {
			return false
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
		return true
	}
	for _, r := range runs {
		if !take(r.full) {
			take(r.trimmed)
		}
	}
	for _, id := range explicit {
		take(id)
	}
	return out, nil
}

// checkMentionIDs validates explicit mentionedUserIds.
func (s *Service) checkMentionIDs(ids []string) ([]string, error) {
	if len(ids) > MaxMentions {
		return nil, invalid("mentionedUserIds", "at most %d users", MaxMentions)
	}
	return s.checkIDs("mentionedUserIds", ids, false)
}

// MentionQuery is the input of Service.QueryMentions.
type MentionQuery struct {
	// UserID is the mentioned user: the caller when empty.
	UserID string
	// ChannelID, when set, keeps the mentions of that channel only.
	ChannelID string
	// Limit is the page size (default 20, at most 100).
	Limit int
	// Token is a paging token from an earlier answer to the same query.
	Token string
}

// QueryMentions lists the live messages that mention q.UserID (see
// Message.MentionedUserIDs) in the channels where it is a member now,
// newest first (createdAt, then messageId, descending), with keyset
// paging tokens: next toward older mentions, previous toward newer ones.
// A user lists its own mentions; an admin anyone's. Errors:
// CodeBadRequest (bad ids, limit or token), CodePermissionDenied (another
// user's mentions, not an admin).
func (s *Service) QueryMentions(ctx context.Context, actorID string, q MentionQuery) (*MessageList, error) {
	if q.UserID == "" {
		q.UserID = actorID
	}
	if err := s.checkID("userId", q.UserID); err != nil {
		return nil, err
	}
	if q.ChannelID != "" {
		if err := s.checkID("channelId", q.ChannelID); err != nil {
			return nil, err
		}
	}
	limit, err := s.pageSize("options[limit]", q.Limit, s.lim.DefaultMessagePage)
	if err != nil {
		return nil, err
	}
	act := actOwnMentions
	if actorID != q.UserID {
		act = actUserMentions
	}
	qh := queryHash(q.UserID, q.ChannelID)
	f := MentionFilter{UserID: q.UserID, ChannelID: q.ChannelID, Limit: limit + 1}
	tok, _, err := s.openPage("options[token]", q.Token, "mentions", qh, q.Limit, limit)
	if err != nil {
		return nil, err
	}
	if tok != nil {
		f.After, f.Before = place(tok, &MessageSearchCursor{CreatedAt: tok.at(), MessageID: tok.ID})
	}
	var out *MessageList
	err = s.view(ctx, func(tx Tx) error {
		if _, err := s.authorize(ctx, tx, actorID, act, ""); err != nil {
			return err
		}
		ms, err := tx.QueryMentions(ctx, f)
		if err != nil {
			return err
		}
		out, err = s.newestFirstPage(ctx, tx, ms, limit, f.Before != nil, tok, "mentions", qh)
		return err
	})
	return out, err
}

// MentionFilter selects the live messages whose MentionedUserIDs name
// UserID, in the channels where UserID is a member now (in ChannelID only
// when set). Results are newest first (CreatedAt descending, then
// MessageID descending); After and Before work as in MessageSearch.
// Limit > 0 bounds the count.
type MentionFilter struct {
	UserID    string
	ChannelID string
	After     *MessageSearchCursor
	Before    *MessageSearchCursor
	Limit     int
}

// MentionStore answers from the index of mentions that CreateMessage,
// AppendMessage and UpdateMessage keep in step with each message's
// MentionedUserIDs (one row per mentioned user, with the message's
// channel, channelSegment and createdAt).
type MentionStore interface {
	// UnreadMentionCounts returns, for each relation of cus in order, the
	// number of live (not deleted) messages of cu.ChannelID whose
	// MentionedUserIDs name cu.UserID and whose channelSegment is above
	// cu.ReadToSegment. Its cost grows with those mentions, never with
	// the channel's messages.
	UnreadMentionCounts(ctx context.Context, cus []*ChannelUser) ([]int64, error)
	// QueryMentions returns the messages matching f.
	QueryMentions(ctx context.Context, f MentionFilter) ([]*Message, error)
}

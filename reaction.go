package chat

import (
	"context"
	"maps"
	"time"
)

// Reactor is one reaction in the reactors listing.
type Reactor struct {
	ReactionID   string `json:"reactionId"`
	ReactionName string `json:"reactionName"`
	UserID       string `json:"userId"`
	CreatedAt    Time   `json:"createdAt"`
}

// ReactionGroup is the reactors of one item.
type ReactionGroup struct {
	ReferenceID   string        `json:"referenceId"`
	ReferenceType ReferenceType `json:"referenceType"`
	Reactors      []Reactor     `json:"reactors"`
}

// ReactorResults is the "results" object of the reactors listing.
type ReactorResults struct {
	Reactions []ReactionGroup `json:"reactions"`
	Users     []User          `json:"users"`
}

// ReactorList is the response of the reactors query.
type ReactorList struct {
	Results ReactorResults `json:"results"`
	Paging  *Paging        `json:"paging,omitempty"`
}

// ReactorQuery selects the reactions to one item, newest first.
type ReactorQuery struct {
	ReferenceID   string
	ReferenceType ReferenceType
	ReactionName  string
	Skip          int
	Limit         int
	Token         string
}

func (s *Service) checkReference(referenceID string, referenceType ReferenceType) error {
	if err := s.checkID("referenceId", referenceID); err != nil {
		return err
	}
	if referenceType == "" {
		return invalid("referenceType", "is required (message)")
	}
	if referenceType != ReferenceTypeMessage {
		return invalid("referenceType", "must be message")
	}
	return nil
}

// QueryReactors lists who reacted to a message, newest first. Errors:
// CodeBadRequest (validation, bad token), CodeNotFound (message).
func (s *Service) QueryReactors(ctx context.Context, actorID string, q ReactorQuery) (*ReactorList, error) {
	if err := s.checkReference(q.ReferenceID, q.ReferenceType); err != nil {
		return nil, err
	}
	if q.ReactionName != "" {
		if err := s.checkID("options.reactionName", q.ReactionName); err != nil {
			return nil, err
		}
	}
	if q.Skip < 0 {
		return nil, invalid("options.skip", "must not be negative")
	}
	limit, err := s.pageSize("options.limit", q.Limit, s.lim.DefaultPage)
	if err != nil {
		return nil, err
	}
	qh := queryHash(q.ReferenceID, q.ReactionName)
	f := ReactionFilter{MessageID: q.ReferenceID, ReactionName: q.ReactionName}
	var tok *pageToken
	if q.Token != "" {
		if tok, err = s.decodeToken("options.token", q.Token, "reactions", qh); err != nil {
			return nil, err
		}
		cur := &ReactionCursor{CreatedAt: time.UnixMilli(tok.T).UTC(), ReactionID: tok.ID}
		if tok.D == "n" {
			f.After = cur
		} else {
			f.Before = cur
		}
		if q.Limit == 0 && tok.L > 0 {
			limit = tok.L
		}
	} else {
		f.Offset = q.Skip
	}
	f.Limit = limit + 1
	out := &ReactorList{Paging: &Paging{}}
	err = s.view(ctx, func(tx Tx) error {
		m, err := tx.GetMessage(ctx, q.ReferenceID)
		if err != nil {
			return notFound(err, "message", q.ReferenceID)
		}
		if _, err := s.authorize(ctx, tx, actorID, actReadMessages, m.ChannelID); err != nil {
			return err
		}
		rs, err := tx.QueryReactions(ctx, f)
		if err != nil {
			return err
		}
		blocked, err := s.blockedSet(ctx, tx, actorID)
		if err != nil {
			return err
		}
		more := len(rs) > limit
		if more {
			rs = rs[:limit]
		}
		if f.Before != nil {
			reverse(rs)
		}
		g := ReactionGroup{ReferenceID: q.ReferenceID, ReferenceType: ReferenceTypeMessage, Reactors: make([]Reactor, 0, len(rs))}
		ids := make([]string, 0, len(rs))
		for _, r := range rs {
			if blocked[r.UserID] {
				continue // the caller blocks this reactor; the paging bounds stay
			}
			g.Reactors = append(g.Reactors, Reactor{ReactionID: r.ReactionID, ReactionName: r.ReactionName, UserID: r.UserID, CreatedAt: r.CreatedAt})
			ids = append(ids, r.UserID)
		}
		us, err := tx.GetUsers(ctx, dedupe(ids))
		if err != nil {
			return err
		}
		out.Results = ReactorResults{Reactions: []ReactionGroup{g}, Users: userValues(us)}
		if len(rs) > 0 {
			first, last := rs[0], rs[len(rs)-1]
			if (tok == nil || tok.D == "n") && more || tok != nil && tok.D == "p" {
				out.Paging.Next = s.encodeToken(pageToken{K: "reactions", Q: qh, D: "n", T: last.CreatedAt.UnixMilli(), ID: last.ReactionID, L: limit})
			}
			if tok != nil && (tok.D == "n" || more) || tok == nil && q.Skip > 0 {
				out.Paging.Previous = s.encodeToken(pageToken{K: "reactions", Q: qh, D: "p", T: first.CreatedAt.UnixMilli(), ID: first.ReactionID, L: limit})
			}
		}
		return nil
	})
	return out, err
}

// AddReaction adds the acting admin's user's reaction to a message and
// returns its id; adding it again returns the same id. Emits
// reaction.didAdd when new. Errors: CodeBadRequest, CodeNotFound (message
// absent or deleted), CodeForbidden (the message's channel is closed),
// CodeGlobalBanned.
func (s *Service) AddReaction(ctx context.Context, actorID, referenceID string, referenceType ReferenceType, name string) (string, error) {
	if err := s.checkReference(referenceID, referenceType); err != nil {
		return "", err
	}
	if err := s.checkID("reactionName", name); err != nil {
		return "", err
	}
	now := s.Now()
	var id string
	err := s.update(ctx, func(tx Tx, ev *events) error {
		m, err := tx.LockMessage(ctx, referenceID)
		if err != nil {
			return notFound(err, "message", referenceID)
		}
		if _, err := s.authorize(ctx, tx, actorID, actReact, m.ChannelID); err != nil {
			return err
		}
		if _, err := openChannel(ctx, tx, m.ChannelID); err != nil {
			return err
		}
		if m.IsDeleted {
			return Errorf(CodeNotFound, "message %s is deleted", quote(referenceID))
		}
		us, err := tx.EnsureUsers(ctx, []string{actorID}, now.Time)
		if err != nil {
			return err
		}
		if us[0].IsGlobalBan {
			return Errorf(CodeGlobalBanned, "user %s is globally banned", quote(actorID))
		}
		r, inserted, err := AddMessageReaction(ctx, tx, m, &Reaction{ReactionID: s.newID(), ReferenceID: referenceID,
			ReferenceType: ReferenceTypeMessage, ReactionName: name, UserID: actorID, CreatedAt: now})
		if err != nil {
			return err
		}
		id = r.ReactionID
		if inserted {
			s.present(m)
			ev.add(EventReactionDidAdd, ReactionEventData{Reactions: []Reaction{*r}, Messages: []Message{*m}, Users: userValues(us)})
		}
		return nil
	})
	return id, err
}

// RemoveReaction removes the acting admin's user's reaction and returns
// its id ("" when there was none: removing is idempotent). Emits
// reaction.didRemove when one was removed. Errors: CodeBadRequest,
// CodeNotFound (message), CodeForbidden (closed channel).
func (s *Service) RemoveReaction(ctx context.Context, actorID, referenceID string, referenceType ReferenceType, name string) (string, error) {
	if err := s.checkReference(referenceID, referenceType); err != nil {
		return "", err
	}
	if err := s.checkID("reactionName", name); err != nil {
		return "", err
	}
	var id string
	err := s.update(ctx, func(tx Tx, ev *events) error {
		m, err := tx.LockMessage(ctx, referenceID)
		if err != nil {
			return notFound(err, "message", referenceID)
		}
		if _, err := s.authorize(ctx, tx, actorID, actReact, m.ChannelID); err != nil {
			return err
		}
		if _, err := openChannel(ctx, tx, m.ChannelID); err != nil {
			return err
		}
		r, err := RemoveMessageReaction(ctx, tx, m, actorID, name)
		if ErrorCode(err) == CodeNotFound {
			return nil
		}
		if err != nil {
			return err
		}
		id = r.ReactionID
		us, err := tx.GetUsers(ctx, []string{actorID})
		if err != nil {
			return err
		}
		s.present(m)
		ev.add(EventReactionDidRemove, ReactionEventData{Reactions: []Reaction{*r}, Messages: []Message{*m}, Users: userValues(us)})
		return nil
	})
	return id, err
}

// AddMessageReaction stores r, a reaction to m, unless the user has that
// reaction already, and counts it: m.Reactions[r.ReactionName] and
// m.ReactionsCount grow by one and are written with SetReactionCounts. m
// must be held (LockMessage) in the same transaction, so that concurrent
// reactions count exactly. It returns the stored reaction and whether it
// is new.
func AddMessageReaction(ctx context.Context, tx Tx, m *Message, r *Reaction) (*Reaction, bool, error) {
	got, inserted, err := tx.AddReaction(ctx, r)
	if err != nil || !inserted {
		return got, inserted, err
	}
	return got, true, countReaction(ctx, tx, m, r.ReactionName, 1)
}

// RemoveMessageReaction removes the user's reaction of name to m, held
// as in AddMessageReaction, uncounts it and returns it; CodeNotFound when
// there is none.
func RemoveMessageReaction(ctx context.Context, tx Tx, m *Message, userID, name string) (*Reaction, error) {
	r, err := tx.RemoveReaction(ctx, userID, m.MessageID, name)
	if err != nil {
		return nil, err
	}
	return r, countReaction(ctx, tx, m, name, -1)
}

// countReaction adds d to m's count of name (a name whose count reaches 0
// is dropped) and to its reactionsCount, and writes them.
func countReaction(ctx context.Context, tx Tx, m *Message, name string, d int) error {
	counts := make(map[string]int, len(m.Reactions)+1)
	maps.Copy(counts, m.Reactions)
	if counts[name] += d; counts[name] <= 0 {
		delete(counts, name)
	}
	m.Reactions = counts
	m.ReactionsCount += d
	return tx.SetReactionCounts(ctx, m, name)
}

// MostReactedQuery selects the messages with the most reactions of one
// name. Limit 0 means 10; at most 100. ChannelID scopes it (ext).
type MostReactedQuery struct {
	ReactionName string
	ChannelID    string
	Limit        int
}

// MostReacted lists live messages by the count of one reaction, then
// newest; messages without it are left out. Errors: CodeBadRequest.
func (s *Service) MostReacted(ctx context.Context, actorID string, q MostReactedQuery) (*MessageList, error) {
	if err := s.checkID("reactionName", q.ReactionName); err != nil {
		return nil, err
	}
	if q.ChannelID != "" {
		if err := s.checkID("channelId", q.ChannelID); err != nil {
			return nil, err
		}
	}
	limit, err := s.pageSize("limit", q.Limit, 10)
	if err != nil {
		return nil, err
	}
	var out *MessageList
	act := actReadMessages
	if q.ChannelID == "" {
		act = actReadAllMessages
	}
	err = s.view(ctx, func(tx Tx) error {
		if _, err := s.authorize(ctx, tx, actorID, act, q.ChannelID); err != nil {
			return err
		}
		ms, err := tx.MostReacted(ctx, q.ReactionName, q.ChannelID, limit)
		if err != nil {
			return err
		}
		out, err = s.messageList(ctx, tx, ms)
		return err
	})
	return out, err
}

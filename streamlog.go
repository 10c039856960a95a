package chat

import (
	"context"
	"time"
)

// The methods below serve an event stream (package stream): the event
// log's position and reads, its retention, stream tickets, and what a
// subscription reads when it starts.

// LastEventID returns the greatest event id ever assigned (0 when none).
func (s *Service) LastEventID(ctx context.Context) (last int64, err error) {
	err = s.store.View(ctx, func(tx Tx) error {
		last, err = tx.LastEventID(ctx)
		return err
	})
	return last, err
}

// ReadEvents returns up to limit events of the log with an id greater
// than after, ascending. A store that keeps its latest events in memory
// (RecentEventReader) serves them without a read transaction: then fewer
// than limit events may come back while the log holds more (those of
// another process, or of a commit under way); the next call returns them.
func (s *Service) ReadEvents(ctx context.Context, after int64, limit int) (es []*Event, err error) {
	if r, ok := s.store.(RecentEventReader); ok && limit > 0 {
		if es := r.RecentEvents(after, limit); len(es) > 0 {
			return es, nil
		}
	}
	err = s.store.View(ctx, func(tx Tx) error {
		es, err = tx.ReadEvents(ctx, after, limit)
		return err
	})
	return es, err
}

// WatchEvents implements EventWatcher with the store's signals: those of
// an EventWatcher store, else those of an OutboxWatcher store (every
// commit that wrote events). With a store that signals neither the
// channel is nil: a reader of the log polls.
func (s *Service) WatchEvents(ctx context.Context) (<-chan struct{}, error) {
	if w, ok := s.store.(EventWatcher); ok {
		return w.WatchEvents(ctx)
	}
	if w, ok := s.store.(OutboxWatcher); ok {
		return w.WatchOutbox(ctx)
	}
	return nil, nil
}

// DeleteEventsBefore deletes up to limit of the oldest events created
// before the time, in one transaction, and returns how many it deleted.
func (s *Service) DeleteEventsBefore(ctx context.Context, before time.Time, limit int) (n int, err error) {
	err = s.store.Update(ctx, func(tx Tx) error {
		n, err = tx.DeleteEventsBefore(ctx, before, limit)
		return err
	})
	return n, err
}

// SaveStreamTicket stores a stream ticket. A ticket with the same hash is
// CodeConflict.
func (s *Service) SaveStreamTicket(ctx context.Context, tk *StreamTicket) error {
	return s.store.Update(ctx, func(tx Tx) error { return tx.PutTicket(ctx, tk) })
}

// RedeemStreamTicket deletes the stream ticket with the hash and returns
// it. The ticket is spent whatever the outcome: the error is CodeNotFound
// for an unknown, spent or expired ticket, and the access check's (see
// Access.Check) for a ticket whose access is no longer valid. Of several
// redeems of one ticket at once, on any processes, one succeeds.
func (s *Service) RedeemStreamTicket(ctx context.Context, hash string) (*StreamTicket, error) {
	var tk *StreamTicket
	var invalid error // the access's: the ticket is spent all the same
	now := s.Now().Time
	err := s.store.Update(ctx, func(tx Tx) (err error) {
		if tk, err = tx.TakeTicket(ctx, hash); err != nil {
			return err
		}
		if a := tk.Access(); a != nil && now.Before(tk.ExpiresAt.Time) {
			invalid = a.Check(ctx, tx, now)
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case !now.Before(tk.ExpiresAt.Time):
		return nil, Errorf(CodeNotFound, "the stream ticket has expired")
	case invalid != nil:
		return nil, invalid
	}
	return tk, nil
}

// Access returns the access a ticket was issued under: an admin
// account's, an end user's token, or nil for an admin ticket issued
// without one.
func (tk *StreamTicket) Access() *Access {
	if tk.Admin {
		if len(tk.TokenHash) == 0 {
			return nil
		}
		return &Access{AdminName: tk.AdminName, TokenHash: tk.TokenHash}
	}
	return &Access{UserID: tk.UserID, IssuedAt: tk.TokenIssuedAt, ExpiresAt: tk.TokenExpiresAt}
}

// DeleteStreamTicketsBefore deletes up to limit stream tickets that
// expired before the time, in one transaction, and returns how many it
// deleted.
func (s *Service) DeleteStreamTicketsBefore(ctx context.Context, before time.Time, limit int) (n int, err error) {
	err = s.store.Update(ctx, func(tx Tx) error {
		n, err = tx.DeleteTicketsBefore(ctx, before, limit)
		return err
	})
	return n, err
}

// MemberChannelIDs returns the ids of the channels where the user is a
// member that have at most maxMembers members (any number when maxMembers
// is 0 or less).
func (s *Service) MemberChannelIDs(ctx context.Context, userID string, maxMembers int) (ids []string, err error) {
	err = s.store.View(ctx, func(tx Tx) error {
		ids, err = memberChannelIDs(ctx, tx, userID, maxMembers, ids[:0])
		return err
	})
	return ids, err
}

// memberChannelIDs appends to ids those of the channels where the user is
// a member with at most maxMembers members (any when 0 or less), a page at
// a time.
func memberChannelIDs(ctx context.Context, tx Tx, userID string, maxMembers int, ids []string) ([]string, error) {
	const page = 500
	var cur *ChannelCursor
	for {
		cs, err := tx.QueryChannels(ctx, ChannelFilter{MemberOf: userID, After: cur, Limit: page})
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			if maxMembers <= 0 || c.MemberCount <= maxMembers {
				ids = append(ids, c.ChannelID)
			}
		}
		if len(cs) < page {
			return ids, nil
		}
		l := cs[len(cs)-1]
		cur = &ChannelCursor{CreatedAt: l.CreatedAt.Time, ChannelID: l.ChannelID}
	}
}

// StreamStart is what an event stream reads when it starts, in one
// snapshot (see OpenStream).
type StreamStart struct {
	// LastEventID is the log's last id.
	LastEventID int64
	// Resumed reports whether the event the stream resumes after is
	// still in the log.
	Resumed bool
	// For an end user's stream: the users the user blocks, and the
	// channels where the user is a member.
	Blocked  []string
	Channels []string
}

// OpenStream reads, in one snapshot, where an event stream starts: the
// log's last id; then, with access, checks that the access is still
// valid (a revocation the snapshot does not see has a greater event id,
// which the stream receives); with after in (0, last id], whether that
// event is still in the log; and for an end user's stream (admin false)
// the user's blocks and member channels. A globally banned user gets no
// stream (CodeGlobalBanned).
func (s *Service) OpenStream(ctx context.Context, userID string, admin bool, access *Access, after int64) (*StreamStart, error) {
	st := &StreamStart{}
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		if st.LastEventID, err = tx.LastEventID(ctx); err != nil {
			return err
		}
		if access != nil {
			if err := access.Check(ctx, tx, s.Now().Time); err != nil {
				return err
			}
		}
		if after > 0 && after <= st.LastEventID {
			es, err := tx.ReadEvents(ctx, after-1, 1)
			if err != nil {
				return err
			}
			st.Resumed = len(es) == 1 && es[0].ID == after
		}
		if admin {
			return nil
		}
		u, err := tx.GetUser(ctx, userID)
		switch {
		case ErrorCode(err) == CodeNotFound:
		case err != nil:
			return err
		case u.IsGlobalBan:
			return Errorf(CodeGlobalBanned, "user %q is globally banned", userID)
		}
		bs, err := tx.ListBlocks(ctx, userID)
		if err != nil {
			return err
		}
		st.Blocked = st.Blocked[:0]
		for _, b := range bs {
			st.Blocked = append(st.Blocked, b.BlockedID)
		}
		st.Channels, err = memberChannelIDs(ctx, tx, userID, 0, st.Channels[:0])
		return err
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

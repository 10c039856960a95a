package chat

import (
	"context"
	"encoding/json"
	"time"
)

// Event is one entry of the event log: an event written in the
// transaction of the change that caused it. The webhook deliveries and the
// event streams both come from it.
//
// ID is assigned by the store when the event is appended; ids increase in
// commit order, so a reader that has seen every event up to an id never
// later finds a smaller one. ChannelID is the channel the event is about
// ("" for user events); UserIDs are the users it is about (added, removed,
// banned, muted or updated users): together they decide who may see it.
type Event struct {
	ID        int64           `json:"id"`
	Name      string          `json:"event"`
	ChannelID string          `json:"-"`
	UserIDs   []string        `json:"-"`
	Data      json.RawMessage `json:"data"`
	CreatedAt Time            `json:"createdAt"`
	// Deferred are the deliveries of the event leased to a taker, for a
	// store with the DeliveryDeferrer capability to keep with the event.
	// Set by the Service; other stores ignore it, and ReadEvents leaves
	// it empty.
	Deferred []DeferredDelivery `json:"-"`
}

// EventStore is the event log.
type EventStore interface {
	// AppendEvents appends events in order and sets their ID. The ids are
	// greater than every id committed before, and an event becomes
	// readable only with every event of smaller id (ids follow commit
	// order). A store that numbers events after the commit (Postgres)
	// sets the ids by the time Update returns, unless the transaction's
	// context says they are not needed (WithoutEventIDs): then Update
	// returns at the commit, the ids stay 0, and the events become
	// readable shortly after.
	AppendEvents(ctx context.Context, es []*Event) error
	// ReadEvents returns up to limit events with ID > after, ascending.
	ReadEvents(ctx context.Context, after int64, limit int) ([]*Event, error)
	// LastEventID returns the greatest id ever assigned (0 when none),
	// even when that event was deleted by retention.
	LastEventID(ctx context.Context) (int64, error)
	// DeleteEventsBefore deletes up to limit of the oldest events created
	// before the given time and returns how many it deleted.
	DeleteEventsBefore(ctx context.Context, before time.Time, limit int) (int, error)
}

// RecentEventReader is an optional capability of a Store that keeps the
// events it committed last in memory (the SQLite store): the hubs read
// the log right after each commit that wrote events, and are served
// without a read transaction. RecentEvents returns the events with ids
// after+1, after+2, ... that it holds, at most limit (no bound when limit
// <= 0), and stops at the first id it does not hold (an event of another
// process, one not committed yet, or one too old): nil when it does not
// hold after+1. What it returns is committed and in the log (or was, until
// retention deleted it), exactly as ReadEvents would return it; a caller
// that gets fewer events than it asked for reads the rest from the store
// (Service.ReadEvents does both).
type RecentEventReader interface {
	RecentEvents(after int64, limit int) []*Event
}

type noEventIDsKey struct{}

// WithoutEventIDs returns a context telling the store that the caller
// will not read the ids that AppendEvents sets: a store that numbers
// events after the commit may then return from Update without waiting for
// them. The Service's CreateMessage transactions carry it: a message's
// event may then reach the log (and the streams) a moment after
// CreateMessage returned; other changes wait, so that a stream opened
// after a membership change returns sees the log with it.
func WithoutEventIDs(ctx context.Context) context.Context {
	return context.WithValue(ctx, noEventIDsKey{}, true)
}

// EventIDsWanted reports whether the caller of a transaction may read the
// ids AppendEvents sets (the context does not carry WithoutEventIDs).
func EventIDsWanted(ctx context.Context) bool {
	v, _ := ctx.Value(noEventIDsKey{}).(bool)
	return !v
}

// eventScope returns the channel and the users an event is about.
func eventScope(data any) (channelID string, userIDs []string) {
	switch d := data.(type) {
	case *MessageList:
		if len(d.Messages) > 0 {
			channelID = d.Messages[0].ChannelID
		}
	case MessageEventData:
		if len(d.Messages) > 0 {
			channelID = d.Messages[0].ChannelID
		}
	case PreSendFlagEventData:
		if len(d.Messages) > 0 {
			channelID = d.Messages[0].ChannelID
		}
	case ChannelEventData:
		channelID, userIDs = d.Channel.ChannelID, d.UserIDs
	case closedChannelData:
		channelID, userIDs = d.Channel.ChannelID, d.members
	case UserEventData:
		for _, u := range d.Users {
			userIDs = append(userIDs, u.UserID)
		}
	case AccessEventData:
		if d.UserID != "" {
			userIDs = []string{d.UserID}
		}
	case BlockEventData:
		userIDs = []string{d.UserID}
	case ReactionEventData:
		if len(d.Messages) > 0 {
			channelID = d.Messages[0].ChannelID
		}
	case ReportEventData:
		// About no channel and no user: only admins' streams (and
		// webhooks) receive reports, never the reporter's or the
		// reported user's.
	}
	return channelID, userIDs
}

// RecentEvents returns up to n of the newest events of the log (n is
// bounded to 1-100), newest first, internal events (IsInternalEvent) left
// out. The admin panel's dashboard shows them
// as recent activity. Errors: only the store's.
func (s *Service) RecentEvents(ctx context.Context, n int) ([]Event, error) {
	n = max(1, min(n, 100))
	var out []Event
	err := s.view(ctx, func(tx Tx) error {
		last, err := tx.LastEventID(ctx)
		if err != nil {
			return err
		}
		es, err := tx.ReadEvents(ctx, max(0, last-int64(n)), n)
		if err != nil {
			return err
		}
		for i := len(es) - 1; i >= 0; i-- {
			if !IsInternalEvent(es[i].Name) {
				out = append(out, *es[i])
			}
		}
		return nil
	})
	return out, err
}

// closedChannelData is the data of channel.didClose, encoded as its
// ChannelEventData, with the members the close removed: they are the
// users the event is about (Event.UserIDs), so that a stream resuming
// from before the close knows they were members until then. They are not
// in the event's data.
type closedChannelData struct {
	ChannelEventData
	members []string
}

package sqlite

import (
	"context"
	"database/sql"
	"time"

	chat "github.com/chatengine/chat"
)

// AppendEvents implements chat.EventStore. The rowid alias comes from
// AUTOINCREMENT; SQLite runs one write transaction at a time, so the ids
// follow commit order.
func (t *tx) AppendEvents(ctx context.Context, es []*chat.Event) error {
	for _, e := range es {
		// The id is the row's rowid (INTEGER PRIMARY KEY): the insert's
		// last insert rowid, without RETURNING (a temporary table per run).
		deferred, err := t.deferredOf(ctx, e)
		if err != nil {
			return err
		}
		r, err := t.exec(ctx, `INSERT INTO events (name, channel_id, user_ids, data, created_at, deferred) VALUES (?,?,?,?,?,?)`,
			e.Name, e.ChannelID, jsonIDs(e.UserIDs), []byte(e.Data), ms(e.CreatedAt), deferred)
		if err != nil {
			return err
		}
		if e.ID, err = r.LastInsertId(); err != nil {
			return translate(err)
		}
		t.noteDeferred(e, e.ID)
		if t.write {
			// Kept for the store's recent events once committed (a
			// copy: the caller's event is its own).
			c := *e
			c.Data = c.Data[:len(c.Data):len(c.Data)]
			c.Deferred = nil
			t.events = append(t.events, &c)
		}
	}
	if len(es) > 0 {
		t.signal |= sigEvents
	}
	return nil
}

func scanEvent(sc scanner) (*chat.Event, error) {
	var (
		e       chat.Event
		ids     string
		data    []byte
		created int64
	)
	if err := sc.Scan(&e.ID, &e.Name, &e.ChannelID, &ids, &data, &created); err != nil {
		return nil, err
	}
	if err := fromJSON(ids, &e.UserIDs); err != nil {
		return nil, err
	}
	e.Data = data
	e.CreatedAt = fromMs(created)
	return &e, nil
}

// ReadEvents implements chat.EventStore. With a limit the rows are a
// primary key range under it, read with keyed (every hub reads the log
// after each commit that wrote events).
func (t *tx) ReadEvents(ctx context.Context, after int64, limit int) ([]*chat.Event, error) {
	read := list[*chat.Event]
	if limit > 0 {
		read = keyed[*chat.Event]
	}
	return read(t, ctx, scanEvent, `SELECT id, name, channel_id, user_ids, data, created_at
		FROM events WHERE id > ? ORDER BY id LIMIT `+limitParam, after, limitArg(limit))
}

// LastEventID implements chat.EventStore: the AUTOINCREMENT counter, which
// keeps the greatest id even when its row is deleted.
func (t *tx) LastEventID(ctx context.Context) (int64, error) {
	var seq sql.NullInt64
	err := t.row(ctx, `SELECT max(seq) FROM sqlite_sequence WHERE name = 'events'`, nil, &seq)
	return seq.Int64, err
}

// DeleteEventsBefore implements chat.EventStore. It keeps the events
// whose deferred deliveries a store may still have to insert: those after
// the smallest resolved_through of deferred_owners.
func (t *tx) DeleteEventsBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	// An event with deferred deliveries that a lapsed owner row may still
	// need is kept (deferred.go).
	n, err := t.execN(ctx, `DELETE FROM events WHERE id IN
		(SELECT id FROM events WHERE created_at < ? AND (deferred IS NULL
			OR id <= (SELECT coalesce(min(resolved_through), 9223372036854775807) FROM deferred_owners))
		ORDER BY id LIMIT `+limitParam+`)`,
		ms(chat.NewTime(before)), limitArg(limit))
	return int(n), err
}

package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/lib/pq"
)

// AppendEvents implements chat.EventStore with one statement: it adds
// len(es) to the counter row of event_log_head, inserts the events with
// the ids below the new value, and calls pg_notify so that every LISTENing
// process wakes when the transaction commits. The counter row stays locked
// until commit, so ids follow commit order; the Service appends events as
// the last step of a transaction, so the lock is held only briefly.
func (t *tx) AppendEvents(ctx context.Context, es []*chat.Event) error {
	n := len(es)
	if n == 0 {
		return nil
	}
	names, chans, users, createds := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	data := make(pq.ByteaArray, n)
	for i, e := range es {
		ids := e.UserIDs
		if ids == nil {
			ids = []string{}
		}
		b, err := json.Marshal(ids)
		if err != nil {
			return err
		}
		names[i], chans[i], users[i], createds[i] = e.Name, e.ChannelID, string(b), timeText(e.CreatedAt.Time)
		data[i] = bytesArg(e.Data)
	}
	var last int64
	var inserted, notified int
	err := t.queryRow(ctx, `WITH head AS (
			UPDATE {s}event_log_head SET last_id = last_id + $1 RETURNING last_id
		), ins AS (
			INSERT INTO {s}events (id, name, channel_id, user_ids, data, created_at)
			SELECT (SELECT last_id FROM head) - $1 + x.ord, x.n, x.c, x.u, x.d, x.t::timestamptz
			FROM unnest($2::text[], $3::text[], $4::text[], $5::bytea[], $6::text[])
				WITH ORDINALITY AS x(n, c, u, d, t, ord)
			RETURNING 1
		), notify AS (
			SELECT pg_notify($7, '')
		)
		SELECT (SELECT last_id FROM head), (SELECT count(*) FROM ins), (SELECT count(*) FROM notify)`,
		[]any{int64(n), textArray(names), textArray(chans), textArray(users), data, textArray(createds), t.s.notify},
		&last, &inserted, &notified)
	if err != nil {
		return err
	}
	for i, e := range es {
		e.ID = last - int64(n) + int64(i) + 1
	}
	t.notified = true
	return nil
}

func scanEvent(r *sql.Rows) (*chat.Event, error) {
	var (
		e   chat.Event
		ids string
		at  time.Time
	)
	if err := r.Scan(&e.ID, &e.Name, &e.ChannelID, &ids, &e.Data, &at); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(ids), &e.UserIDs); err != nil {
		return nil, err
	}
	e.CreatedAt = chat.NewTime(at)
	return &e, nil
}

// ReadEvents implements chat.EventStore.
func (t *tx) ReadEvents(ctx context.Context, after int64, limit int) ([]*chat.Event, error) {
	if limit <= 0 {
		limit = 1 << 30
	}
	var out []*chat.Event
	err := t.query(ctx, `SELECT id, name, channel_id, user_ids, data, created_at FROM {s}events
		WHERE id > $1 ORDER BY id LIMIT $2`, []any{after, limit}, func(r *sql.Rows) error {
		e, err := scanEvent(r)
		if err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

// LastEventID implements chat.EventStore: the counter row, which keeps the
// greatest id even when retention deleted its event.
func (t *tx) LastEventID(ctx context.Context) (int64, error) {
	var last int64
	err := t.queryRow(ctx, `SELECT last_id FROM {s}event_log_head`, nil, &last)
	return last, err
}

// DeleteEventsBefore implements chat.EventStore.
func (t *tx) DeleteEventsBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		limit = 1 << 30
	}
	n, err := t.exec(ctx, `DELETE FROM {s}events WHERE id IN
		(SELECT id FROM {s}events WHERE created_at < $1 ORDER BY id LIMIT $2)`, before.UTC(), limit)
	return int(n), err
}

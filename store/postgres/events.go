package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/lib/pq"
)

// AppendEvents implements chat.EventStore with one statement that inserts
// the events into events_pending, keyed by a sequence: writers share no
// row and send no notification, so transactions that append events run
// and commit in parallel. Ids are given after the commit, by the relay
// (relay.go): Update waits for it before it returns and then sets the
// events' ID. The statement also reads the log's counter row without a
// lock, a floor for the ids the relay will give.
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
	ev := &eventRows{es: es, names: names, chans: chans, users: users, data: data, createds: createds}
	pend, pendDel := t.pend, t.pendDel
	if g := t.grp; g != nil && pend != nil && pend.args[19] == nil && pend.row != nil {
		// A post of a commit group: its message, deliveries and events
		// are written with those of the group's other posts
		// (groupPosts).
		t.pend, t.pendDel, t.wrote = nil, nil, true
		g.add(t, pend, pendDel, ev)
		return nil
	}
	return t.writeEvents(ctx, ev)
}

// eventRows are the events of an AppendEvents, with the columns of their
// rows.
type eventRows struct {
	es                            []*chat.Event
	names, chans, users, createds []string
	data                          pq.ByteaArray
}

// writeEvents runs the statement of AppendEvents: the events alone, or
// with t's deferred AppendMessage and EnqueueDeliveries.
func (t *tx) writeEvents(ctx context.Context, ev *eventRows) error {
	es, n := ev.es, len(ev.es)
	seqs := make([]int64, 0, n)
	var floor, inserted, dlInserted, dlPending int64
	args := []any{textArray(ev.names), textArray(ev.chans), textArray(ev.users), ev.data, textArray(ev.createds)}
	tmpl, dest := appendEventsSQL, []any{nil, &floor}
	pend, pendDel := t.pend, t.pendDel
	switch {
	case pend != nil && pendDel != nil:
		// The deferred AppendMessage and EnqueueDeliveries run in the
		// same statement.
		t.pend, t.pendDel = nil, nil
		args = append(append(slices.Clip(pend.args), pendDel.args...), args...)
		tmpl, dest = appendWithDeliveriesSQL, append(dest, &inserted, &dlInserted, &dlPending)
	case pend != nil:
		// The deferred AppendMessage runs in the same statement.
		t.pend = nil
		tmpl, args, dest = appendWithEventsSQL, append(slices.Clip(pend.args), args...), append(dest, &inserted)
	}
	err := t.query(ctx, tmpl, args, func(r *sql.Rows) error {
		var seq int64
		dest[0] = &seq
		if err := r.Scan(dest...); err != nil {
			return err
		}
		seqs = append(seqs, seq)
		return nil
	})
	switch {
	case pend != nil && (err == nil && inserted == 0 || chat.ErrorCode(err) == chat.CodeConflict):
		err = appendConflict(pend.messageID, pend.segment, pend.channelID)
	case err == nil && pendDel != nil:
		err = t.noteEnqueued(pendDel.n, int(dlInserted), int(dlPending))
	}
	if err != nil && pend != nil && t.failed == nil {
		t.failed = err
	}
	if err != nil {
		return err
	}
	if len(seqs) != n {
		return fmt.Errorf("postgres: AppendEvents: %d of %d events inserted", len(seqs), n)
	}
	// The sequence gives the rows their keys in insertion order, which is
	// the order of es; sorting guards the pairing all the same.
	slices.Sort(seqs)
	t.noteAppended(es, seqs, floor)
	return nil
}

// noteAppended records events appended with their pending keys and the
// log's last id read with them, for the relay after the commit.
func (t *tx) noteAppended(es []*chat.Event, seqs []int64, floor int64) {
	if t.appended == nil || floor < t.floor {
		t.floor = floor
	}
	for i, e := range es {
		e.ID = 0
		t.appended = append(t.appended, appended{e: e, seq: seqs[i]})
	}
}

// appendEventsSQL inserts events into events_pending in their order and returns
// each key with the log's last id (read without a lock).
const appendEventsSQL = `WITH ins AS (
		INSERT INTO {s}events_pending (name, channel_id, user_ids, data, created_at)
		SELECT x.n, x.c, x.u, x.d, x.t::timestamptz
		FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[])
			WITH ORDINALITY AS x(n, c, u, d, t, ord)
		ORDER BY x.ord
		RETURNING seq
	)
	SELECT seq, (SELECT last_id FROM {s}event_log_head) FROM ins`

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
// greatest id even when retention deleted its event. Events committed but
// not yet relayed have no id yet and are not counted.
func (t *tx) LastEventID(ctx context.Context) (int64, error) {
	var last int64
	err := t.queryRow(ctx, `SELECT last_id FROM {s}event_log_head`, nil, &last)
	return last, err
}

// deleteEventsSQL deletes up to $2 of the oldest events created before $1,
// the rows its subquery chose through the primary key ("= ANY
// (ARRAY(...))"): with "IN (SELECT ...)" a generic plan joins the batch
// with a sequential scan of the whole table, even with fresh statistics
// (the planner cannot know the batch is small). It runs unprepared
// (plannedEachRun).
const deleteEventsSQL = `DELETE FROM {s}events WHERE id = ANY (ARRAY(
		SELECT id FROM {s}events WHERE created_at < $1 ORDER BY id LIMIT $2))`

// DeleteEventsBefore implements chat.EventStore (deleteEventsSQL).
func (t *tx) DeleteEventsBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		limit = 1 << 30
	}
	n, err := t.exec(ctx, deleteEventsSQL, before.UTC(), limit)
	return int(n), err
}

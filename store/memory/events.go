package memory

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"time"

	chat "github.com/chatengine/chat"
)

// ---- event log ----

// AppendEvents assigns the next ids under the store's write lock, which
// serializes transactions: ids follow commit order.
func (t *tx) AppendEvents(_ context.Context, es []*chat.Event) error {
	if err := t.writable(); err != nil {
		return err
	}
	if len(es) == 0 {
		return nil
	}
	id := t.d.lastEventID
	list := t.d.events
	for _, e := range es {
		id++
		e.ID = id
		v := *e
		v.CreatedAt = nt(e.CreatedAt)
		v.UserIDs = slices.Clone(e.UserIDs)
		v.Data = slices.Clone(e.Data)
		list = append(list, &v)
	}
	replace(t, &t.d.events, list)
	replace(t, &t.d.lastEventID, id)
	t.signal |= sigEvents
	return nil
}

func cpEvent(e *chat.Event) *chat.Event {
	v := *e
	v.UserIDs = slices.Clone(e.UserIDs)
	v.Data = json.RawMessage(slices.Clone([]byte(e.Data)))
	return &v
}

func (t *tx) ReadEvents(_ context.Context, after int64, limit int) ([]*chat.Event, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	list := t.d.events
	i := sort.Search(len(list), func(i int) bool { return list[i].ID > after })
	var out []*chat.Event
	for ; i < len(list) && (limit <= 0 || len(out) < limit); i++ {
		out = append(out, cpEvent(list[i]))
	}
	return out, nil
}

func (t *tx) LastEventID(_ context.Context) (int64, error) {
	if err := t.readable(); err != nil {
		return 0, err
	}
	return t.d.lastEventID, nil
}

func (t *tx) DeleteEventsBefore(_ context.Context, before time.Time, limit int) (int, error) {
	if err := t.writable(); err != nil {
		return 0, err
	}
	list := t.d.events
	n := 0
	for n < len(list) && (limit <= 0 || n < limit) && list[n].CreatedAt.Before(before) {
		n++
	}
	if n > 0 {
		replace(t, &t.d.events, slices.Clone(list[n:]))
	}
	return n, nil
}

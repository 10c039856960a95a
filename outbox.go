package chat

import (
	"context"
	"encoding/json"
)

// events collects the events of one transaction; flushEvents turns them
// into outbox deliveries in the same transaction.
type events struct {
	list     []pendingEvent
	enqueued int
	pushes   int             // pushes written to the push outbox
	buf      [1]pendingEvent // the list's first element: most transactions emit one event
}

// pendingEvent is an event and its data. A *MessageList stands for the
// MessageEventData of its messages and users (see addMessages).
type pendingEvent struct {
	name string
	data any
}

func (e *events) add(name string, data any) {
	if e.list == nil {
		e.list = e.buf[:0]
	}
	e.list = append(e.list, pendingEvent{name, data})
}

// addMessages adds an event whose data is MessageEventData{Messages:
// l.Messages, Users: l.Users}, built only when a webhook receives it.
func (e *events) addMessages(name string, l *MessageList) { e.add(name, l) }

type hookCache struct {
	version int64
	hooks   []*Webhook
}

func (s *Service) webhooksTx(ctx context.Context, tx Tx) ([]*Webhook, error) {
	v, err := tx.WebhooksVersion(ctx)
	if err != nil {
		return nil, err
	}
	if c := s.hooks.Load(); c != nil && c.version == v {
		return c.hooks, nil
	}
	hs, err := tx.ListWebhooks(ctx)
	if err != nil {
		return nil, err
	}
	s.hooks.Store(&hookCache{version: v, hooks: hs})
	return hs, nil
}

// envelopeOf is Envelope with the event's data as the value it was
// encoded from: encoding/json writes the same bytes for it as for the
// encoded data, and encoding the value again costs about two thirds of
// what checking and copying the encoded data (a json.RawMessage) costs.
type envelopeOf struct {
	RequestID string `json:"requestId"`
	WebhookID string `json:"webhookId"`
	Event     string `json:"event"`
	Data      any    `json:"data"`
}

func (s *Service) flushEvents(ctx context.Context, tx Tx, ev *events) error {
	if len(ev.list) == 0 {
		return nil
	}
	hooks, err := s.webhooksTx(ctx, tx)
	if err != nil {
		return err
	}
	now := s.Now()
	var ds []*Delivery
	logged := make([]*Event, 0, len(ev.list))
	for _, pe := range ev.list {
		v := pe.data
		if l, ok := v.(*MessageList); ok {
			v = MessageEventData{Messages: l.Messages, Users: l.Users}
		}
		data := json.RawMessage(mustJSON(v))
		chID, userIDs := eventScope(pe.data)
		logged = append(logged, &Event{Name: pe.name, ChannelID: chID, UserIDs: userIDs, Data: data, CreatedAt: now})
		if IsInternalEvent(pe.name) {
			continue // for the processes' hubs only, never for webhooks
		}
		for _, h := range hooks {
			if !h.Admits(pe.name) {
				continue
			}
			id := s.newID()
			body := mustJSON(envelopeOf{RequestID: id, WebhookID: h.WebhookID, Event: pe.name, Data: v})
			ds = append(ds, &Delivery{
				RequestID: id, WebhookID: h.WebhookID, Event: pe.name, Body: body,
				State: DeliveryPending, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now,
			})
		}
	}
	// The log is appended last: a store may do its ordering work there
	// (Postgres numbers events after the commit, SQLite under its one
	// writer).
	if len(ds) > 0 {
		ev.enqueued = len(ds)
		if err := tx.EnqueueDeliveries(ctx, ds); err != nil {
			return err
		}
	}
	return tx.AppendEvents(ctx, logged)
}

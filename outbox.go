package chat

import (
	"context"
	"encoding/json"
	"time"
)

// events collects the events of one transaction; flushEvents turns them
// into outbox deliveries in the same transaction.
type events struct {
	list     []pendingEvent
	enqueued int             // deliveries enqueued for a claim (not leased to a taker)
	pushes   int             // pushes written to the push outbox
	buf      [1]pendingEvent // the list's first element: most transactions emit one event
	// taken are the deliveries leased to taker, the DeliveryTaker of the
	// Service when the transaction ran, with their webhooks.
	taker DeliveryTaker
	taken []*Delivery
	hooks []*Webhook
}

// DeliveryTaker is a webhook dispatcher of this process that takes the
// deliveries its Service enqueues straight from the transactions that
// enqueue them (Service.TakeDeliveries): such a delivery is stored leased
// to the taker and handed to it after the commit, so that no claim
// transaction reads it. When the process ends before the delivery is sent,
// its lease runs out and any dispatcher sharing the store claims it, as a
// claimed delivery's. webhook.Dispatcher implements it (Config.Direct).
type DeliveryTaker interface {
	// LeaseNew reserves a slot for a new delivery to the webhook and
	// returns the lease to store with it, or false when the taker takes
	// none now (the delivery is then stored unleased, for a claim).
	LeaseNew(webhookID string) (owner string, until time.Time, ok bool)
	// TakeNew hands over deliveries leased by LeaseNew whose transaction
	// committed, each with its webhook.
	TakeNew(ds []*Delivery, hooks []*Webhook)
	// ReleaseNew gives back the slots of deliveries leased by LeaseNew
	// whose transaction did not commit.
	ReleaseNew(ds []*Delivery)
}

// DeliveryDeferrer is an optional capability of a Tx (the SQLite store's):
// a delivery leased to a DeliveryTaker is not written to the outbox with
// the change that caused it, but kept with its event (Event.Deferred), and
// stored once, in its final state, when its first attempt is recorded
// (FinishDeferred). A delivery that is never recorded (its process ended,
// or its taker stopped or stalled) is written to the outbox by the store,
// pending and leased as it was, once its lease has run out, and is claimed
// then as a claimed delivery whose dispatcher died. Until its attempt is
// recorded, a deferred delivery is not in the outbox (GetDelivery and
// ListDeliveries do not see it). Such a delivery carries Deferred.
type DeliveryDeferrer interface {
	// DefersDeliveries reports whether the transaction keeps the
	// deliveries leased to a taker with their events.
	DefersDeliveries() bool
	// FinishDeferred records the first attempt a of the deferred delivery
	// d, as FinishDelivery records an attempt of a stored one: the
	// delivery is stored in state with the attempt. When the store wrote
	// it to the outbox meanwhile (its lease ran out), the attempt is
	// recorded as FinishDelivery records it for owner: CodeConflict when
	// another dispatcher leased it since. CodeNotFound when its webhook is
	// gone.
	FinishDeferred(ctx context.Context, owner string, d *Delivery, a *DeliveryAttempt, state string, nextAttemptAt time.Time) error
}

// DeferredDelivery is a delivery that a store with the DeliveryDeferrer
// capability keeps with its event until its first attempt is recorded:
// the rest of the delivery follows from the event (its body is
// EnvelopeBody(RequestID, WebhookID, event name, event data)).
type DeferredDelivery struct {
	RequestID  string
	WebhookID  string
	LeaseOwner string
	LeaseUntil time.Time
}

// takerReg is a registered DeliveryTaker.
type takerReg struct{ t DeliveryTaker }

// TakeDeliveries makes t the taker of the deliveries this Service
// enqueues from now on (see DeliveryTaker), in place of any other, and
// returns the function that ends it (it does nothing once another taker
// replaced t).
func (s *Service) TakeDeliveries(t DeliveryTaker) (stop func()) {
	r := &takerReg{t}
	s.taker.Store(r)
	return func() { s.taker.CompareAndSwap(r, nil) }
}

// release gives back the slots of e's leased deliveries (their
// transaction did not commit) and forgets them.
func (e *events) release() {
	if len(e.taken) > 0 {
		e.taker.ReleaseNew(e.taken)
	}
	e.taken, e.hooks = nil, nil
}

// handOver gives e's leased deliveries, committed, to their taker: copies,
// so that the taker owns what it is given.
func (e *events) handOver() {
	if len(e.taken) == 0 {
		return
	}
	ds := make([]*Delivery, len(e.taken))
	for i, d := range e.taken {
		c := *d
		ds[i] = &c
	}
	e.taker.TakeNew(ds, e.hooks)
	e.taken, e.hooks = nil, nil
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

// envelopeHead is the part of an Envelope before its data.
type envelopeHead struct {
	RequestID string `json:"requestId"`
	WebhookID string `json:"webhookId"`
	Event     string `json:"event"`
}

// EnvelopeBody returns the body of a delivery: the JSON of
// Envelope{requestID, webhookID, event, data} for data that encoding/json
// wrote (an Event's Data): the head's encoding with the data added as its
// last member. These are the bytes json.Marshal writes for the Envelope,
// without the scan and copy that encoding/json makes of a
// json.RawMessage, or the second encoding of the event's value (half of
// the encoding work of a post's transaction). A store rebuilds the body of
// a deferred delivery (DeliveryDeferrer) with it.
func EnvelopeBody(requestID, webhookID, event string, data []byte) []byte {
	head := mustJSON(envelopeHead{RequestID: requestID, WebhookID: webhookID, Event: event})
	b := make([]byte, 0, len(head)+len(`,"data":`)+len(data))
	b = append(b, head[:len(head)-1]...) // without its closing brace
	b = append(b, `,"data":`...)
	b = append(b, data...)
	return append(b, '}')
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
	var taker DeliveryTaker
	deferring := false
	if r := s.taker.Load(); r != nil {
		taker = r.t
		if dd, ok := tx.(DeliveryDeferrer); ok {
			deferring = dd.DefersDeliveries()
		}
	}
	var ds []*Delivery
	leased := 0 // of ds
	logged := make([]*Event, 0, len(ev.list))
	for _, pe := range ev.list {
		v := pe.data
		if l, ok := v.(*MessageList); ok {
			v = MessageEventData{Messages: l.Messages, Users: l.Users}
		}
		data := json.RawMessage(mustJSON(v))
		if l, ok := pe.data.(*MessageList); ok && pe.name == EventMessageDidCreate && l.Paging == nil {
			// The list insertMessage returns, not changed after this:
			// its encoding is this event's data.
			l.encoded = data
		}
		chID, userIDs := eventScope(pe.data)
		e := &Event{Name: pe.name, ChannelID: chID, UserIDs: userIDs, Data: data, CreatedAt: now}
		logged = append(logged, e)
		if IsInternalEvent(pe.name) {
			continue // for the processes' hubs only, never for webhooks
		}
		for _, h := range hooks {
			if !h.Admits(pe.name) {
				continue
			}
			id := s.newID()
			body := EnvelopeBody(id, h.WebhookID, pe.name, data)
			d := &Delivery{
				RequestID: id, WebhookID: h.WebhookID, Event: pe.name, Body: body,
				State: DeliveryPending, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now,
			}
			if taker != nil {
				if owner, until, ok := taker.LeaseNew(h.WebhookID); ok {
					d.LeaseOwner, d.LeaseUntil = owner, TimePtr(until)
					ev.taker, ev.taken, ev.hooks = taker, append(ev.taken, d), append(ev.hooks, h)
					if deferring {
						// Kept with the event until its attempt is
						// recorded (DeliveryDeferrer).
						d.Deferred = true
						e.Deferred = append(e.Deferred, DeferredDelivery{
							RequestID: id, WebhookID: h.WebhookID, LeaseOwner: owner, LeaseUntil: until})
						continue
					}
					leased++
				}
			}
			ds = append(ds, d)
		}
	}
	// The log is appended last: a store may do its ordering work there
	// (Postgres numbers events after the commit, SQLite under its one
	// writer).
	if len(ds) > 0 {
		ev.enqueued = len(ds) - leased
		if err := tx.EnqueueDeliveries(ctx, ds); err != nil {
			return err
		}
	}
	return tx.AppendEvents(ctx, logged)
}

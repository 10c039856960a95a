package webhook

import (
	"container/heap"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	chat "github.com/chatengine/chat"
)

// Dispatcher delivers the webhook outbox of a chat.Store: it claims due
// deliveries under a lease, POSTs them with a pool of workers, and records
// each attempt with the state that follows (delivered, pending again at the
// next retry, or failed). Several dispatchers, in one process or many, may
// share a store: the lease keeps them from sending one attempt twice at
// once. Create it with New, then Start and Stop it. It is safe for
// concurrent use.
type Dispatcher struct {
	svc    *chat.Service
	store  chat.Store
	cfg    Config
	client *http.Client
	log    *slog.Logger

	wake    chan struct{}
	freed   chan struct{} // worker slots freed: claim if deliveries are due
	results chan *result
	done    chan struct{}

	mu         sync.Mutex
	state      int
	cancelRun  context.CancelFunc
	cancelWork context.CancelFunc

	inflight atomic.Int64   // claimed and not yet finished
	open     atomic.Int64   // claimed, attempt not ended (capacity at most)
	wg       sync.WaitGroup // one per claimed delivery until finished

	sem   chan struct{} // one per attempt under way (Workers)
	sends chan item     // attempts to start, for the senders (see dispatch)

	busyMu sync.Mutex
	queues map[string]*hookQueue // claimed deliveries not yet ended, per webhook id
	gone   map[string]*goneHook  // webhooks whose receiver answered 410 Gone, until a claim reads them disabled

	nextMu sync.Mutex
	next   timeHeap // retry times this dispatcher scheduled, not yet claimed

	// Direct taking (Config.Direct, see LeaseNew): direct is set while
	// the loop knows of nothing else due; reserved counts the slots
	// LeaseNew gave whose deliveries are not yet taken or released, per
	// webhook under busyMu, in all in nReserved.
	direct     atomic.Bool
	reserved   map[string]int
	nReserved  atomic.Int64
	stopTaking func()
	taking     bool // TakeNew dispatches (under mu): from Start until the loop ends

	// Webhook cache, used by the loop goroutine only.
	hookVersion int64
	hooks       map[string]*chat.Webhook
}

const (
	stateNew = iota
	stateRunning
	stateStopped
)

// finishers is how many goroutines record finished attempts, each in its
// own transactions. Two let a SQL store work on one batch while the next
// one forms (measured: about 10-30 % more deliveries per second on
// Postgres than one; more did not help on two cores).
const finishers = 2

// maxFinishBatch bounds how many finished attempts are recorded in one
// transaction.
const maxFinishBatch = 256

// item is a claimed delivery with its webhook (nil when deleted).
type item struct {
	d      *chat.Delivery
	hook   *chat.Webhook
	sendBy time.Time // too late to start an attempt that must end within the lease
}

// hookQueue holds the claimed deliveries of one webhook whose attempts
// have not ended.
type hookQueue struct {
	sending int    // attempts started (PerWebhook at most)
	waiting []item // claimed, waiting for one of those to end, in claim order
}

// goneHook is a webhook whose receiver answered 410 Gone.
type goneHook struct {
	reason   string
	disabled bool // the Service has disabled it (or failed to)
}

// take returns it as it must be attempted, with busyMu held: with its
// webhook disabled when an attempt answered 410 Gone and the claim that
// took it may have read the webhook before it was disabled in the store,
// so that no more is sent to it.
func (d *Dispatcher) take(it item) item {
	if g := d.gone[it.d.WebhookID]; g != nil && it.hook != nil && !it.hook.IsDisabled {
		h := *it.hook
		h.IsDisabled, h.DisabledReason = true, g.reason
		it.hook = &h
	}
	return it
}

// result is the outcome of one attempt, waiting to be recorded.
type result struct {
	d       *chat.Delivery
	attempt chat.DeliveryAttempt
	state   string
	next    time.Time
	disable string // when not empty, disable the webhook with this reason
	abandon bool   // hard stop: record nothing, the lease will expire
}

// finish is what r records.
func (r *result) finish() chat.DeliveryFinish {
	return chat.DeliveryFinish{Attempt: &r.attempt, State: r.state, NextAttemptAt: r.next, Delivery: r.d}
}

// New returns a Dispatcher over store, the store of svc (or a wrapper of
// it): it claims and records deliveries in store, and disables a webhook
// whose receiver answered 410 Gone through svc (Service.DisableWebhook,
// audited). It starts no goroutines; call Start. Zero fields of cfg take
// their defaults (see Config).
func New(svc *chat.Service, store chat.Store, cfg Config) *Dispatcher {
	cfg = cfg.withDefaults()
	d := &Dispatcher{
		svc:      svc,
		store:    store,
		cfg:      cfg,
		client:   cfg.HTTPClient,
		log:      cfg.Logger.With("component", "webhook", "owner", cfg.Owner),
		wake:     make(chan struct{}, 1),
		freed:    make(chan struct{}, 1),
		results:  make(chan *result, cfg.Workers+cfg.Prefetch),
		done:     make(chan struct{}),
		hooks:    map[string]*chat.Webhook{},
		sem:      make(chan struct{}, cfg.Workers),
		sends:    make(chan item, cfg.Workers+cfg.Prefetch), // capacity
		queues:   map[string]*hookQueue{},
		gone:     map[string]*goneHook{},
		reserved: map[string]int{},
	}
	if d.client == nil {
		d.client = cfg.newClient()
	}
	return d
}

// Owner returns the lease owner id of this dispatcher.
func (d *Dispatcher) Owner() string { return d.cfg.Owner }

// Start begins delivering in background goroutines and returns at once. If
// the store implements chat.DeliveryWatcher (or, failing that,
// chat.OutboxWatcher) the dispatcher claims deliveries as soon as a commit
// that enqueued some is signalled; otherwise it polls every PollInterval
// (and whenever Wake is called). Between those it sleeps until the
// earliest due time it knows of, so commits that bring no delivery cost it
// nothing. Cancelling ctx stops claiming, like Stop
// without the wait. Start fails when called twice, after Stop, or with an
// invalid Config (Lease not above Timeout).
func (d *Dispatcher) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.store == nil {
		return errors.New("webhook: nil store")
	}
	if d.svc == nil {
		return errors.New("webhook: nil Service")
	}
	if d.state != stateNew {
		return errors.New("webhook: dispatcher already started or stopped")
	}
	if err := d.cfg.validate(); err != nil {
		return err
	}
	runCtx, cancelRun := context.WithCancel(ctx)
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	d.cancelRun, d.cancelWork = cancelRun, cancelWork
	d.state = stateRunning
	if d.cfg.Direct {
		d.taking = true
		d.stopTaking = d.svc.TakeDeliveries(d)
	}
	go func() {
		var recorders, senders sync.WaitGroup
		for range finishers {
			recorders.Go(func() { d.finisher(workCtx) })
		}
		for range d.capacity() {
			senders.Go(func() {
				for it := range d.sends {
					d.send(workCtx, it)
				}
			})
		}
		d.loop(runCtx, workCtx)
		d.direct.Store(false)
		if d.stopTaking != nil {
			d.stopTaking()
		}
		d.mu.Lock()
		d.taking = false // no dispatch after this: wg.Wait may begin
		d.mu.Unlock()
		d.wg.Wait()
		close(d.sends)
		senders.Wait()
		close(d.results)
		recorders.Wait()
		cancelRun()
		cancelWork()
		close(d.done)
	}()
	return nil
}

// Stop stops claiming deliveries and waits until the deliveries in flight
// are sent and recorded, or until ctx is done: then it aborts them (their
// leases expire and they are retried later, by this process or another) and
// returns ctx.Err(). Stop is idempotent and may be called before Start.
func (d *Dispatcher) Stop(ctx context.Context) error {
	d.mu.Lock()
	switch d.state {
	case stateNew:
		d.state = stateStopped
		close(d.done)
		d.mu.Unlock()
		return nil
	case stateRunning:
		d.state = stateStopped
		d.cancelRun()
	}
	cancelWork := d.cancelWork
	d.mu.Unlock()
	select {
	case <-d.done:
		return nil
	case <-ctx.Done():
		if cancelWork != nil {
			cancelWork()
		}
		return ctx.Err()
	}
}

// Done returns a channel that is closed when the dispatcher has stopped and
// every delivery it claimed has been recorded or abandoned.
func (d *Dispatcher) Done() <-chan struct{} { return d.done }

// InFlight returns how many deliveries this dispatcher has claimed and not
// yet recorded.
func (d *Dispatcher) InFlight() int { return int(d.inflight.Load()) }

// Wake makes the dispatcher look for due deliveries now. The Service's
// Config.OnCommit fits it when the store cannot signal commits. It never
// blocks; on a nil Dispatcher (one not yet made) it does nothing.
func (d *Dispatcher) Wake() {
	if d == nil {
		return
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// loop claims due deliveries and hands them to workers until ctx is done.
// It claims only when deliveries may be due: at start, after a signal of
// the store (a commit that enqueued or rescheduled deliveries) or a Wake,
// when the earliest due time it knows of arrives, on the poll, and while
// the last claim came back full. Freed worker slots alone do not make it
// claim, so a commit that brought no delivery causes no transaction.
func (d *Dispatcher) loop(ctx, workCtx context.Context) {
	subscribe := func(ctx context.Context) (<-chan struct{}, error) { return nil, nil }
	if w, ok := d.store.(chat.DeliveryWatcher); ok {
		subscribe = w.WatchDeliveries
	} else if w, ok := d.store.(chat.OutboxWatcher); ok {
		subscribe = w.WatchOutbox
	}
	_, watches := d.store.(chat.DeliveryWatcher)
	if !watches {
		_, watches = d.store.(chat.OutboxWatcher)
	}
	var watch <-chan struct{}
	var lastSubscribe time.Time
	watchFailed := false
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var holdUntil time.Time   // a claim for few free slots waits until then
	var parkedUntil time.Time // see parkFactor
	var parked []string       // the webhooks at their limit when parkedUntil was set
	due := true               // deliveries may be due: claim when slots are free
	var wakeAt time.Time      // when to claim without a signal: the earliest due time known, or the poll
	for ctx.Err() == nil {
		if watches && watch == nil && time.Since(lastSubscribe) >= d.cfg.PollInterval {
			lastSubscribe = time.Now()
			ch, err := subscribe(ctx)
			switch {
			case err == nil:
				watch, watchFailed = ch, false
			case !watchFailed && ctx.Err() == nil:
				d.log.Warn("webhook: cannot watch the outbox; polling until it works again", "err", err)
				watchFailed = true
			}
		}
		wait := d.cfg.PollInterval
		if !wakeAt.IsZero() {
			wait = max(time.Until(wakeAt), 0)
		}
		if t, ok := d.earliestRetry(); ok {
			// A retry recorded since the last claim.
			wait = min(wait, max(t.Sub(d.cfg.Now()), 0))
		}
		free := d.capacity() - int(d.open.Load()) - int(d.nReserved.Load())
		if due && free > 0 && free < d.minClaim() && free < d.capacity() {
			// Under load, slots free up a few at a time: wait briefly
			// (claimHold at most) for more, so that one claim
			// transaction takes several deliveries instead of one each.
			now := time.Now()
			if holdUntil.IsZero() {
				holdUntil = now.Add(claimHold)
			}
			if now.Before(holdUntil) {
				wait, free = holdUntil.Sub(now), 0
			}
		}
		if due && free > 0 && !parkedUntil.IsZero() {
			// The last claim found no more due deliveries than it took,
			// apart from those of webhooks it left at their limit.
			// While those webhooks stay near it, claim again no sooner
			// than parkedUntil: each such claim reads past all their
			// due deliveries, and under load the signals of new ones
			// come faster than slots free, one at a time.
			now := time.Now()
			if now.Before(parkedUntil) && d.stillAtLimit(parked) {
				wait, free = parkedUntil.Sub(now), 0
			} else {
				parkedUntil, parked = time.Time{}, nil
			}
		}
		if due && free > 0 {
			holdUntil = time.Time{}
			n := min(free, d.cfg.BatchSize)
			claimedAt := d.cfg.Now()
			start := time.Now()
			items, full, limited, storeNext, err := d.claim(ctx, claimedAt, n)
			if err == nil && len(limited) > 0 && !full {
				parked = limited
				parkedUntil = time.Now()
				parkedUntil = parkedUntil.Add(parkFactor * parkedUntil.Sub(start))
			}
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				d.log.Warn("webhook: claiming deliveries failed", "err", err)
				wait = d.cfg.PollInterval
				wakeAt = time.Now().Add(wait)
			} else {
				for _, it := range items {
					d.dispatch(it)
				}
				// Nothing else known due: new deliveries may be taken
				// directly (LeaseNew) until a signal says otherwise.
				d.direct.Store(d.cfg.Direct && !full && len(limited) == 0)
				if full {
					continue // more may be due
				}
				// Deliveries passed over for a webhook at its PerWebhook
				// limit stay due: claim again when a slot frees.
				due = len(limited) > 0
				now := d.cfg.Now()
				wait = d.cfg.PollInterval
				if storeNext.After(now) {
					wait = min(wait, storeNext.Sub(now))
				}
				if t, ok := d.nextRetry(claimedAt); ok {
					wait = min(wait, max(t.Sub(now), 0))
				}
				wakeAt = time.Now().Add(wait)
			}
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
		case <-d.wake:
			due = true
		case <-d.freed:
		case _, ok := <-watch:
			if !ok {
				watch = nil
			}
			due = true
		case <-timer.C:
			due, wakeAt = true, time.Time{}
		}
		timer.Stop()
		if due {
			// Deliveries may be due for a claim: they go first, so none is
			// taken directly until a claim has caught up.
			d.direct.Store(false)
		}
	}
}

// Operation names of the dispatcher's store transactions (chat.Operation),
// for a store wrapper that measures them.
const (
	// OpClaim names the transactions that lease due deliveries.
	OpClaim = "webhook.claim"
	// OpFinish names the transactions that record attempts.
	OpFinish = "webhook.finish"
)

// claimHold is how long the loop waits for more free slots before it
// claims for only a few (see minClaim).
const claimHold = 2 * time.Millisecond

// parkFactor: after a claim that left webhooks at their limit
// (PerWebhook+Prefetch) and found nothing else due, the next claim waits
// (while those webhooks stay near their limit, see stillAtLimit) for
// parkFactor times as long as that claim took. Such a claim reads past
// every due delivery of those webhooks, so this keeps its cost to about a
// tenth of the store's time however long their backlog, makes a fast
// webhook's claims take half its Prefetch or more instead of one delivery
// per request ended, and delays the deliveries of other webhooks that
// become due meanwhile by as little (a fraction of a millisecond when the
// backlog is short).
const parkFactor = 10

// capacity is the most deliveries claimed whose attempts have not ended.
func (d *Dispatcher) capacity() int { return d.cfg.Workers + d.cfg.Prefetch }

// perWebhook is the most deliveries of one webhook claimed and not yet
// ended: PerWebhook being sent and Prefetch waiting.
func (d *Dispatcher) perWebhook() int { return d.cfg.PerWebhook + d.cfg.Prefetch }

// stillAtLimit reports whether every webhook of ids is still near its
// limit: fewer free slots than half its Prefetch (than one without).
func (d *Dispatcher) stillAtLimit(ids []string) bool {
	taken := d.inFlight()
	refill := max(1, d.cfg.Prefetch/2)
	for _, id := range ids {
		if d.perWebhook()-taken[id] >= refill {
			return false
		}
	}
	return true
}

// minClaim is the number of free slots worth a claim without waiting.
func (d *Dispatcher) minClaim() int { return max(1, min(d.capacity(), d.cfg.BatchSize)/8) }

// claim leases up to n due deliveries and resolves their webhooks in one
// transaction. The store takes at most the free slots of each webhook
// (PerWebhook less its deliveries in flight), so the deliveries of a
// webhook at its limit stay due, untouched, for a claim after a slot frees
// (or for another process), and never hold up the deliveries of other
// webhooks. full reports that the store had n due deliveries (more may be
// due). When it had fewer, claim also returns the store's earliest
// nextAttemptAt (zero when none). limited lists the webhooks at their
// limit, whose due deliveries may have been passed over.
func (d *Dispatcher) claim(ctx context.Context, now time.Time, n int) (items []item, full bool, limited []string, next time.Time, err error) {
	var seen []string // webhooks disabled after a 410 before this claim began
	d.busyMu.Lock()
	for id, g := range d.gone {
		if g.disabled {
			seen = append(seen, id)
		}
	}
	d.busyMu.Unlock()
	err = d.store.Update(chat.WithLazyCommit(chat.WithOperation(ctx, OpClaim)), func(tx chat.Tx) error {
		items, full, limited, next = items[:0], false, nil, time.Time{}
		taken := d.inFlight()
		ds, err := tx.ClaimDeliveries(ctx, d.cfg.Owner, now, d.cfg.Lease, n, chat.DeliveryQuota{PerWebhook: d.perWebhook(), Busy: taken})
		if err != nil {
			return err
		}
		full = len(ds) == n
		if len(ds) > 0 {
			v, err := tx.WebhooksVersion(ctx)
			if err != nil {
				return err
			}
			if v != d.hookVersion {
				d.hookVersion, d.hooks = v, map[string]*chat.Webhook{}
			}
		}
		for _, dl := range ds {
			taken[dl.WebhookID]++
			h, ok := d.hooks[dl.WebhookID]
			if !ok {
				h, err = tx.GetWebhook(ctx, dl.WebhookID)
				if chat.ErrorCode(err) == chat.CodeNotFound {
					h, err = nil, nil
				}
				if err != nil {
					return err
				}
				d.hooks[dl.WebhookID] = h
			}
			items = append(items, item{d: dl, hook: h, sendBy: now.Add(d.cfg.Lease - d.cfg.Timeout)})
		}
		for id, c := range taken {
			if c >= d.perWebhook() {
				limited = append(limited, id)
			}
		}
		if !full {
			t, ok, err := tx.NextDeliveryAt(ctx)
			if err != nil {
				return err
			}
			if ok {
				next = t
			}
		}
		return nil
	})
	if err != nil {
		// Nothing was leased; drop a cache that may hold a rolled-back view.
		d.hookVersion, d.hooks = 0, map[string]*chat.Webhook{}
		return nil, false, nil, time.Time{}, err
	}
	// This claim read those webhooks disabled; deliveries claimed before
	// still waiting or under way in this process may not have, and keep
	// the mark (take) until none is left.
	d.busyMu.Lock()
	for _, id := range seen {
		if d.queues[id] == nil {
			delete(d.gone, id)
		}
	}
	d.busyMu.Unlock()
	return items, full, limited, next, nil
}

// inFlight returns the number of deliveries claimed, or leased by
// LeaseNew, and not yet ended per webhook. The loop's claims and LeaseNew
// add to the counts: while a claim works from the copy, a webhook may get
// a slot or two more than its limit, which only wait in its queue.
func (d *Dispatcher) inFlight() map[string]int {
	d.busyMu.Lock()
	defer d.busyMu.Unlock()
	out := make(map[string]int, len(d.queues)+len(d.reserved))
	for id, q := range d.queues {
		out[id] = q.sending + len(q.waiting)
	}
	for id, n := range d.reserved {
		out[id] += n
	}
	return out
}

// LeaseNew implements chat.DeliveryTaker (Config.Direct): it reserves a
// slot for a new delivery of the webhook when the dispatcher runs, knows
// of no other delivery due (its last claim caught up and no signal came
// since), has a free slot and the webhook is below its limit
// (PerWebhook+Prefetch) and not gone. The lease ends Lease from now on
// the dispatcher's clock, as a claim's.
func (d *Dispatcher) LeaseNew(webhookID string) (string, time.Time, bool) {
	// It runs inside the store transaction that enqueues the delivery
	// (on SQLite, on the one writer): it never waits for busyMu. When
	// the senders hold it, the delivery is left for a claim.
	if !d.direct.Load() || !d.busyMu.TryLock() {
		return "", time.Time{}, false
	}
	defer d.busyMu.Unlock()
	if d.gone[webhookID] != nil || int(d.open.Load())+int(d.nReserved.Load()) >= d.capacity() {
		return "", time.Time{}, false
	}
	n := d.reserved[webhookID]
	if q := d.queues[webhookID]; q != nil {
		n += q.sending + len(q.waiting)
	}
	if n >= d.perWebhook() {
		return "", time.Time{}, false
	}
	d.reserved[webhookID]++
	d.nReserved.Add(1)
	return d.cfg.Owner, d.cfg.Now().Add(d.cfg.Lease), true
}

// ReleaseNew implements chat.DeliveryTaker: the slots of deliveries whose
// transaction did not commit are free again.
func (d *Dispatcher) ReleaseNew(ds []*chat.Delivery) {
	d.unreserve(ds)
	select {
	case d.freed <- struct{}{}:
	default:
	}
}

func (d *Dispatcher) unreserve(ds []*chat.Delivery) {
	d.busyMu.Lock()
	defer d.busyMu.Unlock()
	for _, dl := range ds {
		if d.reserved[dl.WebhookID]--; d.reserved[dl.WebhookID] <= 0 {
			delete(d.reserved, dl.WebhookID)
		}
	}
	d.nReserved.Add(-int64(len(ds)))
}

// TakeNew implements chat.DeliveryTaker: the committed deliveries leased
// by LeaseNew are sent as claimed ones are, each until Timeout before its
// lease ends. Once the dispatcher has stopped it drops them: their leases
// run out and they are claimed again.
func (d *Dispatcher) TakeNew(ds []*chat.Delivery, hooks []*chat.Webhook) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.taking {
		for i, dl := range ds {
			sendBy := d.cfg.Now().Add(d.cfg.Lease - d.cfg.Timeout)
			if dl.LeaseUntil != nil {
				sendBy = dl.LeaseUntil.Add(-d.cfg.Timeout)
			}
			d.dispatch(item{d: dl, hook: hooks[i], sendBy: sendBy})
		}
	}
	// After dispatch counted them as open: the slots are never seen free
	// in between.
	d.unreserve(ds)
}

// dispatch hands a claimed delivery (or one taken by TakeNew) to a
// sender, or queues it behind the PerWebhook attempts of its webhook
// already under way. The loop's claims and LeaseNew's reservations never
// make more than capacity deliveries whose attempts have not ended, and
// there are capacity senders, goroutines that live as long as the
// dispatcher: every delivery handed over finds one free at once, as when
// each had a goroutine of its own, which grew its stack on every POST
// (the HTTP client's calls are deep), a copy of the stack each time. The
// senders wait for the Workers slots as those goroutines did. The
// webhook's slot is free once an attempt has ended, before it is
// recorded: the delivery stays leased until then, and the next POST to
// the webhook need not wait for the record's commit.
// Attempts ended wait in the results channel for the finishers; when it
// is full (records lag behind), the webhook's next attempt waits.
func (d *Dispatcher) dispatch(it item) {
	d.inflight.Add(1)
	d.open.Add(1)
	d.wg.Add(1)
	id := it.d.WebhookID
	d.busyMu.Lock()
	q := d.queues[id]
	if q == nil {
		q = &hookQueue{}
		d.queues[id] = q
	}
	if q.sending >= d.cfg.PerWebhook {
		q.waiting = append(q.waiting, it)
		d.busyMu.Unlock()
		return
	}
	q.sending++
	d.busyMu.Unlock()
	d.sends <- it
}

// send runs the attempt of it, then those of the deliveries waiting for
// its webhook, one after another, until none is left.
func (d *Dispatcher) send(ctx context.Context, it item) {
	id := it.d.WebhookID
	for {
		r := d.run(ctx, it)
		d.open.Add(-1)
		d.busyMu.Lock()
		q := d.queues[id]
		next := len(q.waiting) > 0
		if next {
			it = q.waiting[0]
			q.waiting[0] = item{}
			q.waiting = q.waiting[1:]
		} else if q.sending--; q.sending == 0 {
			delete(d.queues, id)
		}
		d.busyMu.Unlock()
		d.results <- r
		select {
		case d.freed <- struct{}{}:
		default:
		}
		if !next {
			return
		}
	}
}

// run makes one attempt within one of the Workers slots. A delivery whose
// attempt could no longer end within its lease (it waited for its
// webhook's or a worker's slot) is abandoned: the lease runs out and a
// claim takes it again.
func (d *Dispatcher) run(ctx context.Context, it item) *result {
	select {
	case d.sem <- struct{}{}:
	case <-ctx.Done():
		return &result{d: it.d, abandon: true}
	}
	defer func() { <-d.sem }()
	if d.cfg.Now().After(it.sendBy) {
		d.log.Warn("webhook: delivery waited past its lease; it will be claimed again",
			"requestId", it.d.RequestID, "webhookId", it.d.WebhookID)
		return &result{d: it.d, abandon: true}
	}
	// The webhook is read gone (take) once the attempt holds its slot, and
	// a 410 marks it gone before the slot is freed: an attempt that was
	// waiting for the slot meanwhile sends nothing to it.
	id := it.d.WebhookID
	d.busyMu.Lock()
	it = d.take(it)
	d.busyMu.Unlock()
	r := d.attempt(ctx, it)
	if r.disable != "" {
		d.busyMu.Lock()
		d.gone[id] = &goneHook{reason: r.disable}
		d.busyMu.Unlock()
	}
	return r
}

// finisher records finished attempts, as many as are ready in one
// transaction, then frees their worker slots (Workers) and tells the loop, which
// claims again only if deliveries may be due.
func (d *Dispatcher) finisher(ctx context.Context) {
	batch := make([]*result, 0, maxFinishBatch)
	for r := range d.results {
		batch = append(batch[:0], r)
	more:
		for len(batch) < maxFinishBatch {
			select {
			case r, ok := <-d.results:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				break more
			}
		}
		d.finish(ctx, batch)
		d.inflight.Add(-int64(len(batch)))
		for range batch {
			d.wg.Done()
		}
		select {
		case d.freed <- struct{}{}:
		default:
		}
	}
}

// finish records a batch of results, in one transaction when possible and
// one by one when that transaction fails.
func (d *Dispatcher) finish(ctx context.Context, batch []*result) {
	live := make([]*result, 0, len(batch))
	for _, r := range batch {
		if !r.abandon {
			live = append(live, r)
		}
	}
	if len(live) == 0 || ctx.Err() != nil {
		return
	}
	for _, r := range live {
		d.disableHook(ctx, r)
	}
	var lost []error
	fs := make([]chat.DeliveryFinish, len(live))
	for i, r := range live {
		fs[i] = r.finish()
	}
	err := d.store.Update(chat.WithLazyCommit(chat.WithOperation(ctx, OpFinish)), func(tx chat.Tx) error {
		// One statement for the whole batch where the store can.
		var err error
		lost, err = chat.FinishDeliveries(ctx, tx, d.cfg.Owner, fs)
		return err
	})
	if err == nil {
		for i, r := range live {
			d.recorded(r, lost[i])
		}
		return
	}
	if len(live) > 1 {
		d.log.Debug("webhook: recording a batch failed, recording one by one", "err", err)
	}
	for _, r := range live {
		for try := 0; ; try++ {
			err = d.store.Update(chat.WithLazyCommit(chat.WithOperation(ctx, OpFinish)), func(tx chat.Tx) error { return d.finishOne(ctx, tx, r) })
			if err == nil || leaseLost(err) || try == 2 || ctx.Err() != nil {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(100<<try) * time.Millisecond):
			}
		}
		if err != nil && !leaseLost(err) {
			d.log.Warn("webhook: cannot record attempt; the delivery will be retried when its lease expires",
				"requestId", r.d.RequestID, "attempt", r.attempt.Attempt, "err", err)
			continue
		}
		d.recorded(r, err)
	}
}

func leaseLost(err error) bool {
	c := chat.ErrorCode(err)
	return c == chat.CodeConflict || c == chat.CodeNotFound
}

// finishOne records one attempt.
func (d *Dispatcher) finishOne(ctx context.Context, tx chat.Tx, r *result) error {
	errs, err := chat.FinishDeliveries(ctx, tx, d.cfg.Owner, []chat.DeliveryFinish{r.finish()})
	if err != nil {
		return err
	}
	return errs[0]
}

// disableHook disables the webhook of a result that asks for it (410),
// through the Service, before the attempt is recorded. A webhook deleted
// meanwhile is left alone; a failure is logged (the receiver's next 410
// disables it).
func (d *Dispatcher) disableHook(ctx context.Context, r *result) {
	if r.disable == "" {
		return
	}
	err := d.svc.DisableWebhook(ctx, "", r.d.WebhookID, r.disable)
	// Claims that start from now on read the webhook disabled (or
	// deleted), or enabled when disabling failed.
	d.busyMu.Lock()
	if g := d.gone[r.d.WebhookID]; g != nil {
		g.disabled = true
	}
	d.busyMu.Unlock()
	if err != nil && chat.ErrorCode(err) != chat.CodeNotFound {
		d.log.Warn("webhook: cannot disable the webhook", "webhookId", r.d.WebhookID, "reason", r.disable, "err", err)
		r.disable = ""
	}
}

// recorded logs a recorded attempt and remembers its retry time.
func (d *Dispatcher) recorded(r *result, lost error) {
	a := &r.attempt
	if lost != nil {
		d.log.Warn("webhook: lease lost before the attempt was recorded; another dispatcher owns the delivery",
			"requestId", a.RequestID, "attempt", a.Attempt, "err", lost)
		return
	}
	if d.cfg.OnRecorded != nil {
		d.cfg.OnRecorded(r.state)
	}
	switch {
	case r.state == chat.DeliveryDelivered:
		d.log.Debug("webhook: delivered", "requestId", a.RequestID, "webhookId", a.WebhookID,
			"event", a.Event, "attempt", a.Attempt, "status", a.StatusCode, "latencyMs", a.LatencyMs)
	case r.state == chat.DeliveryPending:
		d.log.Info("webhook: attempt failed, will retry", "requestId", a.RequestID,
			"webhookId", a.WebhookID, "attempt", a.Attempt, "status", a.StatusCode, "err", a.Error,
			"nextAttemptAt", r.next)
		d.nextMu.Lock()
		heap.Push(&d.next, r.next)
		d.nextMu.Unlock()
	default:
		d.log.Warn("webhook: delivery failed", "requestId", a.RequestID, "webhookId", a.WebhookID,
			"attempt", a.Attempt, "status", a.StatusCode, "err", a.Error)
	}
	if r.disable != "" {
		d.log.Warn("webhook: webhook disabled", "webhookId", a.WebhookID, "reason", r.disable)
	}
}

// nextRetry drops the retry times a claim at claimedAt already covered and
// returns the earliest remaining one.
func (d *Dispatcher) nextRetry(claimedAt time.Time) (time.Time, bool) {
	d.nextMu.Lock()
	defer d.nextMu.Unlock()
	for len(d.next) > 0 && !d.next[0].After(claimedAt) {
		heap.Pop(&d.next)
	}
	if len(d.next) == 0 {
		return time.Time{}, false
	}
	return d.next[0], true
}

// earliestRetry returns the earliest retry time this dispatcher
// scheduled and has not claimed yet.
func (d *Dispatcher) earliestRetry() (time.Time, bool) {
	d.nextMu.Lock()
	defer d.nextMu.Unlock()
	if len(d.next) == 0 {
		return time.Time{}, false
	}
	return d.next[0], true
}

// timeHeap is a min-heap of times.
type timeHeap []time.Time

func (h timeHeap) Len() int           { return len(h) }
func (h timeHeap) Less(i, j int) bool { return h[i].Before(h[j]) }
func (h timeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timeHeap) Push(x any)        { *h = append(*h, x.(time.Time)) }
func (h *timeHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}

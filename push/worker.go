package push

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"sync"
	"time"

	chat "github.com/chatengine/chat"
)

// DefaultSchedule is the delay before each attempt of a push: the first at
// once, then retries 5 s, 30 s, 2 min, 10 min and 30 min after the
// previous attempt failed. A notification is worth little after an hour,
// so a push is given up after six attempts, about 43 minutes.
var DefaultSchedule = []time.Duration{
	0,
	5 * time.Second,
	30 * time.Second,
	2 * time.Minute,
	10 * time.Minute,
	30 * time.Minute,
}

// The results a worker reports for each attempt (WorkerConfig.OnResult).
const (
	ResultDelivered = "delivered" // the provider accepted the push
	ResultRetry     = "retry"     // failed for now; pending again
	ResultFailed    = "failed"    // given up (permanent, or the last attempt)
	ResultGone      = "gone"      // the device is gone and was removed
)

// Operation names of the worker's store transactions (chat.Operation).
const (
	// OpClaim names the transactions that lease due pushes.
	OpClaim = "push.claim"
	// OpFinish names the transactions that record attempts.
	OpFinish = "push.finish"
	// OpPrune names the transactions that delete old pushes.
	OpPrune = "push.prune"
)

// WorkerConfig configures a Worker. The zero value works; each field's
// comment states its default.
type WorkerConfig struct {
	// Owner identifies this worker in push leases; it must be unique
	// among the workers sharing a store. Default
	// "<hostname>-<pid>-<random hex>".
	Owner string
	// Schedule holds the delay before each attempt: Schedule[n] after
	// attempt n failed (Schedule[0] is not applied: pushes are due when
	// written). A push is failed after len(Schedule) attempts. Default
	// DefaultSchedule; tests use milliseconds.
	Schedule []time.Duration
	// Jitter is the fraction by which each retry delay is randomly
	// lengthened or shortened. Default 0.1; negative disables it.
	Jitter float64
	// MaxRetryAfter caps the delay a provider can ask for (Retry-After);
	// the delay used is the larger of the schedule's and the capped
	// request. Default 30 min.
	MaxRetryAfter time.Duration
	// Lease is how long claimed pushes stay reserved for this worker; it
	// must exceed the senders' request timeout (30 s by default). Default
	// 2 min.
	Lease time.Duration
	// BatchSize is the most pushes claimed in one transaction. Default 100.
	BatchSize int
	// Workers is how many pushes are sent at once. Default 32.
	Workers int
	// PollInterval is how often the outbox is read when nothing woke the
	// worker (pushes written by other processes, retries). Default 1 s.
	PollInterval time.Duration
	// Logger receives warnings and per-attempt debug records. Default
	// slog.Default().
	Logger *slog.Logger
	// Retention is how long a delivered or failed push stays in the
	// outbox's log; the worker deletes older ones about once a minute.
	// Default 7 days; negative keeps them.
	Retention time.Duration
	// OnResult, when not nil, is called after each attempt is recorded
	// with the device's provider and ResultDelivered, ResultRetry,
	// ResultFailed or ResultGone. It must be quick (a metrics counter).
	OnResult func(provider, result string)
	// Now returns the current time. Default time.Now.
	Now func() time.Time
}

func (c WorkerConfig) withDefaults() WorkerConfig {
	if c.Owner == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		c.Owner = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	if len(c.Schedule) == 0 {
		c.Schedule = DefaultSchedule
	}
	if c.Jitter == 0 {
		c.Jitter = 0.1
	}
	if c.MaxRetryAfter <= 0 {
		c.MaxRetryAfter = 30 * time.Minute
	}
	if c.Lease <= 0 {
		c.Lease = 2 * time.Minute
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 100
	}
	if c.Workers <= 0 {
		c.Workers = 32
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Retention == 0 {
		c.Retention = 7 * 24 * time.Hour
	}
	return c
}

// Worker sends the push outbox of a chat.Store: it expands the messages'
// push batches into one push per device, claims due pushes under a lease, sends them through a Sender with a pool of goroutines,
// and records each attempt in one transaction per batch: delivered,
// pending again at the next retry (Retry errors, with backoff), or failed
// (Permanent errors, or the last attempt). A device its provider reports
// as gone is deleted, with its pushes. Several workers, in one process or
// many, may share a store: the lease keeps them from sending one push
// twice at once, and a push records at most one success. Create it with
// NewWorker, then Start and Stop it.
type Worker struct {
	store  chat.Store
	sender Sender
	cfg    WorkerConfig
	log    *slog.Logger

	wake chan struct{}
	done chan struct{}

	mu         sync.Mutex
	state      int
	cancelRun  context.CancelFunc
	cancelWork context.CancelFunc
}

const (
	stateNew = iota
	stateRunning
	stateStopped
)

// NewWorker returns a Worker that sends store's pushes through sender. It
// starts no goroutines; call Start.
func NewWorker(store chat.Store, sender Sender, cfg WorkerConfig) *Worker {
	cfg = cfg.withDefaults()
	return &Worker{store: store, sender: sender, cfg: cfg,
		log:  cfg.Logger.With("component", "push", "owner", cfg.Owner),
		wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// Owner returns the lease owner id of this worker.
func (w *Worker) Owner() string { return w.cfg.Owner }

// Wake makes the worker look for due pushes now (chat.Config.OnPush fits
// here). It never blocks; on a nil Worker it does nothing.
func (w *Worker) Wake() {
	if w == nil {
		return
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Start begins sending in a background goroutine and returns at once.
// It fails when called twice, after Stop, with a nil store or sender, or
// when Lease is not above 30 s.
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.store == nil || w.sender == nil:
		return errors.New("push: worker needs a store and a sender")
	case w.state != stateNew:
		return errors.New("push: worker already started or stopped")
	case w.cfg.Lease <= defaultTimeout:
		return fmt.Errorf("push: Lease (%s) must exceed the request timeout (%s)", w.cfg.Lease, defaultTimeout)
	}
	runCtx, cancelRun := context.WithCancel(ctx)
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	w.cancelRun, w.cancelWork, w.state = cancelRun, cancelWork, stateRunning
	go func() {
		defer close(w.done)
		defer cancelWork()
		w.loop(runCtx, workCtx)
	}()
	return nil
}

// Stop stops claiming and waits until the pushes in flight are sent and
// recorded, or until ctx is done: then it aborts them (their leases
// expire and they are sent later) and returns ctx.Err(). Stop is
// idempotent and may be called before Start.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	switch w.state {
	case stateNew:
		w.state = stateStopped
		close(w.done)
		w.mu.Unlock()
		return nil
	case stateRunning:
		w.state = stateStopped
		w.cancelRun()
	}
	cancelWork := w.cancelWork
	w.mu.Unlock()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		if cancelWork != nil {
			cancelWork()
		}
		return ctx.Err()
	}
}

// loop claims and sends batches until ctx is done.
func (w *Worker) loop(ctx, workCtx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	var pruned time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-w.wake:
		}
		for ctx.Err() == nil {
			n, more, err := w.runOnce(workCtx)
			if err != nil {
				if ctx.Err() == nil {
					w.log.Warn("push: claiming or recording failed", "err", err)
				}
				break
			}
			if n < w.cfg.BatchSize && !more {
				break
			}
		}
		if w.cfg.Retention > 0 && time.Since(pruned) >= pruneInterval {
			pruned = time.Now()
			w.prune(workCtx)
		}
		timer.Reset(w.cfg.PollInterval)
	}
}

// pruneInterval is how often a worker deletes the pushes older than its
// Retention.
const pruneInterval = time.Minute

// prune deletes the finished pushes older than Retention, 1,000 per
// transaction.
func (w *Worker) prune(ctx context.Context) {
	before := w.cfg.Now().Add(-w.cfg.Retention)
	for ctx.Err() == nil {
		var n int
		err := w.store.Update(chat.WithOperation(ctx, OpPrune), func(tx chat.Tx) error {
			var err error
			n, err = tx.DeleteFinishedPushes(ctx, before, 1000)
			return err
		})
		if err != nil {
			w.log.Warn("push: deleting old pushes failed", "err", err)
			return
		}
		if n < 1000 {
			return
		}
	}
}

// result is the outcome of one attempt.
type result struct {
	p     *chat.PushDelivery
	err   error
	start time.Time
}

// RunOnce claims one batch of due pushes, sends them, records the
// attempts, and returns how many it claimed. Start runs it in a loop;
// tests and tools may call it directly (without Start).
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	n, _, err := w.runOnce(ctx)
	return n, err
}

// expandBatches is how many push batches (one per message) a claim
// expands into pushes.
const expandBatches = 16

// runOnce is RunOnce; more reports that push batches may remain to be
// expanded.
func (w *Worker) runOnce(ctx context.Context) (n int, more bool, err error) {
	var ps []*chat.PushDelivery
	now := w.cfg.Now()
	err = w.store.Update(chat.WithLazyCommit(chat.WithOperation(ctx, OpClaim)), func(tx chat.Tx) error {
		// The messages' decisions first: their pushes are due now.
		x, err := tx.ExpandPushBatches(ctx, expandBatches)
		if err != nil {
			return err
		}
		more = x == expandBatches
		ps, err = tx.ClaimPushes(ctx, w.cfg.Owner, now, w.cfg.Lease, w.cfg.BatchSize)
		return err
	})
	if err != nil || len(ps) == 0 {
		return 0, more, err
	}
	rs := make([]result, len(ps))
	sem := make(chan struct{}, w.cfg.Workers)
	var wg sync.WaitGroup
	for i, p := range ps {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			rs[i] = result{p: p, start: w.cfg.Now()}
			rs[i].err = w.sender.Send(ctx, Device{Provider: p.Provider, Token: p.Token}, Notification{
				Title: p.Title, Body: p.Body,
				Data: map[string]string{"channelId": p.ChannelID, "messageId": p.MessageID},
			})
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		// Stopped without waiting: record nothing; the leases expire and
		// the pushes are sent again.
		return len(ps), more, ctx.Err()
	}
	return len(ps), more, w.record(ctx, rs)
}

// outcome is what an attempt's result asks to record.
type outcome struct {
	state, result, lastError string
	next                     time.Time
}

// judge maps an attempt's error to the state that follows.
func (w *Worker) judge(r result, now time.Time) outcome {
	if r.err == nil {
		return outcome{state: chat.DeliveryDelivered, result: ResultDelivered}
	}
	msg := r.err.Error()
	switch KindOf(r.err) {
	case Gone:
		return outcome{state: chat.DeliveryFailed, result: ResultGone, lastError: msg}
	case Retry:
		attempt := r.p.Attempts + 1
		if attempt >= len(w.cfg.Schedule) {
			return outcome{state: chat.DeliveryFailed, result: ResultFailed, lastError: msg}
		}
		delay := w.cfg.Schedule[attempt]
		if w.cfg.Jitter > 0 {
			delay += time.Duration((mrand.Float64()*2 - 1) * w.cfg.Jitter * float64(delay))
		}
		if ra, ok := RetryAfter(r.err); ok {
			delay = max(delay, min(ra, w.cfg.MaxRetryAfter))
		}
		return outcome{state: chat.DeliveryPending, result: ResultRetry, lastError: msg, next: now.Add(delay)}
	}
	return outcome{state: chat.DeliveryFailed, result: ResultFailed, lastError: msg}
}

// record writes the attempts of a batch in one transaction. A push whose
// lease was lost (another worker took it) or whose device was deleted is
// skipped. A gone device is deleted unless it was registered again after
// the attempt began.
func (w *Worker) record(ctx context.Context, rs []result) error {
	now := w.cfg.Now()
	outs := make([]outcome, len(rs))
	for i, r := range rs {
		outs[i] = w.judge(r, now)
	}
	recorded := make([]bool, len(rs))
	err := w.store.Update(chat.WithLazyCommit(chat.WithOperation(ctx, OpFinish)), func(tx chat.Tx) error {
		clear(recorded)
		for i, r := range rs {
			o := outs[i]
			if o.result == ResultGone {
				removed, err := w.removeDevice(ctx, tx, r)
				if err != nil {
					return err
				}
				if removed {
					recorded[i] = true
					continue
				}
				outs[i].result = ResultFailed // registered again since: kept
			}
			err := tx.FinishPush(ctx, w.cfg.Owner, r.p.PushID, o.state, o.lastError, o.next, now)
			switch c := chat.ErrorCode(err); {
			case err == nil:
				recorded[i] = true
			case c == chat.CodeConflict || c == chat.CodeNotFound:
				w.log.Warn("push: lease lost before the attempt was recorded", "pushId", r.p.PushID, "err", err)
			default:
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, r := range rs {
		if !recorded[i] {
			continue
		}
		o := outs[i]
		if w.cfg.OnResult != nil {
			w.cfg.OnResult(r.p.Provider, o.result)
		}
		switch o.result {
		case ResultDelivered:
			w.log.Debug("push: delivered", "pushId", r.p.PushID, "messageId", r.p.MessageID, "deviceId", r.p.DeviceID)
		case ResultRetry:
			w.log.Info("push: attempt failed, will retry", "pushId", r.p.PushID, "err", o.lastError, "nextAttemptAt", o.next)
		case ResultGone:
			w.log.Info("push: device gone, removed", "deviceId", r.p.DeviceID, "userId", r.p.UserID, "err", o.lastError)
		default:
			w.log.Warn("push: failed", "pushId", r.p.PushID, "deviceId", r.p.DeviceID, "err", o.lastError)
		}
	}
	return nil
}

// removeDevice deletes the device of a push its provider reports as
// gone, unless it was registered again (updatedAt) after the attempt
// began: then the token is fresh and the device stays. It reports
// whether the device was deleted (its pushes went with it).
func (w *Worker) removeDevice(ctx context.Context, tx chat.Tx, r result) (bool, error) {
	ds, err := tx.ListDevices(ctx, r.p.UserID)
	if err != nil {
		return false, err
	}
	for _, d := range ds {
		if d.DeviceID != r.p.DeviceID {
			continue
		}
		if d.UpdatedAt.After(r.start) {
			return false, nil
		}
		err := tx.DeleteDevice(ctx, d.UserID, d.DeviceID)
		if chat.ErrorCode(err) == chat.CodeNotFound {
			err = nil
		}
		return err == nil, err
	}
	return false, nil
}

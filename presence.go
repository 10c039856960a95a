package chat

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// EventUserDidChangePresence is the ephemeral event of a user going online
// or offline (see Presence). Like channel.didStartTyping it is never
// stored and never sent to webhooks, so it is not in EventNames. Its
// EphemeralEvent has UserID set and ChannelID empty: the event streams of
// the users who share a channel with it receive it, and admins' streams.
const EventUserDidChangePresence = "user.didChangePresence"

// PresenceEventData is the data of user.didChangePresence.
type PresenceEventData struct {
	UserID       string `json:"userId"`
	Online       bool   `json:"online"`
	LastActiveAt *Time  `json:"lastActiveAt"`
}

// Defaults of PresenceConfig.
const (
	// DefaultPresenceGrace is how long a user stays online after its last
	// event stream closed.
	DefaultPresenceGrace = 30 * time.Second
	// DefaultPresenceLease is how long a process's claim to its users'
	// streams lasts without renewal.
	DefaultPresenceLease = 15 * time.Second
	// DefaultPresenceInterval is the longest time between two looks for
	// users whose grace period ended and for processes whose lease ended.
	DefaultPresenceInterval = time.Second
)

// PresenceState is a user's presence as the store keeps it, on the user's
// row. Online and LastActiveAt are those of User. OfflineSince, when set,
// is when the user's last open stream closed: the user stays online until
// the grace period after it has passed. It is nil while the user has a
// stream and once it is offline.
type PresenceState struct {
	UserID       string
	Online       bool
	LastActiveAt *Time
	OfflineSince *Time
}

// PresenceProcess is the lease of one process that holds event streams:
// its stream rows count while ExpiresAt is after now. RenewedAt is when the
// process last renewed it (the last time it was known alive).
type PresenceProcess struct {
	ProcessID string
	RenewedAt Time
	ExpiresAt Time
}

// PresenceStore keeps who has open event streams, for every process
// sharing the store: a lease per process, a stream row per process and
// user that has at least one stream there, and each user's PresenceState.
// The Presence decides every transition; the store keeps the facts.
type PresenceStore interface {
	// PutPresenceProcess inserts or replaces the lease of p.ProcessID.
	PutPresenceProcess(ctx context.Context, p *PresenceProcess) error
	// RenewPresenceProcess sets the lease's RenewedAt to now and its
	// ExpiresAt to until when the lease exists and has not expired at now,
	// and reports whether it did; otherwise it changes nothing.
	RenewPresenceProcess(ctx context.Context, processID string, now, until time.Time) (bool, error)
	// ExpiredPresenceProcesses returns up to limit leases that expired at
	// or before now, earliest first. In an Update the rows are locked until
	// the transaction ends; rows that another transaction holds are
	// skipped (SKIP LOCKED), so concurrent callers get disjoint sets.
	ExpiredPresenceProcesses(ctx context.Context, now time.Time, limit int) ([]*PresenceProcess, error)
	// DeletePresenceProcess deletes the lease of processID (no-op when
	// absent) and every stream row of that process, and returns the user
	// ids of the stream rows it deleted, ascending.
	DeletePresenceProcess(ctx context.Context, processID string) ([]string, error)
	// AddPresenceStream records that processID holds an open stream of
	// userID (no-op when recorded).
	AddPresenceStream(ctx context.Context, processID, userID string) error
	// RemovePresenceStream removes that record (no-op when absent).
	RemovePresenceStream(ctx context.Context, processID, userID string) error
	// LivePresence returns the users among userIDs that have a stream row
	// of a process whose lease expires after now, each once, ascending.
	LivePresence(ctx context.Context, userIDs []string, now time.Time) ([]string, error)
	// LockPresence returns the user's PresenceState, and in an Update
	// holds the user's row until the transaction ends, so that the
	// presence transitions of one user are decided one at a time;
	// CodeNotFound when the user does not exist.
	LockPresence(ctx context.Context, userID string) (*PresenceState, error)
	// SetPresence writes Online, LastActiveAt and OfflineSince of
	// p.UserID and nothing else; CodeNotFound when the user does not
	// exist.
	SetPresence(ctx context.Context, p *PresenceState) error
	// LapsedPresence returns up to limit users that are online with
	// OfflineSince set and not after cutoff, earliest OfflineSince first.
	// In an Update the rows are locked until the transaction ends; rows
	// that another transaction holds are skipped (SKIP LOCKED).
	LapsedPresence(ctx context.Context, cutoff time.Time, limit int) ([]*PresenceState, error)
}

// PresenceConfig configures a Presence. The zero value works.
type PresenceConfig struct {
	// Grace is how long a user stays online after its last stream closed,
	// so that a reconnect does not show it offline and online again.
	// Every process sharing the store should use the same. Default
	// DefaultPresenceGrace (30 s).
	Grace time.Duration
	// Lease is how long this process's streams count after its last
	// renewal (it renews every Lease/3): a process that stops without
	// cleaning up (a crash) leaves its users online for at most Lease
	// plus Interval plus Grace. Default DefaultPresenceLease (15 s).
	Lease time.Duration
	// Interval is the longest time between two looks for users whose
	// grace ended and for expired leases of other processes. Default
	// DefaultPresenceInterval (1 s), at most Grace/2 and Lease/3.
	Interval time.Duration
	// Logger receives errors of the store. Default: the Service's.
	Logger *slog.Logger
}

// Presence keeps the online state of users (User.Online, LastActiveAt) for
// one process: a user is online while it has at least one open event
// stream on any process sharing the store, and for Config.Grace after its
// last one closed. The stream hub calls Open and Close as each end user's
// streams on this process start and end; a goroutine writes the changes to
// the store and announces each transition with the ephemeral event
// user.didChangePresence (see EventUserDidChangePresence).
//
// Every process has its own id and a lease in the store that it renews;
// the stream rows of a process whose lease expired (it crashed, or lost
// the store for longer than the lease) are deleted by any other process,
// so their users go offline after the grace period. Each transition is
// decided in one transaction holding the user's row, so it is announced
// once, by whichever process made it. New starts nothing; Start and Stop
// do.
type Presence struct {
	svc *Service
	cfg PresenceConfig
	log *slog.Logger
	id  string

	mu      sync.Mutex
	counts  map[string]int      // this process's open streams, by user
	dirty   map[string]struct{} // users whose count crossed zero since the last sync
	started bool
	stopped bool
	cancel  context.CancelFunc
	done    chan struct{}
	wake    chan struct{}

	// syncMu serializes the work on the store: the goroutine's and that of
	// Sync, Sweep and Stop.
	syncMu sync.Mutex
	stored map[string]bool // users whose stream row this process wrote
	renew  time.Time       // when the lease was last put or renewed
}

// NewPresence returns a Presence for s with a new process id. It starts
// no goroutine.
func NewPresence(s *Service, cfg PresenceConfig) *Presence {
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultPresenceGrace
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultPresenceLease
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultPresenceInterval
	}
	cfg.Interval = max(min(cfg.Interval, cfg.Grace/2, cfg.Lease/3), time.Millisecond)
	log := cfg.Logger
	if log == nil {
		log = s.log
	}
	return &Presence{svc: s, cfg: cfg, log: log, id: NewID(),
		counts: map[string]int{}, dirty: map[string]struct{}{}, stored: map[string]bool{},
		wake: make(chan struct{}, 1)}
}

// update runs fn in a store transaction named op (see WithOperation).
func (p *Presence) update(ctx context.Context, op string, fn func(tx Tx) error) error {
	return p.svc.store.Update(WithOperation(ctx, op), fn)
}

// ProcessID returns the id under which this process's streams are kept.
func (p *Presence) ProcessID() string { return p.id }

// Grace returns the configured grace period.
func (p *Presence) Grace() time.Duration { return p.cfg.Grace }

// Open records that one more stream of the end user userID opened on this
// process. It does not block: the store learns it within the Interval
// (at once when the goroutine is idle).
func (p *Presence) Open(userID string) {
	p.mu.Lock()
	p.counts[userID]++
	if p.counts[userID] == 1 {
		p.dirty[userID] = struct{}{}
		p.signal()
	}
	p.mu.Unlock()
}

// Close records that one stream of userID on this process ended. It does
// not block.
func (p *Presence) Close(userID string) {
	p.mu.Lock()
	if n := p.counts[userID] - 1; n > 0 {
		p.counts[userID] = n
	} else if n == 0 {
		delete(p.counts, userID)
		p.dirty[userID] = struct{}{}
		p.signal()
	}
	p.mu.Unlock()
}

// signal wakes the goroutine, with p.mu held.
func (p *Presence) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// local reports which of ids have an open stream on this process.
func (p *Presence) local(ids []string, out map[string]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		if p.counts[id] > 0 {
			out[id] = true
		}
	}
}

// Start puts this process's lease in the store and starts the goroutine;
// it runs until Stop (ctx only bounds the start). Starting twice, or after
// Stop, is an error. Errors of the store: CodeUnavailable, CodeInternal.
func (p *Presence) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return errors.New("chat: presence already started")
	}
	if p.stopped {
		return errors.New("chat: presence stopped")
	}
	now := p.svc.now()
	err := p.update(ctx, "presence.start", func(tx Tx) error {
		return tx.PutPresenceProcess(ctx, &PresenceProcess{ProcessID: p.id, RenewedAt: NewTime(now), ExpiresAt: NewTime(now.Add(p.cfg.Lease))})
	})
	if err != nil {
		return err
	}
	p.renew = now
	// Streams opened before Start are written by the first sync.
	p.signal()
	runCtx, cancel := context.WithCancel(context.Background())
	p.started, p.cancel, p.done = true, cancel, make(chan struct{})
	p.svc.presence.Store(p)
	go p.run(runCtx)
	return nil
}

// Stop stops the goroutine, then deletes this process's lease and stream
// rows: its users without a stream elsewhere go offline after the grace
// period (announced by any process still running, or by the next to
// start). It waits for the work in progress until ctx is done, and may be
// called more than once, and before Start.
func (p *Presence) Stop(ctx context.Context) error {
	p.mu.Lock()
	if !p.started || p.stopped {
		p.stopped = true
		p.mu.Unlock()
		return nil
	}
	p.stopped = true
	p.cancel()
	done := p.done
	p.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	p.svc.presence.CompareAndSwap(p, nil)
	p.syncMu.Lock()
	defer p.syncMu.Unlock()
	clear(p.stored)
	return p.update(ctx, "presence.stop", func(tx Tx) error {
		return p.dropProcess(ctx, tx, p.id, p.svc.now())
	})
}

func (p *Presence) run(ctx context.Context) {
	defer close(p.done)
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
			p.work(ctx, false)
		case <-t.C:
			p.work(ctx, true)
		}
	}
}

// work renews the lease when a third of it has passed, writes the pending
// changes and, with sweep, looks for expired leases and lapsed users.
func (p *Presence) work(ctx context.Context, sweep bool) {
	if p.svc.now().Sub(p.renew) >= p.cfg.Lease/3 {
		if err := p.renewLease(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("chat: renewing the presence lease", "err", err)
		}
	}
	if err := p.Sync(ctx); err != nil && ctx.Err() == nil {
		p.log.Warn("chat: writing presence", "err", err)
	}
	if sweep {
		if err := p.Sweep(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("chat: ending presence", "err", err)
		}
	}
}

// renewLease extends the lease. When it had expired (the process lost the
// store for longer than the lease), another process may have deleted its
// stream rows: the lease is put again, what remains of the old rows is
// deleted, and every user with a stream here is written again.
func (p *Presence) renewLease(ctx context.Context) error {
	p.syncMu.Lock()
	defer p.syncMu.Unlock()
	now := p.svc.now()
	var held bool
	err := p.update(ctx, "presence.renew", func(tx Tx) (err error) {
		held, err = tx.RenewPresenceProcess(ctx, p.id, now, now.Add(p.cfg.Lease))
		if err != nil || held {
			return err
		}
		if err := p.dropProcess(ctx, tx, p.id, now); err != nil {
			return err
		}
		return tx.PutPresenceProcess(ctx, &PresenceProcess{ProcessID: p.id, RenewedAt: NewTime(now), ExpiresAt: NewTime(now.Add(p.cfg.Lease))})
	})
	if err != nil {
		return err
	}
	p.renew = now
	if !held {
		clear(p.stored)
		p.mu.Lock()
		for u := range p.counts {
			p.dirty[u] = struct{}{}
		}
		p.mu.Unlock()
	}
	return nil
}

// Sync writes to the store, now, the changes of this process's streams
// since the last sync (the goroutine does it within the Interval) and
// announces the users that they bring online. A user whose streams
// closed and opened again in between is not written at all.
func (p *Presence) Sync(ctx context.Context) error {
	p.syncMu.Lock()
	defer p.syncMu.Unlock()
	p.mu.Lock()
	if len(p.dirty) == 0 {
		p.mu.Unlock()
		return nil
	}
	want := make(map[string]bool, len(p.dirty))
	for u := range p.dirty {
		want[u] = p.counts[u] > 0
	}
	clear(p.dirty)
	p.mu.Unlock()
	var opens, closes []string
	for u, on := range want {
		if on == p.stored[u] {
			continue
		}
		if on {
			opens = append(opens, u)
		} else {
			closes = append(closes, u)
		}
	}
	slices.Sort(opens)
	slices.Sort(closes)
	// Written presenceBatch users to a transaction: a burst of streams
	// (a restart's reconnects) costs a commit per batch, not per user.
	for len(opens)+len(closes) > 0 {
		var err error
		if len(opens) > 0 {
			b := opens[:min(len(opens), presenceBatch)]
			if err = p.open(ctx, b); err == nil {
				for _, u := range b {
					p.stored[u] = true
				}
				opens = opens[len(b):]
			}
		} else {
			b := closes[:min(len(closes), presenceBatch)]
			if err = p.close(ctx, b); err == nil {
				for _, u := range b {
					delete(p.stored, u)
				}
				closes = closes[len(b):]
			}
		}
		if err != nil {
			// Tried again at the next sync, with what is wanted then.
			p.mu.Lock()
			for _, v := range opens {
				p.dirty[v] = struct{}{}
			}
			for _, v := range closes {
				p.dirty[v] = struct{}{}
			}
			p.mu.Unlock()
			return err
		}
	}
	return nil
}

// open records a stream on this process of each of us (ascending) and
// brings online, and announces, those that were offline. Like close and
// dropProcess, it writes the stream rows before it takes the users' rows
// (in ascending order), so that transactions on one user's presence wait
// for each other in one order. A user that does not exist gets no row.
func (p *Presence) open(ctx context.Context, us []string) error {
	now := NewTime(p.svc.now())
	var changed []*PresenceState
	err := p.update(ctx, "presence.open", func(tx Tx) error {
		changed = changed[:0]
		for _, u := range us {
			if err := tx.AddPresenceStream(ctx, p.id, u); err != nil {
				return err
			}
		}
		for _, u := range us {
			s, err := tx.LockPresence(ctx, u)
			if ErrorCode(err) == CodeNotFound {
				if err := tx.RemovePresenceStream(ctx, p.id, u); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			was := s.Online
			s.Online, s.OfflineSince, s.LastActiveAt = true, nil, &now
			if err := tx.SetPresence(ctx, s); err != nil {
				return err
			}
			if !was {
				changed = append(changed, s)
			}
		}
		return nil
	})
	if err == nil {
		for _, s := range changed {
			p.announce(ctx, s)
		}
	}
	return err
}

// close removes the stream rows of us (ascending) on this process; the
// grace period of each left with no stream on a live process starts.
func (p *Presence) close(ctx context.Context, us []string) error {
	now := p.svc.now()
	return p.update(ctx, "presence.close", func(tx Tx) error {
		for _, u := range us {
			if err := tx.RemovePresenceStream(ctx, p.id, u); err != nil {
				return err
			}
		}
		return p.settle(ctx, tx, us, now, now)
	})
}

// settle starts the grace period, at at, of the users among us (ascending)
// that are online without a grace period running and have no stream on a
// live process at now. The users' rows are taken before the streams are
// counted, so that a stream another transaction adds meanwhile is seen.
func (p *Presence) settle(ctx context.Context, tx Tx, us []string, at, now time.Time) error {
	var cands []*PresenceState
	for _, u := range us {
		s, err := tx.LockPresence(ctx, u)
		if ErrorCode(err) == CodeNotFound {
			continue
		}
		if err != nil {
			return err
		}
		if s.Online && s.OfflineSince == nil {
			cands = append(cands, s)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	ids := make([]string, len(cands))
	for i, s := range cands {
		ids[i] = s.UserID
	}
	live, err := tx.LivePresence(ctx, ids, now)
	if err != nil {
		return err
	}
	t := NewTime(at)
	for _, s := range cands {
		if slices.Contains(live, s.UserID) {
			continue
		}
		s.OfflineSince, s.LastActiveAt = &t, &t
		if err := tx.SetPresence(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// dropProcess deletes the lease and stream rows of a process and starts
// the grace period, at at, of its users left without a stream.
func (p *Presence) dropProcess(ctx context.Context, tx Tx, processID string, at time.Time) error {
	us, err := tx.DeletePresenceProcess(ctx, processID)
	if err != nil || len(us) == 0 {
		return err
	}
	return p.settle(ctx, tx, us, at, p.svc.now())
}

// presenceBatch bounds the processes and users one transaction of Sweep
// handles.
const presenceBatch = 100

// Sweep does now what the goroutine does every Interval: it deletes the
// stream rows of the processes whose lease expired (their users' grace
// period starts at the lease's last renewal), then takes offline the
// users whose grace period ended, and announces them. Several processes
// may sweep at once: each user is taken offline, and announced, once.
func (p *Presence) Sweep(ctx context.Context) error {
	p.syncMu.Lock()
	defer p.syncMu.Unlock()
	// A read first: with nothing to do (the common case) no write
	// transaction is taken (SQLite has one writer).
	var expired, lapsed bool
	now := p.svc.now()
	err := p.svc.store.View(WithOperation(ctx, "presence.look"), func(tx Tx) error {
		ps, err := tx.ExpiredPresenceProcesses(ctx, now, 1)
		if err != nil {
			return err
		}
		ss, err := tx.LapsedPresence(ctx, now.Add(-p.cfg.Grace), 1)
		expired, lapsed = len(ps) > 0, len(ss) > 0
		return err
	})
	if err != nil || !expired && !lapsed {
		return err
	}
	for expired {
		now := p.svc.now()
		var n int
		err := p.update(ctx, "presence.expire", func(tx Tx) error {
			ps, err := tx.ExpiredPresenceProcesses(ctx, now, presenceBatch)
			n = len(ps)
			for _, q := range ps {
				if err == nil {
					err = p.dropProcess(ctx, tx, q.ProcessID, q.RenewedAt.Time)
				}
			}
			return err
		})
		if err != nil {
			return err
		}
		if n < presenceBatch {
			break
		}
	}
	// Then the lapsed users, those a dropped process left included (their
	// grace period starts at its last renewal, and may be over already).
	for {
		now := p.svc.now()
		var gone []*PresenceState
		var full bool
		err := p.update(ctx, "presence.offline", func(tx Tx) error {
			ss, err := tx.LapsedPresence(ctx, now.Add(-p.cfg.Grace), presenceBatch)
			if err != nil {
				return err
			}
			full = len(ss) >= presenceBatch
			ids := make([]string, len(ss))
			for i, s := range ss {
				ids[i] = s.UserID
			}
			live, err := tx.LivePresence(ctx, ids, now)
			if err != nil {
				return err
			}
			gone = gone[:0]
			for _, s := range ss {
				if slices.Contains(live, s.UserID) {
					// A stream opened after all: the user stays online.
					s.OfflineSince = nil
				} else {
					s.Online, s.OfflineSince = false, nil
					gone = append(gone, s)
				}
				if err := tx.SetPresence(ctx, s); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, s := range gone {
			p.announce(ctx, s)
		}
		if !full {
			return nil
		}
	}
}

// announce publishes user.didChangePresence for s. The event is a hint
// delivered at most once: a failure is logged.
func (p *Presence) announce(ctx context.Context, s *PresenceState) {
	ev := EphemeralEvent{
		Event:     EventUserDidChangePresence,
		UserID:    s.UserID,
		Data:      mustJSON(PresenceEventData{UserID: s.UserID, Online: s.Online, LastActiveAt: s.LastActiveAt}),
		CreatedAt: NewTime(p.svc.now()),
	}
	if err := p.svc.emitEphemeral(ctx, ev); err != nil {
		p.log.Warn("chat: presence event not sent", "userId", s.UserID, "online", s.Online, "err", err)
	}
}

// onlineBatch bounds the ids of one read of Online.
const onlineBatch = 1000

// Online reports, for each of userIDs, whether the user has an open event
// stream right now on a process sharing the store whose lease is live
// (the streams of this process's running Presence count at once, before
// they are written). Unlike User.Online it does not count the grace
// period: a user whose last stream just closed is not online here. Users
// that do not exist are false. Any number of ids may be asked (read 1,000
// at a time, in one transaction). Errors: CodeUnavailable.
func (s *Service) Online(ctx context.Context, userIDs []string) (map[string]bool, error) {
	var out map[string]bool
	err := s.view(ctx, func(tx Tx) (err error) {
		out, err = s.onlineIn(ctx, tx, userIDs)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// onlineIn is Online inside the transaction tx (the push decision asks
// it in the message's transaction).
func (s *Service) onlineIn(ctx context.Context, tx Tx, userIDs []string) (map[string]bool, error) {
	out := make(map[string]bool, len(userIDs))
	for _, u := range userIDs {
		out[u] = false
	}
	if len(userIDs) == 0 {
		return out, nil
	}
	now := s.now()
	for ids := range slices.Chunk(userIDs, onlineBatch) {
		live, err := tx.LivePresence(ctx, ids, now)
		if err != nil {
			return nil, err
		}
		for _, u := range live {
			out[u] = true
		}
	}
	if p := s.presence.Load(); p != nil {
		p.local(userIDs, out)
	}
	return out, nil
}

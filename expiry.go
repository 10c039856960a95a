package chat

import (
	"context"
	"log/slog"
	"sort"
	"time"
)

// The reasons of channel.didUnmute and channel.didUnmuteUsers.
const (
	// UnmuteExpired: the mute ended by time (announced by ExpireMutes, or
	// by the next mute call on the channel or member, whichever comes
	// first).
	UnmuteExpired = "expired"
	// UnmuteManual: the mute was lifted by hand (mutePeriod 0).
	UnmuteManual = "manual"
)

// MuteExpiryStore finds the mutes that ended by time and have not been
// announced yet. A channel or member whose MuteTimeout is set is muted
// until then; once that moment has passed the mute is over, and the
// Service announces it (channel.didUnmute, channel.didUnmuteUsers) in the
// transaction that sets MuteTimeout back to nil. So a MuteTimeout that is
// set and not after now marks a lapsed mute not yet announced.
type MuteExpiryStore interface {
	// LapsedMutes returns up to limit open channels and up to limit
	// member relations (membership member) whose MuteTimeout is set and
	// not after now, earliest MuteTimeout first. In an Update the rows are
	// locked until the transaction ends, a relation's channel before the
	// relation; rows that another transaction holds are skipped (SKIP
	// LOCKED), so concurrent callers, in any process, get disjoint sets
	// and none waits for another.
	LapsedMutes(ctx context.Context, now time.Time, limit int) ([]*Channel, []*ChannelUser, error)
	// NextMuteEnd returns the earliest MuteTimeout of an open channel or
	// of a member relation, lapsed or not; ok is false when nothing is
	// muted.
	NextMuteEnd(ctx context.Context) (t time.Time, ok bool, err error)
}

// expiryBatch is how many channels and how many members one transaction
// of ExpireMutes announces at most.
const expiryBatch = 100

// ExpireMutes announces the mutes that ended by time, at s.Now(): for each
// lapsed channel mute a channel.didUnmute, for the lapsed member mutes of
// each channel one channel.didUnmuteUsers, both with reason "expired",
// written in the transaction that clears the mutes, so each lapse is
// announced once, whichever process gets to it first. It works in batches
// until none is left and returns how many channel and member mutes it
// announced, and when the next mute ends (ok false when none does). The
// Expirer calls it; a program without one may call it itself.
func (s *Service) ExpireMutes(ctx context.Context) (n int, next time.Time, ok bool, err error) {
	for {
		var batch int
		var full bool
		now := s.Now()
		err = s.update(ctx, func(tx Tx, ev *events) error {
			chans, cus, err := tx.LapsedMutes(ctx, now.Time, expiryBatch)
			if err != nil {
				return err
			}
			batch, full = len(chans)+len(cus), len(chans) >= expiryBatch || len(cus) >= expiryBatch
			for _, c := range chans {
				c.MuteTimeout = nil
				c.UpdatedAt = now
				if err := tx.UpdateChannel(ctx, c); err != nil {
					return err
				}
				presentChannel(c, now.Time)
				ev.add(EventChannelDidUnmute, ChannelEventData{Channel: *c, UserIDs: []string{}, Reason: UnmuteExpired, Users: []User{}})
			}
			if err := s.expireMembers(ctx, tx, ev, cus, now); err != nil {
				return err
			}
			next, ok, err = tx.NextMuteEnd(ctx)
			return err
		})
		if err != nil {
			return n, time.Time{}, false, err
		}
		n += batch
		if !full {
			return n, next, ok, nil
		}
	}
}

// expireMembers clears the lapsed member mutes cus and adds one
// channel.didUnmuteUsers per channel.
func (s *Service) expireMembers(ctx context.Context, tx Tx, ev *events, cus []*ChannelUser, now Time) error {
	byChan := map[string][]*ChannelUser{}
	for _, cu := range cus {
		byChan[cu.ChannelID] = append(byChan[cu.ChannelID], cu)
	}
	ids := make([]string, 0, len(byChan))
	for id := range byChan {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		c, err := tx.LockChannel(ctx, id)
		if err != nil {
			return err
		}
		members := byChan[id]
		sort.Slice(members, func(i, j int) bool { return members[i].UserID < members[j].UserID })
		userIDs := make([]string, 0, len(members))
		for _, cu := range members {
			cu.MuteTimeout, cu.IsMuted, cu.UpdatedAt = nil, false, now
			if err := tx.PutChannelUser(ctx, cu); err != nil {
				return err
			}
			userIDs = append(userIDs, cu.UserID)
		}
		us, err := tx.GetUsers(ctx, userIDs)
		if err != nil {
			return err
		}
		presentChannel(c, now.Time)
		ev.add(EventChannelDidUnmuteUsers, ChannelEventData{Channel: *c, UserIDs: userIDs, Reason: UnmuteExpired, Users: userValues(us)})
	}
	return nil
}

// muteWritten wakes the Expirer after a mute with an end was written, so it
// looks again at when the next mute ends.
func (s *Service) muteWritten() {
	select {
	case s.muteSet <- struct{}{}:
	default:
	}
}

// ExpirerConfig configures an Expirer. The zero value works.
type ExpirerConfig struct {
	// Interval is the longest time between two looks at the store, which
	// bounds how late a mute written by another process sharing the store
	// is announced. Default 1 s.
	Interval time.Duration
	// Logger receives errors of the store. Default: the Service's.
	Logger *slog.Logger
}

// Expirer announces mutes when they end by time (channel.didUnmute,
// channel.didUnmuteUsers with reason "expired"): it calls
// Service.ExpireMutes at the moment the next mute ends, at least every
// Config.Interval, and whenever a mute is written through its Service.
// Several processes on one store may each run one: every lapse is
// announced once. A lapse that passed while no Expirer ran is announced
// when one starts. New starts nothing; Start and Stop do.
type Expirer struct {
	svc *Service
	cfg ExpirerConfig
	bg  background
}

// minExpiryWait is the wait after a look that left a lapsed mute behind
// (another transaction holds it, and will announce it or free it), so that
// it is not polled for in a tight loop.
const minExpiryWait = 50 * time.Millisecond

// NewExpirer returns an Expirer for s. It starts no goroutine.
func NewExpirer(s *Service, cfg ExpirerConfig) *Expirer {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = s.log
	}
	e := &Expirer{svc: s, cfg: cfg}
	e.bg = background{what: "expirer", fail: "chat: announcing expired mutes", log: log, wake: s.muteSet, step: e.step}
	return e
}

// Start starts announcing; it runs until Stop (ctx only bounds the start).
// Starting twice, or after Stop, is an error.
func (e *Expirer) Start(ctx context.Context) error { return e.bg.start(ctx) }

// Stop stops announcing and waits until the work in progress ends, or ctx
// is done. It may be called more than once, and before Start.
func (e *Expirer) Stop(ctx context.Context) error { return e.bg.stop(ctx) }

// step announces the lapsed mutes and returns the wait until the next
// lapse, at most Config.Interval.
func (e *Expirer) step(ctx context.Context) (time.Duration, error) {
	_, next, ok, err := e.svc.ExpireMutes(ctx)
	if err != nil || !ok {
		return e.cfg.Interval, err
	}
	d := next.Sub(e.svc.Now().Time)
	if d <= 0 {
		// Lapsed but not taken: another transaction holds it.
		d = minExpiryWait
	}
	return min(d, e.cfg.Interval), nil
}

package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	chat "github.com/chatengine/chat"
)

// ---- presence ----
//
// One write transaction runs at a time, so the locks the interface speaks
// of hold by themselves, and SKIP LOCKED skips nothing.

// PutPresenceProcess implements chat.PresenceStore.
func (t *tx) PutPresenceProcess(_ context.Context, p *chat.PresenceProcess) error {
	if err := t.writable(); err != nil {
		return err
	}
	v := *p
	v.RenewedAt, v.ExpiresAt = nt(p.RenewedAt), nt(p.ExpiresAt)
	setKey(t, t.d.presenceProcs, v.ProcessID, &v)
	return nil
}

// RenewPresenceProcess implements chat.PresenceStore.
func (t *tx) RenewPresenceProcess(_ context.Context, processID string, now, until time.Time) (bool, error) {
	if err := t.writable(); err != nil {
		return false, err
	}
	p, ok := t.d.presenceProcs[processID]
	if !ok || !p.ExpiresAt.After(now) {
		return false, nil
	}
	setKey(t, t.d.presenceProcs, processID, &chat.PresenceProcess{ProcessID: processID,
		RenewedAt: chat.NewTime(now), ExpiresAt: chat.NewTime(until)})
	return true, nil
}

// ExpiredPresenceProcesses implements chat.PresenceStore.
func (t *tx) ExpiredPresenceProcesses(_ context.Context, now time.Time, limit int) ([]*chat.PresenceProcess, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	var out []*chat.PresenceProcess
	for _, p := range t.d.presenceProcs {
		if !p.ExpiresAt.After(now) {
			v := *p
			out = append(out, &v)
		}
	}
	slices.SortFunc(out, func(a, b *chat.PresenceProcess) int {
		if c := a.ExpiresAt.Compare(b.ExpiresAt.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.ProcessID, b.ProcessID)
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// DeletePresenceProcess implements chat.PresenceStore.
func (t *tx) DeletePresenceProcess(_ context.Context, processID string) ([]string, error) {
	if err := t.writable(); err != nil {
		return nil, err
	}
	delKey(t, t.d.presenceProcs, processID)
	var out []string
	for u := range t.d.procUsers[processID] {
		out = append(out, u)
		t.unlinkStream(processID, u)
	}
	slices.Sort(out)
	return out, nil
}

// unlinkStream removes the stream row (processID, userID) from both
// indexes.
func (t *tx) unlinkStream(processID, userID string) {
	if us := t.d.procUsers[processID]; us != nil {
		delKey(t, us, userID)
		if len(us) == 0 {
			delKey(t, t.d.procUsers, processID)
		}
	}
	if ps := t.d.userProcs[userID]; ps != nil {
		delKey(t, ps, processID)
		if len(ps) == 0 {
			delKey(t, t.d.userProcs, userID)
		}
	}
}

// AddPresenceStream implements chat.PresenceStore.
func (t *tx) AddPresenceStream(_ context.Context, processID, userID string) error {
	if err := t.writable(); err != nil {
		return err
	}
	setKey(t, innerMap(t, t.d.procUsers, processID), userID, struct{}{})
	setKey(t, innerMap(t, t.d.userProcs, userID), processID, struct{}{})
	return nil
}

// RemovePresenceStream implements chat.PresenceStore.
func (t *tx) RemovePresenceStream(_ context.Context, processID, userID string) error {
	if err := t.writable(); err != nil {
		return err
	}
	t.unlinkStream(processID, userID)
	return nil
}

// LivePresence implements chat.PresenceStore.
func (t *tx) LivePresence(_ context.Context, userIDs []string, now time.Time) ([]string, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	var out []string
	for _, u := range userIDs {
		if slices.Contains(out, u) {
			continue
		}
		for pid := range t.d.userProcs[u] {
			if p, ok := t.d.presenceProcs[pid]; ok && p.ExpiresAt.After(now) {
				out = append(out, u)
				break
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// LockPresence implements chat.PresenceStore.
func (t *tx) LockPresence(_ context.Context, userID string) (*chat.PresenceState, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	u, ok := t.d.users[userID]
	if !ok {
		return nil, notFound("user", userID)
	}
	return t.presenceOf(u), nil
}

func (t *tx) presenceOf(u *chat.User) *chat.PresenceState {
	s := &chat.PresenceState{UserID: u.UserID, Online: u.Online, LastActiveAt: cpt(u.LastActiveAt)}
	if at, ok := t.d.offlineSince[u.UserID]; ok {
		s.OfflineSince = &at
	}
	return s
}

// SetPresence implements chat.PresenceStore.
func (t *tx) SetPresence(_ context.Context, s *chat.PresenceState) error {
	if err := t.writable(); err != nil {
		return err
	}
	p, ok := t.d.users[s.UserID]
	if !ok {
		return notFound("user", s.UserID)
	}
	v := *p
	v.Online, v.LastActiveAt = s.Online, ntp(s.LastActiveAt)
	replace(t, p, v)
	if s.OfflineSince != nil {
		setKey(t, t.d.offlineSince, s.UserID, nt(*s.OfflineSince))
	} else {
		delKey(t, t.d.offlineSince, s.UserID)
	}
	return nil
}

// LapsedPresence implements chat.PresenceStore.
func (t *tx) LapsedPresence(_ context.Context, cutoff time.Time, limit int) ([]*chat.PresenceState, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	var out []*chat.PresenceState
	for id, at := range t.d.offlineSince {
		u, ok := t.d.users[id]
		if ok && u.Online && !at.After(cutoff) {
			out = append(out, t.presenceOf(u))
		}
	}
	slices.SortFunc(out, func(a, b *chat.PresenceState) int {
		if c := a.OfflineSince.Compare(b.OfflineSince.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.UserID, b.UserID)
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

package memory

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
)

// userIn is the stored form of u: presence is written by SetPresence
// alone.
func userIn(u *chat.User) (*chat.User, error) {
	v := cloneUser(u)
	var err error
	v.Metadata, err = normMap(u.Metadata)
	v.Online, v.LastActiveAt = false, nil
	return v, err
}

func (t *tx) CreateUser(_ context.Context, u *chat.User) error {
	v, err := userIn(u)
	if err != nil {
		return err
	}
	return insert(t, t.r().users, v.UserID, v, "user")
}

func (t *tx) EnsureUsers(_ context.Context, ids []string, now time.Time) ([]*chat.User, error) {
	at := chat.NewTime(now)
	out := make([]*chat.User, 0, len(ids))
	for _, id := range ids {
		u, ok := t.r().users[id]
		if !ok {
			u = &chat.User{UserID: id, DisplayName: id, CreatedAt: at, UpdatedAt: at}
			put(t, t.r().users, id, u)
		}
		out = append(out, cloneUser(u))
	}
	return out, nil
}

func (t *tx) GetUser(_ context.Context, userID string) (*chat.User, error) {
	return get(t, t.r().users, userID, cloneUser, "user")
}

func (t *tx) GetUsers(_ context.Context, ids []string) ([]*chat.User, error) {
	out := make([]*chat.User, 0, len(ids))
	for _, id := range ids {
		if u, ok := t.r().users[id]; ok {
			out = append(out, cloneUser(u))
		}
	}
	return out, nil
}

func (t *tx) UpdateUser(_ context.Context, u *chat.User) error {
	in, err := userIn(u)
	if err != nil {
		return err
	}
	return change(t, t.r().users, u.UserID, "user", func(v *chat.User) {
		v.DisplayName, v.Roles, v.Metadata, v.FlagCount = in.DisplayName, in.Roles, in.Metadata, in.FlagCount
		v.Hashflag, v.IsGlobalBan, v.TokensRevokedAt, v.UpdatedAt = in.Hashflag, in.IsGlobalBan, in.TokensRevokedAt, in.UpdatedAt
	})
}

func (t *tx) QueryUsers(_ context.Context, f chat.UserFilter) ([]*chat.User, error) {
	l := sortedValues(t.r().users, func(u *chat.User) bool {
		return (!f.Flagged || u.FlagCount > 0) && (f.Search == "" || chat.MatchUser(f.Search, u))
	}, func(a, b *chat.User) int { return strings.Compare(a.UserID, b.UserID) })
	cursor := func(c *chat.UserCursor) func(*chat.User) int {
		if c == nil {
			return nil
		}
		return func(u *chat.User) int { return strings.Compare(u.UserID, c.UserID) }
	}
	return copies(window(l, cursor(f.After), cursor(f.Before), 0, f.Limit), cloneUser), nil
}

// ---- roles and rules ----

func (t *tx) PutRole(_ context.Context, r *chat.Role) error {
	v := cloneRole(r)
	if old, ok := t.r().roles[v.RoleID]; ok {
		v.CreatedAt = old.CreatedAt
	}
	put(t, t.r().roles, v.RoleID, v)
	return nil
}

func (t *tx) GetRoles(_ context.Context, ids []string) ([]*chat.Role, error) {
	return byIDs(t.r().roles, ids, cloneRole), nil
}

func (t *tx) ListRoles(_ context.Context, filter string) ([]*chat.Role, error) {
	lf := strings.ToLower(filter)
	keep := func(r *chat.Role) bool { return strings.Contains(strings.ToLower(r.RoleID), lf) }
	return copies(sortedValues(t.r().roles, keep, func(a, b *chat.Role) int { return cmp.Compare(a.RoleID, b.RoleID) }), cloneRole), nil
}

func (t *tx) bumpRules() { set(t, &t.r().rulesVersion, t.r().rulesVersion+1) }

func (t *tx) PutRule(_ context.Context, r *chat.Rule) error {
	v := cloneRule(r)
	k := pair{string(v.List), v.RuleID}
	if old, ok := t.r().rules[k]; ok {
		v.CreatedAt = old.CreatedAt
	}
	put(t, t.r().rules, k, v)
	t.bumpRules()
	return nil
}

func (t *tx) ListRules(_ context.Context, list chat.RuleList, ids []string) ([]*chat.Rule, error) {
	keep := func(r *chat.Rule) bool { return r.List == list && (ids == nil || slices.Contains(ids, r.RuleID)) }
	return copies(sortedValues(t.r().rules, keep, func(a, b *chat.Rule) int { return cmp.Compare(a.RuleID, b.RuleID) }), cloneRule), nil
}

func (t *tx) DeleteRules(_ context.Context, list chat.RuleList, ids []string) (int, error) {
	n := deleteWhere(t, t.r().rules, func(r *chat.Rule) bool { return r.List == list && slices.Contains(ids, r.RuleID) }, 0)
	if n > 0 {
		t.bumpRules()
	}
	return n, nil
}

func (t *tx) RenameRule(_ context.Context, list chat.RuleList, oldID string, r *chat.Rule) error {
	old, ok := t.r().rules[pair{string(list), oldID}]
	if !ok {
		return chat.Errorf(chat.CodeNotFound, "%s rule %q not found", list, oldID)
	}
	if _, taken := t.r().rules[pair{string(list), r.RuleID}]; taken && r.RuleID != oldID {
		return conflict("%s rule %q already exists", list, r.RuleID)
	}
	v := *old
	v.List, v.RuleID, v.IsMatchExactWord = list, r.RuleID, r.IsMatchExactWord
	if !r.UpdatedAt.IsZero() {
		v.UpdatedAt = nt(r.UpdatedAt)
	}
	del(t, t.r().rules, pair{string(list), oldID})
	put(t, t.r().rules, pair{string(list), v.RuleID}, &v)
	t.bumpRules()
	return nil
}

func (t *tx) RulesVersion(_ context.Context) (int64, error) {
	return t.r().rulesVersion, nil
}

// ---- presence ----
//
// One write transaction runs at a time, so the locks the interface speaks
// of hold by themselves, and SKIP LOCKED skips nothing.

func (t *tx) PutPresenceProcess(_ context.Context, p *chat.PresenceProcess) error {
	put(t, t.r().procs, p.ProcessID, cloneProcess(p))
	return nil
}

func (t *tx) RenewPresenceProcess(_ context.Context, processID string, now, until time.Time) (bool, error) {
	if p, ok := t.r().procs[processID]; !ok || !p.ExpiresAt.After(now) {
		return false, nil
	}
	put(t, t.r().procs, processID, &chat.PresenceProcess{ProcessID: processID, RenewedAt: chat.NewTime(now), ExpiresAt: chat.NewTime(until)})
	return true, nil
}

func (t *tx) ExpiredPresenceProcesses(_ context.Context, now time.Time, limit int) ([]*chat.PresenceProcess, error) {
	l := sortedValues(t.r().procs, func(p *chat.PresenceProcess) bool { return !p.ExpiresAt.After(now) },
		func(a, b *chat.PresenceProcess) int {
			return cmp.Or(a.ExpiresAt.Compare(b.ExpiresAt.Time), cmp.Compare(a.ProcessID, b.ProcessID))
		})
	return copies(first(l, limit), cloneProcess), nil
}

func (t *tx) DeletePresenceProcess(_ context.Context, processID string) ([]string, error) {
	del(t, t.r().procs, processID)
	var out []string
	for k := range t.r().streams {
		if k[0] == processID {
			out = append(out, k[1])
			del(t, t.r().streams, k)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (t *tx) AddPresenceStream(_ context.Context, processID, userID string) error {
	put(t, t.r().streams, pair{processID, userID}, true)
	return nil
}

func (t *tx) RemovePresenceStream(_ context.Context, processID, userID string) error {
	del(t, t.r().streams, pair{processID, userID})
	return nil
}

func (t *tx) LivePresence(_ context.Context, userIDs []string, now time.Time) ([]string, error) {
	live := map[string]bool{}
	for k := range t.r().streams {
		if p, ok := t.r().procs[k[0]]; ok && p.ExpiresAt.After(now) {
			live[k[1]] = true
		}
	}
	var out []string
	for _, u := range userIDs {
		if live[u] && !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (t *tx) LockPresence(_ context.Context, userID string) (*chat.PresenceState, error) {
	if u, ok := t.r().users[userID]; ok {
		return t.presenceOf(u), nil
	}
	return nil, notFound("user", userID)
}

func (t *tx) presenceOf(u *chat.User) *chat.PresenceState {
	s := &chat.PresenceState{UserID: u.UserID, Online: u.Online, LastActiveAt: ntp(u.LastActiveAt)}
	if at, ok := t.r().offlineSince[u.UserID]; ok {
		s.OfflineSince = &at
	}
	return s
}

func (t *tx) SetPresence(_ context.Context, s *chat.PresenceState) error {
	err := change(t, t.r().users, s.UserID, "user", func(u *chat.User) { u.Online, u.LastActiveAt = s.Online, ntp(s.LastActiveAt) })
	if err != nil {
		return err
	} else if s.OfflineSince != nil {
		put(t, t.r().offlineSince, s.UserID, nt(*s.OfflineSince))
	} else {
		del(t, t.r().offlineSince, s.UserID)
	}
	return nil
}

func (t *tx) LapsedPresence(_ context.Context, cutoff time.Time, limit int) ([]*chat.PresenceState, error) {
	var out []*chat.PresenceState
	for id, at := range t.r().offlineSince {
		if u, ok := t.r().users[id]; ok && u.Online && !at.After(cutoff) {
			out = append(out, t.presenceOf(u))
		}
	}
	slices.SortFunc(out, func(a, b *chat.PresenceState) int {
		return cmp.Or(a.OfflineSince.Compare(b.OfflineSince.Time), cmp.Compare(a.UserID, b.UserID))
	})
	return first(out, limit), nil
}

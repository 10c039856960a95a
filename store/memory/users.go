package memory

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
)

func (t *tx) insertUser(u *chat.User) {
	setKey(t, t.d.users, u.UserID, u)
	sortedInsert(t, &t.d.userOrder, u.UserID, strings.Compare)
}

func (t *tx) CreateUser(_ context.Context, u *chat.User) error {
	if err := t.writable(); err != nil {
		return err
	}
	if _, ok := t.d.users[u.UserID]; ok {
		return conflict("user %q already exists", u.UserID)
	}
	su, err := normUser(u)
	if err != nil {
		return err
	}
	t.insertUser(su)
	return nil
}

func (t *tx) EnsureUsers(_ context.Context, ids []string, now time.Time) ([]*chat.User, error) {
	if err := t.writable(); err != nil {
		return nil, err
	}
	at := chat.NewTime(now)
	out := make([]*chat.User, 0, len(ids))
	for _, id := range ids {
		u, ok := t.d.users[id]
		if !ok {
			u = &chat.User{UserID: id, DisplayName: id, CreatedAt: at, UpdatedAt: at}
			t.insertUser(u)
		}
		out = append(out, cpUser(u))
	}
	return out, nil
}

func (t *tx) GetUser(_ context.Context, userID string) (*chat.User, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	u, ok := t.d.users[userID]
	if !ok {
		return nil, notFound("user", userID)
	}
	return cpUser(u), nil
}

func (t *tx) GetUsers(_ context.Context, ids []string) ([]*chat.User, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	out := make([]*chat.User, 0, len(ids))
	for _, id := range ids {
		if u, ok := t.d.users[id]; ok {
			out = append(out, cpUser(u))
		}
	}
	return out, nil
}

func (t *tx) UpdateUser(_ context.Context, u *chat.User) error {
	if err := t.writable(); err != nil {
		return err
	}
	p, ok := t.d.users[u.UserID]
	if !ok {
		return notFound("user", u.UserID)
	}
	in, err := normUser(u)
	if err != nil {
		return err
	}
	v := *p
	v.DisplayName = in.DisplayName
	v.Roles = in.Roles
	v.Metadata = in.Metadata
	v.FlagCount = in.FlagCount
	v.Hashflag = in.Hashflag
	v.IsGlobalBan = in.IsGlobalBan
	v.TokensRevokedAt = in.TokensRevokedAt
	v.UpdatedAt = in.UpdatedAt
	replace(t, p, v)
	return nil
}

func (t *tx) QueryUsers(_ context.Context, f chat.UserFilter) ([]*chat.User, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	var low, high func(string) int
	if f.After != nil {
		cur := f.After.UserID
		low = func(id string) int { return strings.Compare(id, cur) }
	}
	if f.Before != nil {
		cur := f.Before.UserID
		high = func(id string) int { return strings.Compare(id, cur) }
	}
	lo, hi := window(t.d.userOrder, low, high)
	pg := page{limit: f.Limit}
	var out []*chat.User
	walk(t.d.userOrder, lo, hi, f.Before != nil, func(id string) bool {
		u := t.d.users[id]
		if f.Flagged && u.FlagCount <= 0 {
			return true
		}
		if f.Search != "" && !chat.MatchUser(f.Search, u) {
			return true
		}
		keep, full := pg.take()
		if keep {
			out = append(out, cpUser(u))
		}
		return !full
	})
	return out, nil
}

// ---- roles ----

func (t *tx) PutRole(_ context.Context, r *chat.Role) error {
	if err := t.writable(); err != nil {
		return err
	}
	v := normRole(r)
	if old, ok := t.d.roles[v.RoleID]; ok {
		v.CreatedAt = old.CreatedAt
	}
	setKey(t, t.d.roles, v.RoleID, v)
	return nil
}

func (t *tx) GetRoles(_ context.Context, ids []string) ([]*chat.Role, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	out := make([]*chat.Role, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if r, ok := t.d.roles[id]; ok && !seen[id] {
			seen[id] = true
			out = append(out, cpRole(r))
		}
	}
	return out, nil
}

func (t *tx) ListRoles(_ context.Context, filter string) ([]*chat.Role, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	lf := strings.ToLower(filter)
	var out []*chat.Role
	for id, r := range t.d.roles {
		if filter == "" || strings.Contains(strings.ToLower(id), lf) {
			out = append(out, cpRole(r))
		}
	}
	slices.SortFunc(out, func(a, b *chat.Role) int { return cmp.Compare(a.RoleID, b.RoleID) })
	return out, nil
}

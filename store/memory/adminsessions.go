package memory

import (
	"context"
	"slices"
	"time"

	chat "github.com/chatengine/chat"
)

// ---- admin panel passwords and sessions ----

// GetAdmin implements chat.AdminStore.
func (t *tx) GetAdmin(_ context.Context, name string) (*chat.Admin, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	a, ok := t.d.admins[name]
	if !ok {
		return nil, notFound("admin", name)
	}
	return cpAdmin(a), nil
}

// SetAdminPassword implements chat.AdminStore.
func (t *tx) SetAdminPassword(_ context.Context, name string, hash []byte) error {
	if err := t.writable(); err != nil {
		return err
	}
	p, ok := t.d.admins[name]
	if !ok {
		return notFound("admin", name)
	}
	v := *p
	v.PasswordHash = nil
	if len(hash) > 0 {
		v.PasswordHash = slices.Clone(hash)
	}
	replace(t, p, v)
	return nil
}

func cpSession(s *chat.AdminSession) *chat.AdminSession {
	out := *s
	out.IDHash = slices.Clone(s.IDHash)
	return &out
}

// CreateAdminSession implements chat.AdminSessionStore.
func (t *tx) CreateAdminSession(_ context.Context, s *chat.AdminSession) error {
	if err := t.writable(); err != nil {
		return err
	}
	k := string(s.IDHash)
	if _, ok := t.d.adminSessions[k]; ok {
		return conflict("admin session already exists")
	}
	v := cpSession(s)
	v.CreatedAt = nt(s.CreatedAt)
	v.LastSeenAt = nt(s.LastSeenAt)
	setKey(t, t.d.adminSessions, k, v)
	return nil
}

// GetAdminSession implements chat.AdminSessionStore.
func (t *tx) GetAdminSession(_ context.Context, idHash []byte) (*chat.AdminSession, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	s, ok := t.d.adminSessions[string(idHash)]
	if !ok {
		return nil, chat.Errorf(chat.CodeNotFound, "admin session not found")
	}
	return cpSession(s), nil
}

// TouchAdminSession implements chat.AdminSessionStore.
func (t *tx) TouchAdminSession(_ context.Context, idHash []byte, now time.Time) error {
	if err := t.writable(); err != nil {
		return err
	}
	p, ok := t.d.adminSessions[string(idHash)]
	if !ok {
		return chat.Errorf(chat.CodeNotFound, "admin session not found")
	}
	v := *p
	v.LastSeenAt = chat.NewTime(now)
	replace(t, p, v)
	return nil
}

// DeleteAdminSession implements chat.AdminSessionStore.
func (t *tx) DeleteAdminSession(_ context.Context, idHash []byte) error {
	if err := t.writable(); err != nil {
		return err
	}
	delKey(t, t.d.adminSessions, string(idHash))
	return nil
}

// DeleteAdminSessions implements chat.AdminSessionStore.
func (t *tx) DeleteAdminSessions(_ context.Context, name string) (int, error) {
	if err := t.writable(); err != nil {
		return 0, err
	}
	return t.deleteSessions(func(s *chat.AdminSession) bool { return s.Name == name }), nil
}

// DeleteIdleAdminSessions implements chat.AdminSessionStore.
func (t *tx) DeleteIdleAdminSessions(_ context.Context, cutoff time.Time) (int, error) {
	if err := t.writable(); err != nil {
		return 0, err
	}
	c := chat.NewTime(cutoff)
	return t.deleteSessions(func(s *chat.AdminSession) bool { return s.LastSeenAt.Before(c.Time) }), nil
}

func (t *tx) deleteSessions(match func(*chat.AdminSession) bool) int {
	var keys []string
	for k, s := range t.d.adminSessions {
		if match(s) {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		delKey(t, t.d.adminSessions, k)
	}
	return len(keys)
}

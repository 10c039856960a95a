package storetest

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

var adminSessionCases = []tcase{
	{"Password", testAdminPassword},
	{"CreateGetTouch", testAdminSessions},
	{"DeleteByNameAndIdle", testAdminSessionsDelete},
	{"Rollback", testAdminSessionRollback},
}

func (e *env) getAdmin(name string) (*chat.Admin, error) {
	return readErr(e, func(tx chat.Tx) (*chat.Admin, error) { return tx.GetAdmin(e.ctx, name) })
}

func testAdminPassword(t *testing.T, e *env) {
	withPw := admin("ops", "h1", 1)
	withPw.PasswordHash = []byte("$2a$12$bcrypt-hash-of-ops")
	e.update(func(tx chat.Tx) error { return tx.CreateAdmin(e.ctx, withPw) })
	e.update(func(tx chat.Tx) error { return tx.CreateAdmin(e.ctx, admin("plain", "h2", 2)) })

	got, err := e.getAdmin("ops")
	require.NoError(t, err)
	require.Equal(t, cAdmin(t, withPw), cAdmin(t, got), "created with its password hash")
	got, err = e.getAdmin("plain")
	require.NoError(t, err)
	require.Empty(t, got.PasswordHash, "no password")
	byToken := read(e, func(tx chat.Tx) (*chat.Admin, error) { return tx.GetAdminByTokenHash(e.ctx, []byte("h1")) })
	require.Equal(t, withPw.PasswordHash, byToken.PasswordHash, "every read returns the hash")

	e.update(func(tx chat.Tx) error { return tx.SetAdminPassword(e.ctx, "plain", []byte("\x00new\xff")) })
	got, err = e.getAdmin("plain")
	require.NoError(t, err)
	require.Equal(t, []byte("\x00new\xff"), got.PasswordHash)
	require.Equal(t, []byte("h2"), got.TokenHash, "the token is kept")
	list := read(e, func(tx chat.Tx) ([]*chat.Admin, error) { return tx.ListAdmins(e.ctx) })
	require.Len(t, list, 2)
	require.Equal(t, []byte("\x00new\xff"), list[1].PasswordHash)

	e.update(func(tx chat.Tx) error { return tx.SetAdminPassword(e.ctx, "ops", nil) })
	got, err = e.getAdmin("ops")
	require.NoError(t, err)
	require.Empty(t, got.PasswordHash, "a cleared password")

	// Revoking and rotating keep the password.
	e.update(func(tx chat.Tx) error { return tx.RevokeAdmin(e.ctx, "plain", at(5).Time) })
	e.update(func(tx chat.Tx) error { return tx.RotateAdmin(e.ctx, "plain", []byte("h3")) })
	got, err = e.getAdmin("plain")
	require.NoError(t, err)
	require.Equal(t, []byte("\x00new\xff"), got.PasswordHash)

	_, err = e.getAdmin("missing")
	requireNotFound(t, err, "GetAdmin")
	err = e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.SetAdminPassword(e.ctx, "missing", []byte("x")) })
	requireNotFound(t, err, "SetAdminPassword")
}

func session(id, name string, ms int64) *chat.AdminSession {
	return &chat.AdminSession{IDHash: []byte(id), Name: name, CSRFToken: "csrf-" + name + "-" + strconv.FormatInt(ms, 10), CreatedAt: at(ms), LastSeenAt: at(ms)}
}

func (e *env) getSession(id string) (*chat.AdminSession, error) {
	return readErr(e, func(tx chat.Tx) (*chat.AdminSession, error) { return tx.GetAdminSession(e.ctx, []byte(id)) })
}

func cSession(t *testing.T, s *chat.AdminSession) chat.AdminSession {
	t.Helper()
	require.NotNil(t, s)
	v := *s
	v.CreatedAt = ct(t, v.CreatedAt)
	v.LastSeenAt = ct(t, v.LastSeenAt)
	return v
}

func testAdminSessions(t *testing.T, e *env) {
	s1 := session("\x00id-1\xff", "ops", 1)
	e.update(func(tx chat.Tx) error { return tx.CreateAdminSession(e.ctx, s1) })
	err := e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.CreateAdminSession(e.ctx, session("\x00id-1\xff", "other", 2)) })
	requireConflict(t, err, "a taken session id")

	got, err := e.getSession("\x00id-1\xff")
	require.NoError(t, err)
	require.Equal(t, cSession(t, s1), cSession(t, got))
	s1.IDHash[1] = 'X'
	got.IDHash[1] = 'Y'
	again, err := e.getSession("\x00id-1\xff")
	require.NoError(t, err)
	require.Equal(t, []byte("\x00id-1\xff"), again.IDHash, "the store keeps its own copy")

	e.update(func(tx chat.Tx) error { return tx.TouchAdminSession(e.ctx, []byte("\x00id-1\xff"), at(60_000).Time) })
	got, err = e.getSession("\x00id-1\xff")
	require.NoError(t, err)
	require.True(t, at(60_000).Equal(got.LastSeenAt.Time), "touched")
	require.True(t, at(1).Equal(got.CreatedAt.Time), "createdAt kept")
	require.Equal(t, "csrf-ops-1", got.CSRFToken)

	_, err = e.getSession("unknown")
	requireNotFound(t, err, "GetAdminSession")
	err = e.s.Update(e.ctx, func(tx chat.Tx) error { return tx.TouchAdminSession(e.ctx, []byte("unknown"), base) })
	requireNotFound(t, err, "TouchAdminSession")

	e.update(func(tx chat.Tx) error { return tx.DeleteAdminSession(e.ctx, []byte("\x00id-1\xff")) })
	_, err = e.getSession("\x00id-1\xff")
	requireNotFound(t, err, "a deleted session")
	e.update(func(tx chat.Tx) error { return tx.DeleteAdminSession(e.ctx, []byte("\x00id-1\xff")) })
}

func testAdminSessionsDelete(t *testing.T, e *env) {
	e.update(func(tx chat.Tx) error {
		for _, s := range []*chat.AdminSession{
			session("a1", "alice", 1000), session("a2", "alice", 5000),
			session("b1", "bob", 2000), session("b2", "bob", 9000),
		} {
			if err := tx.CreateAdminSession(e.ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	var n int
	e.update(func(tx chat.Tx) error {
		var err error
		n, err = tx.DeleteAdminSessions(e.ctx, "alice")
		return err
	})
	require.Equal(t, 2, n)
	for _, id := range []string{"a1", "a2"} {
		_, err := e.getSession(id)
		requireNotFound(t, err, "alice's sessions are gone")
	}
	_, err := e.getSession("b1")
	require.NoError(t, err, "bob's stay")

	e.update(func(tx chat.Tx) error {
		var err error
		n, err = tx.DeleteIdleAdminSessions(e.ctx, at(9000).Time)
		return err
	})
	require.Equal(t, 1, n, "only the session last seen before the cutoff")
	_, err = e.getSession("b1")
	requireNotFound(t, err, "b1 was idle")
	_, err = e.getSession("b2")
	require.NoError(t, err, "b2 was seen at the cutoff")
}

func testAdminSessionRollback(t *testing.T, e *env) {
	e.update(func(tx chat.Tx) error { return tx.CreateAdminSession(e.ctx, session("keep", "ops", 1)) })
	err := e.s.Update(e.ctx, func(tx chat.Tx) error {
		if err := tx.CreateAdminSession(e.ctx, session("gone", "ops", 2)); err != nil {
			return err
		}
		if _, err := tx.DeleteAdminSessions(e.ctx, "ops"); err != nil {
			return err
		}
		return chat.Errorf(chat.CodeBadRequest, "roll back")
	})
	require.Error(t, err)
	_, err = e.getSession("keep")
	require.NoError(t, err, "a rolled-back delete deletes nothing")
	_, err = e.getSession("gone")
	requireNotFound(t, err, "a rolled-back insert inserts nothing")
}

package chat_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

func TestAdminSignIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx

	_, _, _, err := e.svc.SignInAdmin(ctx, "root", "whatever-password")
	require.Equal(t, chat.CodeUnauthorized, chat.ErrorCode(err), "no password set yet")

	for _, bad := range []string{"short", strings.Repeat("x", 73), "tab\tin the middle"} {
		err := e.svc.SetAdminPassword(ctx, "root", bad)
		require.Equal(t, chat.CodeBadRequest, chat.ErrorCode(err), "%q", bad)
		require.Contains(t, err.Error(), "password")
	}
	require.Equal(t, chat.CodeNotFound, chat.ErrorCode(e.svc.SetAdminPassword(ctx, "nobody", "long enough password")))
	require.NoError(t, e.svc.SetAdminPassword(ctx, "root", "correct horse battery"))

	_, _, _, err = e.svc.SignInAdmin(ctx, "root", "wrong horse battery")
	require.Equal(t, chat.CodeUnauthorized, chat.ErrorCode(err))
	_, _, _, err2 := e.svc.SignInAdmin(ctx, "nobody", "correct horse battery")
	require.Equal(t, err.Error(), err2.Error(), "an unknown name and a wrong password read the same")

	a, sess, id, err := e.svc.SignInAdmin(ctx, "root", "correct horse battery")
	require.NoError(t, err)
	require.Equal(t, "root", a.Name)
	require.NotEmpty(t, id)
	require.NotEmpty(t, sess.CSRFToken)
	require.True(t, sess.CheckCSRF(sess.CSRFToken))
	require.False(t, sess.CheckCSRF(""))
	require.False(t, sess.CheckCSRF(sess.CSRFToken+"x"))

	got, gotSess, err := e.svc.AdminSessionFor(ctx, id, 0)
	require.NoError(t, err)
	require.Equal(t, "root", got.Name)
	require.Equal(t, sess.CSRFToken, gotSess.CSRFToken)
	_, _, err = e.svc.AdminSessionFor(ctx, id+"x", 0)
	require.Equal(t, chat.CodeUnauthorized, chat.ErrorCode(err))

	// Idle expiry: a request within the idle time keeps the session alive.
	e.clk.Add(20 * time.Minute)
	_, _, err = e.svc.AdminSessionFor(ctx, id, 30*time.Minute)
	require.NoError(t, err)
	e.clk.Add(20 * time.Minute)
	_, _, err = e.svc.AdminSessionFor(ctx, id, 30*time.Minute)
	require.NoError(t, err, "seen 20 minutes ago")
	e.clk.Add(31 * time.Minute)
	_, _, err = e.svc.AdminSessionFor(ctx, id, 30*time.Minute)
	require.Equal(t, chat.CodeUnauthorized, chat.ErrorCode(err), "idle for 31 minutes")

	// Checking a session does not extend it.
	_, _, id, err = e.svc.SignInAdmin(ctx, "root", "correct horse battery")
	require.NoError(t, err)
	e.clk.Add(20 * time.Minute)
	a, sess, err = e.svc.CheckAdminSession(ctx, id, 30*time.Minute)
	require.NoError(t, err)
	require.Equal(t, "root", a.Name)
	require.NotEmpty(t, sess.CSRFToken)
	e.clk.Add(11 * time.Minute)
	_, _, err = e.svc.CheckAdminSession(ctx, id, 30*time.Minute)
	require.Equal(t, chat.CodeUnauthorized, chat.ErrorCode(err), "31 minutes after sign-in, checked but not used since")
	_, _, err = e.svc.CheckAdminSession(ctx, id+"x", 0)
	require.Equal(t, chat.CodeUnauthorized, chat.ErrorCode(err))

	// Signing out ends the session.
	_, _, id, err = e.svc.SignInAdmin(ctx, "root", "correct horse battery")
	require.NoError(t, err)
	require.NoError(t, e.svc.EndAdminSession(ctx, id))
	_, _, err = e.svc.AdminSessionFor(ctx, id, 0)
	require.Equal(t, chat.CodeUnauthorized, chat.ErrorCode(err))

	// A password change ends every session of the admin.
	_, _, id, err = e.svc.SignInAdmin(ctx, "root", "correct horse battery")
	require.NoError(t, err)
	require.NoError(t, e.svc.SetAdminPassword(ctx, "root", "another good password"))
	_, _, err = e.svc.AdminSessionFor(ctx, id, 0)
	require.Equal(t, chat.CodeUnauthorized, chat.ErrorCode(err))

	// Revoking ends the sessions and refuses the sign-in.
	_, _, id, err = e.svc.SignInAdmin(ctx, "root", "another good password")
	require.NoError(t, err)
	require.NoError(t, e.svc.RevokeAdmin(ctx, "", "root"))
	_, _, err = e.svc.AdminSessionFor(ctx, id, 0)
	require.Equal(t, chat.CodeUnauthorized, chat.ErrorCode(err))
	_, _, _, err = e.svc.SignInAdmin(ctx, "root", "another good password")
	require.Equal(t, chat.CodeUnauthorized, chat.ErrorCode(err))
	require.Contains(t, err.Error(), "revoked")
}

func TestCreateAdminWithPassword(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, _, err := e.svc.CreateAdminWithPassword(e.ctx, "", "second", "", "short")
	require.Equal(t, chat.CodeBadRequest, chat.ErrorCode(err))
	as, err := e.svc.ListAdmins(e.ctx)
	require.NoError(t, err)
	require.Len(t, as, 1, "a refused password creates nothing")

	a, tok, err := e.svc.CreateAdminWithPassword(e.ctx, "", "second", "", "a good long password")
	require.NoError(t, err)
	require.NotEmpty(t, tok)
	_, err = e.svc.Authenticate(e.ctx, tok)
	require.NoError(t, err)
	_, _, _, err = e.svc.SignInAdmin(e.ctx, a.Name, "a good long password")
	require.NoError(t, err)
	n, err := e.svc.PruneAdminSessions(e.ctx, time.Minute)
	require.NoError(t, err)
	require.Equal(t, 0, n, "a fresh session is not idle")
	e.clk.Add(2 * time.Minute)
	n, err = e.svc.PruneAdminSessions(e.ctx, time.Minute)
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

func TestCheckText(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	require.NoError(t, e.svc.CheckText(e.ctx, "anything goes https://example.org"))
	_, err := e.svc.AddRules(e.ctx, e.admin, chat.Blacklist, []string{"darn"}, true)
	require.NoError(t, err)
	_, err = e.svc.AddRules(e.ctx, e.admin, chat.Whitelist, []string{"example.com"}, false)
	require.NoError(t, err)
	err = e.svc.CheckText(e.ctx, "oh DARN it")
	require.Equal(t, chat.CodeBlacklisted, chat.ErrorCode(err))
	require.Contains(t, err.Error(), `"darn"`)
	require.NoError(t, e.svc.CheckText(e.ctx, "darned is another word"), "exact word only")
	err = e.svc.CheckText(e.ctx, "see https://evil.io/x")
	require.Equal(t, chat.CodeLinkNotAllowed, chat.ErrorCode(err))
	require.NoError(t, e.svc.CheckText(e.ctx, "see https://example.com/x"))
}

package chat_test

import (
	"crypto/rand"
	"crypto/rsa"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
)

var testSecret = []byte("a user-token secret for the tests")

func newTokenEnv(t *testing.T) *env {
	t.Helper()
	st := memory.New()
	e := newEnvStore(t, st)
	svc, err := chat.New(e.ctx, st, chat.Config{Now: e.clk.Now, UserTokenSecret: testSecret})
	require.NoError(t, err)
	e.svc = svc
	return e
}

func sign(t *testing.T, m jwt.SigningMethod, key any, c jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(m, c).SignedString(key)
	require.NoError(t, err)
	return s
}

func requireTokenCode(t *testing.T, err error, code chat.Code) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, chat.ErrorCode(err), "error: %v", err)
}

// A minted token authenticates its user, who is created on first
// reference; the claims are user_id, iat and exp.
func TestUserTokenMintAndAuthenticate(t *testing.T) {
	e := newTokenEnv(t)
	tok, err := e.svc.IssueUserToken(e.ctx, "", "alice", time.Hour)
	require.NoError(t, err)
	require.Equal(t, "alice", tok.UserID)
	require.NotNil(t, tok.ExpiresAt)
	require.True(t, chat.IsUserToken(tok.Token))
	u, err := e.svc.AuthenticateUser(e.ctx, tok.Token)
	require.NoError(t, err)
	require.Equal(t, "alice", u.UserID)

	var c chat.UserClaims
	_, err = jwt.ParseWithClaims(tok.Token, &c, func(*jwt.Token) (any, error) { return testSecret, nil },
		jwt.WithTimeFunc(e.clk.Now))
	require.NoError(t, err)
	require.Equal(t, "alice", c.UserID)
	require.Equal(t, e.clk.Now().Truncate(time.Second).Unix(), c.IssuedAt.Unix())
	require.Equal(t, e.clk.Now().Truncate(time.Second).Add(time.Hour).Unix(), c.ExpiresAt.Unix())

	// A negative ttl: no expiry; zero: the configured default (24 h).
	none, err := e.svc.IssueUserToken(e.ctx, "", "alice", -1)
	require.NoError(t, err)
	require.Nil(t, none.ExpiresAt)
	def, err := e.svc.IssueUserToken(e.ctx, "", "alice", 0)
	require.NoError(t, err)
	require.Equal(t, e.clk.Now().Truncate(time.Second).Add(chat.DefaultUserTokenTTL).Unix(), def.ExpiresAt.Unix())

	// A host signing its own token with the same secret.
	own, err := jwt.NewWithClaims(jwt.SigningMethodHS256, chat.UserClaims{UserID: "bob",
		RegisteredClaims: jwt.RegisteredClaims{IssuedAt: jwt.NewNumericDate(e.clk.Now())}}).SignedString(testSecret)
	require.NoError(t, err)
	u, err = e.svc.AuthenticateUser(e.ctx, own)
	require.NoError(t, err)
	require.Equal(t, "bob", u.UserID)
	_, err = e.svc.GetUser(e.ctx, e.admin, "bob")
	requireTokenCode(t, err, chat.CodeNotFound)
	name := "Bob"
	_, err = e.svc.UpdateUser(e.ctx, "bob", chat.UpdateUserInput{UserID: "bob", DisplayName: &name})
	require.NoError(t, err, "a user acting first creates itself")
	got, err := e.svc.GetUser(e.ctx, e.admin, "bob")
	require.NoError(t, err)
	require.Equal(t, "Bob", got.Users[0].DisplayName)
}

// sub is accepted instead of user_id; neither is refused.
func TestUserTokenClaims(t *testing.T) {
	e := newTokenEnv(t)
	u, err := e.svc.AuthenticateUser(e.ctx, sign(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "carol"}))
	require.NoError(t, err)
	require.Equal(t, "carol", u.UserID)
	u, err = e.svc.AuthenticateUser(e.ctx, sign(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"user_id": "dave", "sub": "x"}))
	require.NoError(t, err)
	require.Equal(t, "dave", u.UserID, "user_id wins over sub")
	_, err = e.svc.AuthenticateUser(e.ctx, sign(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"name": "nobody"}))
	requireTokenCode(t, err, chat.CodeUnauthorized)
	_, err = e.svc.AuthenticateUser(e.ctx, sign(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"user_id": "bad\x00id"}))
	requireTokenCode(t, err, chat.CodeUnauthorized)
}

// Only HS256 with the Service's secret is accepted: other HMAC sizes,
// "none", an RSA signature and another secret are refused.
func TestUserTokenAlgorithms(t *testing.T) {
	e := newTokenEnv(t)
	claims := jwt.MapClaims{"user_id": "alice"}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, claims).SignedString(jwt.UnsafeAllowNoneSignatureType)
	require.NoError(t, err)
	for name, tok := range map[string]string{
		"HS384":        sign(t, jwt.SigningMethodHS384, testSecret, claims),
		"HS512":        sign(t, jwt.SigningMethodHS512, testSecret, claims),
		"RS256":        sign(t, jwt.SigningMethodRS256, key, claims),
		"none":         none,
		"other secret": sign(t, jwt.SigningMethodHS256, []byte("not the secret"), claims),
		"garbage":      "not.a.jwt",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := e.svc.AuthenticateUser(e.ctx, tok)
			requireTokenCode(t, err, chat.CodeUnauthorized)
		})
	}
}

// exp is checked with UserTokenLeeway of skew; an iat in the future
// beyond the leeway is refused.
func TestUserTokenExpiry(t *testing.T) {
	e := newTokenEnv(t)
	now := e.clk.Now()
	within := sign(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"user_id": "a", "exp": now.Add(-chat.UserTokenLeeway / 2).Unix()})
	_, err := e.svc.AuthenticateUser(e.ctx, within)
	require.NoError(t, err, "expired less than the leeway ago")
	past := sign(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"user_id": "a", "exp": now.Add(-2 * chat.UserTokenLeeway).Unix()})
	_, err = e.svc.AuthenticateUser(e.ctx, past)
	requireTokenCode(t, err, chat.CodeUnauthorized)
	future := sign(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"user_id": "a", "iat": now.Add(time.Hour).Unix()})
	_, err = e.svc.AuthenticateUser(e.ctx, future)
	requireTokenCode(t, err, chat.CodeUnauthorized)

	tok, err := e.svc.IssueUserToken(e.ctx, "", "a", time.Minute)
	require.NoError(t, err)
	e.clk.Add(time.Minute + chat.UserTokenLeeway + time.Second)
	_, err = e.svc.AuthenticateUser(e.ctx, tok.Token)
	requireTokenCode(t, err, chat.CodeUnauthorized)
}

// Revocation refuses tokens issued before it and in its second, and
// tokens without iat; tokens minted afterwards work, also in the same
// second; users may not revoke.
func TestUserTokenRevocation(t *testing.T) {
	e := newTokenEnv(t)
	now := e.clk.Now()
	old := sign(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"user_id": "a", "iat": now.Add(-time.Hour).Unix()})
	same := sign(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"user_id": "a", "iat": now.Unix()})
	noIat := sign(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"user_id": "a"})
	next := sign(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"user_id": "a", "iat": now.Add(time.Second).Unix()})
	for _, tok := range []string{old, same, noIat, next} {
		_, err := e.svc.AuthenticateUser(e.ctx, tok)
		require.NoError(t, err, "before the revocation")
	}
	requireTokenCode(t, e.svc.RevokeUserTokens(e.ctx, "a", "a"), chat.CodePermissionDenied)
	_, err := e.svc.AuthenticateUser(e.ctx, old)
	require.NoError(t, err, "a refused revocation changes nothing")

	require.NoError(t, e.svc.RevokeUserTokens(e.ctx, e.admin, "a"))
	for _, tok := range []string{old, same, noIat} {
		_, err := e.svc.AuthenticateUser(e.ctx, tok)
		requireTokenCode(t, err, chat.CodeUnauthorized)
	}
	_, err = e.svc.AuthenticateUser(e.ctx, next)
	require.NoError(t, err, "issued in the second after the revocation")

	fresh, err := e.svc.IssueUserToken(e.ctx, "", "a", time.Hour)
	require.NoError(t, err, "minted in the second of the revocation")
	_, err = e.svc.AuthenticateUser(e.ctx, fresh.Token)
	require.NoError(t, err)
	_, err = e.svc.IssueUserToken(e.ctx, "a", "a", time.Hour)
	requireTokenCode(t, err, chat.CodePermissionDenied)
	byAdmin, err := e.svc.IssueUserToken(e.ctx, e.admin, "a", time.Hour)
	require.NoError(t, err, "an admin may mint for others")
	_, err = e.svc.AuthenticateUser(e.ctx, byAdmin.Token)
	require.NoError(t, err)
}

// A globally banned user's tokens are refused with CodeGlobalBanned and
// none are minted for it.
func TestUserTokenGlobalBan(t *testing.T) {
	e := newTokenEnv(t)
	tok, err := e.svc.IssueUserToken(e.ctx, "", "a", time.Hour)
	require.NoError(t, err)
	require.NoError(t, e.svc.GlobalBan(e.ctx, e.admin, "a", false))
	_, err = e.svc.AuthenticateUser(e.ctx, tok.Token)
	requireTokenCode(t, err, chat.CodeGlobalBanned)
	_, err = e.svc.IssueUserToken(e.ctx, "", "a", time.Hour)
	requireTokenCode(t, err, chat.CodeGlobalBanned)
}

// Without a configured secret, the generated one is kept in the store:
// a second Service over the same store accepts the first one's tokens, a
// Service over another store does not.
func TestUserTokenGeneratedSecretShared(t *testing.T) {
	st := memory.New()
	a, err := chat.New(t.Context(), st, chat.Config{})
	require.NoError(t, err)
	b, err := chat.New(t.Context(), st, chat.Config{})
	require.NoError(t, err)
	other, err := chat.New(t.Context(), memory.New(), chat.Config{})
	require.NoError(t, err)
	tok, err := a.IssueUserToken(t.Context(), "", "alice", time.Hour)
	require.NoError(t, err)
	_, err = b.AuthenticateUser(t.Context(), tok.Token)
	require.NoError(t, err)
	_, err = other.AuthenticateUser(t.Context(), tok.Token)
	requireTokenCode(t, err, chat.CodeUnauthorized)
}

// BenchmarkAuthenticate compares the two kinds of authentication on the
// memory store, where no disk hides the difference: an admin token (a
// SHA-256 and a lookup) and a user token (an HS256 JWT parse and the
// user's lookup for its revocation time and ban).
func BenchmarkAuthenticate(b *testing.B) {
	ctx := b.Context()
	svc, err := chat.New(ctx, memory.New(), chat.Config{UserTokenSecret: testSecret})
	if err != nil {
		b.Fatal(err)
	}
	_, adminToken, err := svc.CreateAdmin(ctx, "", "root", "admin")
	if err != nil {
		b.Fatal(err)
	}
	ut, err := svc.IssueUserToken(ctx, "", "alice", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("admin", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := svc.Authenticate(ctx, adminToken); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("user", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := svc.AuthenticateUser(ctx, ut.Token); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A user token's user is remembered between requests, and a ban, an unban,
// an update or an erasure through the Service applies to the next request.
func TestUserTokenSeesChangesAtOnce(t *testing.T) {
	e := newTokenEnv(t)
	tok, err := e.svc.IssueUserToken(e.ctx, "", "a", time.Hour)
	require.NoError(t, err)
	u, err := e.svc.AuthenticateUser(e.ctx, tok.Token)
	require.NoError(t, err)
	require.Equal(t, "a", u.DisplayName, "not stored yet")

	require.NoError(t, e.svc.GlobalBan(e.ctx, e.admin, "a", false))
	_, err = e.svc.AuthenticateUser(e.ctx, tok.Token)
	requireTokenCode(t, err, chat.CodeGlobalBanned)
	require.NoError(t, e.svc.GlobalUnban(e.ctx, e.admin, "a"))
	u, err = e.svc.AuthenticateUser(e.ctx, tok.Token)
	require.NoError(t, err)
	u.DisplayName = "changed by the caller"

	name := "Alice"
	_, err = e.svc.UpdateUser(e.ctx, e.admin, chat.UpdateUserInput{UserID: "a", DisplayName: &name})
	require.NoError(t, err)
	u, err = e.svc.AuthenticateUser(e.ctx, tok.Token)
	require.NoError(t, err)
	require.Equal(t, "Alice", u.DisplayName)
	u.DisplayName = "changed by the caller"
	u, err = e.svc.AuthenticateUser(e.ctx, tok.Token)
	require.NoError(t, err)
	require.Equal(t, "Alice", u.DisplayName, "a caller's change reached the remembered user")

	_, err = e.svc.EraseUser(e.ctx, e.admin, "a")
	require.NoError(t, err)
	_, err = e.svc.AuthenticateUser(e.ctx, tok.Token)
	requireTokenCode(t, err, chat.CodeUnauthorized)
}

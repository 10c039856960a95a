package httpapi_test

import (
	"context"
	"database/sql"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/internal/pgtest"
	"github.com/chatengine/chat/store/postgres"
	"github.com/chatengine/chat/stream"
)

// postgresStore opens a store in a fresh schema of the test database
// (skipped without one, see pgtest) and drops the schema afterwards.
func postgresStore(t *testing.T) chat.Store {
	dsn := pgtest.URL(t)
	schema := pgtest.SchemaName()
	st, err := postgres.Open(context.Background(), dsn, &postgres.Options{Schema: schema, MaxOpenConns: 4})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = st.Close()
		db, err := sql.Open("postgres", dsn)
		if err == nil {
			_, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE")
			_ = db.Close()
		}
	})
	return st
}

// TestAuthorizationMatrixPostgres runs the matrix's refusals on Postgres,
// where a fresh fixture per call is too slow: refused calls leave the
// store unchanged (each call checks it), so every refused call of every
// route runs on one fixture. The successes are store-independent and
// covered on the memory and SQLite stores (and the admin's by the
// Postgres API suite).
func TestAuthorizationMatrixPostgres(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the Postgres run is skipped in -short mode")
	}
	checkMatrixCoverage(t)
	m := newMatrixEnv(t, postgresStore)
	before := m.snapshot()
	refused := 0
	for _, row := range matrixRows {
		for _, caller := range matrixCallers {
			want := row.who.want(caller)
			if want == 0 {
				continue
			}
			t.Run(matrixRowName(row)+"/"+caller, func(t *testing.T) {
				m.t = t
				r := m.request(row, caller)
				requireError(t, r, want, "")
				require.Equal(t, before, m.snapshot(), "a refused call changed the store")
				refused++
			})
		}
	}
	require.Greater(t, refused, 300)
}

// TestEventsAccessPostgres: two processes on one Postgres schema. A
// revocation made on one closes the streams of that access on both
// (WebSocket 4001, SSE stream.didClose), woken by NOTIFY (the hubs poll
// once an hour), and a ticket issued on one before the revocation opens
// nothing on the other; other streams go on.
func TestEventsAccessPostgres(t *testing.T) {
	t.Parallel()
	dsn := pgtest.URL(t)
	schema := pgtest.SchemaName()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t.Cleanup(func() {
		db, err := sql.Open("postgres", dsn)
		if err == nil {
			_, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE")
			_ = db.Close()
		}
	})
	open := func() chat.Store {
		st, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: schema, MaxOpenConns: 4})
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	clk := &testClock{t: time.Now()}
	cfg := stream.Config{PollInterval: time.Hour}
	a := startProcess(t, open(), clk, cfg)
	b := startProcess(t, open(), clk, cfg)
	ops, opsToken, err := a.svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	_, tok2, err := a.svc.CreateAdmin(ctx, "", "ops2", "")
	require.NoError(t, err)
	_, tok3, err := a.svc.CreateAdmin(ctx, "", "ops3", "")
	require.NoError(t, err)
	_, err = a.svc.CreateChannel(ctx, ops.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice", "bob"}})
	require.NoError(t, err)

	alice := a.userToken(t, "alice", time.Hour)
	onB := b.wsDial(t, ctx, alice, "")
	onA := a.sseOpen(t, ctx, alice, "")
	spare := a.ticket(t, alice)
	revokedAdmin := b.wsDial(t, ctx, tok2, "")
	rotatedAdmin := b.wsDial(t, ctx, "", "?ticket="+a.ticket(t, tok3))
	bob := b.wsDial(t, ctx, b.userToken(t, "bob", time.Hour), "")

	r, err := http.NewRequest(http.MethodPost, a.srv.URL+"/users/alice/tokens/revoke", nil)
	require.NoError(t, err)
	r.Header.Set("Authorization", "Bearer "+opsToken)
	res, err := http.DefaultClient.Do(r)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	code, reason := wsClosed(t, ctx, onB)
	require.Equal(t, websocket.StatusCode(4001), code)
	require.Equal(t, "token revoked", reason)
	require.Equal(t, "revoked", onA.closed(t))
	b.wsRefused(t, ctx, "", "?ticket="+spare, http.StatusUnauthorized)

	require.NoError(t, a.svc.RevokeAdmin(ctx, "", "ops2"))
	_, err = a.svc.RotateAdmin(ctx, "", "ops3")
	require.NoError(t, err)
	for _, c := range []*websocket.Conn{revokedAdmin, rotatedAdmin} {
		code, reason := wsClosed(t, ctx, c)
		require.Equal(t, websocket.StatusCode(4001), code)
		require.Equal(t, "admin revoked", reason)
	}

	a.post(t, "bob goes on")
	require.Equal(t, "bob goes on", wsText(t, ctx, bob))
}

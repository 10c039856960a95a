package storetest

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

var ticketCases = []tcase{
	{"PutTake", testTicketPutTake},
	{"TakeOnce", testTicketTakeOnce},
	{"Rollback", testTicketRollback},
	{"Expiry", testTicketExpiry},
	{"Access", testTicketAccess},
}

var errRollback = errors.New("roll back")

func (e *env) putTicket(tk *chat.StreamTicket) {
	e.t.Helper()
	e.update(func(tx chat.Tx) error { return tx.PutTicket(e.ctx, tk) })
}

func (e *env) takeTicket(hash string) (*chat.StreamTicket, error) {
	var tk *chat.StreamTicket
	err := e.s.Update(e.ctx, func(tx chat.Tx) (err error) { tk, err = tx.TakeTicket(e.ctx, hash); return })
	return tk, err
}

func testTicketPutTake(t *testing.T, e *env) {
	e.putTicket(&chat.StreamTicket{Hash: "h1", UserID: "alice", ExpiresAt: at(5000)})
	e.putTicket(&chat.StreamTicket{Hash: "h2", UserID: "ops-user", Admin: true, ExpiresAt: at(6000)})
	err := e.s.Update(e.ctx, func(tx chat.Tx) error {
		return tx.PutTicket(e.ctx, &chat.StreamTicket{Hash: "h1", UserID: "mallory", ExpiresAt: at(9000)})
	})
	require.Equal(t, chat.CodeConflict, chat.ErrorCode(err), "a second ticket with a taken hash: %v", err)

	tk, err := e.takeTicket("h1")
	require.NoError(t, err)
	require.Equal(t, &chat.StreamTicket{Hash: "h1", UserID: "alice", ExpiresAt: at(5000)}, tk)
	require.Equal(t, "UTC", tk.ExpiresAt.Location().String())
	_, err = e.takeTicket("h1")
	require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err), "a ticket is taken once: %v", err)
	tk, err = e.takeTicket("h2")
	require.NoError(t, err)
	require.True(t, tk.Admin)
	require.Equal(t, "ops-user", tk.UserID)
	_, err = e.takeTicket("nope")
	require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err))
}

// testTicketTakeOnce: of many transactions taking one ticket at once,
// exactly one gets it.
func testTicketTakeOnce(t *testing.T, e *env) {
	for round := range 5 {
		hash := "race" + string(rune('a'+round))
		e.putTicket(&chat.StreamTicket{Hash: hash, UserID: "alice", ExpiresAt: at(5000)})
		var won, lost atomic.Int64
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := e.takeTicket(hash)
				switch {
				case err == nil:
					won.Add(1)
				case chat.ErrorCode(err) == chat.CodeNotFound:
					lost.Add(1)
				default:
					t.Errorf("take: %v", err)
				}
			}()
		}
		wg.Wait()
		require.Equal(t, int64(1), won.Load())
		require.Equal(t, int64(7), lost.Load())
	}
}

// testTicketRollback: a take in a transaction that rolls back leaves the
// ticket in place.
func testTicketRollback(t *testing.T, e *env) {
	e.putTicket(&chat.StreamTicket{Hash: "h", UserID: "alice", ExpiresAt: at(5000)})
	err := e.s.Update(e.ctx, func(tx chat.Tx) error {
		if _, err := tx.TakeTicket(e.ctx, "h"); err != nil {
			return err
		}
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
	tk, err := e.takeTicket("h")
	require.NoError(t, err)
	require.Equal(t, "alice", tk.UserID)
}

func testTicketExpiry(t *testing.T, e *env) {
	for i, ms := range []int64{1000, 2000, 3000, 4000} {
		e.putTicket(&chat.StreamTicket{Hash: "h" + string(rune('0'+i)), UserID: "alice", ExpiresAt: at(ms)})
	}
	var n int
	e.update(func(tx chat.Tx) (err error) { n, err = tx.DeleteTicketsBefore(e.ctx, at(3500).Time, 2); return })
	require.Equal(t, 2, n, "bounded by the limit")
	e.update(func(tx chat.Tx) (err error) { n, err = tx.DeleteTicketsBefore(e.ctx, at(3500).Time, 2); return })
	require.Equal(t, 1, n, "only the expired ones")
	for _, h := range []string{"h0", "h1", "h2"} {
		_, err := e.takeTicket(h)
		require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err), h)
	}
	tk, err := e.takeTicket("h3")
	require.NoError(t, err)
	require.Equal(t, at(4000).UnixMilli(), tk.ExpiresAt.UnixMilli())
}

// testTicketAccess: a ticket keeps the access it was issued under: an
// admin's account and token hash, a user token's iat and exp (absent
// claims stay nil).
func testTicketAccess(t *testing.T, e *env) {
	iat, exp := at(1000), at(90000)
	admin := &chat.StreamTicket{Hash: "a", UserID: "ops-user", Admin: true, ExpiresAt: at(5000),
		AdminName: "ops", TokenHash: []byte{0, 1, 2, 0xff}}
	user := &chat.StreamTicket{Hash: "u", UserID: "alice", ExpiresAt: at(5000), TokenIssuedAt: &iat, TokenExpiresAt: &exp}
	bare := &chat.StreamTicket{Hash: "b", UserID: "bob", ExpiresAt: at(5000)}
	for _, tk := range []*chat.StreamTicket{admin, user, bare} {
		e.putTicket(tk)
	}
	for _, want := range []*chat.StreamTicket{admin, user, bare} {
		got, err := e.takeTicket(want.Hash)
		require.NoError(t, err)
		require.Equal(t, want.AdminName, got.AdminName)
		require.Equal(t, want.TokenHash, got.TokenHash)
		for _, p := range [][2]*chat.Time{{want.TokenIssuedAt, got.TokenIssuedAt}, {want.TokenExpiresAt, got.TokenExpiresAt}} {
			if p[0] == nil {
				require.Nil(t, p[1], want.Hash)
				continue
			}
			require.NotNil(t, p[1], want.Hash)
			require.Equal(t, p[0].UnixMilli(), p[1].UnixMilli(), want.Hash)
		}
	}
}

package chat_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/stretchr/testify/require"
)

func ticketHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// A stream ticket opens one stream: redeeming it spends it, an expired
// one and one whose access was revoked are refused and spent all the
// same.
func TestRedeemStreamTicket(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.channel("c", "alice")
	issue := func(name string, ttl time.Duration) {
		now := e.svc.Now()
		tk := &chat.StreamTicket{Hash: ticketHash(name), UserID: "alice", ExpiresAt: chat.NewTime(now.Add(ttl)), TokenIssuedAt: &now}
		require.NoError(t, e.svc.SaveStreamTicket(e.ctx, tk))
	}
	spent := func(name string) {
		t.Helper()
		err := e.store.Update(e.ctx, func(tx chat.Tx) error { _, err := tx.TakeTicket(e.ctx, ticketHash(name)); return err })
		require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err), "the ticket is spent")
	}

	issue("good", time.Minute)
	require.Equal(t, chat.CodeConflict, chat.ErrorCode(e.svc.SaveStreamTicket(e.ctx,
		&chat.StreamTicket{Hash: ticketHash("good"), UserID: "mallory", ExpiresAt: chat.NewTime(e.svc.Now().Add(time.Hour))})))
	tk, err := e.svc.RedeemStreamTicket(e.ctx, ticketHash("good"))
	require.NoError(t, err)
	require.Equal(t, "alice", tk.UserID)
	a := tk.Access()
	require.NotNil(t, a)
	require.Equal(t, "alice", a.UserID)
	_, err = e.svc.RedeemStreamTicket(e.ctx, ticketHash("good"))
	require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err), "a ticket opens one stream")
	_, err = e.svc.RedeemStreamTicket(e.ctx, ticketHash("never issued"))
	require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err))

	issue("late", time.Minute)
	e.clk.Add(time.Minute)
	_, err = e.svc.RedeemStreamTicket(e.ctx, ticketHash("late"))
	require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err), "expired")
	spent("late")

	issue("revoked", time.Minute)
	e.clk.Add(time.Second)
	require.NoError(t, e.svc.RevokeUserTokens(e.ctx, e.admin, "alice"))
	_, err = e.svc.RedeemStreamTicket(e.ctx, ticketHash("revoked"))
	require.Equal(t, chat.CodeUnauthorized, chat.ErrorCode(err), "the token it was issued under is revoked")
	spent("revoked")

	// The retention job's delete: only the expired ones.
	issue("old", time.Second)
	issue("fresh", time.Hour)
	e.clk.Add(2 * time.Second)
	n, err := e.svc.DeleteStreamTicketsBefore(e.ctx, e.svc.Now().Time, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	spent("old")
	_, err = e.svc.RedeemStreamTicket(e.ctx, ticketHash("fresh"))
	require.NoError(t, err)
}

// OpenStream reads where a stream starts: the log's position, whether a
// resume is possible, an end user's blocks and channels; a globally
// banned user and a revoked access get no stream.
func TestOpenStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.channel("c", "alice", "bob")
	e.channel("d", "bob")
	e.channel("e", "alice")
	_, err := e.svc.BlockUser(e.ctx, "alice", "alice", "bob")
	require.NoError(t, err)
	last, err := e.svc.LastEventID(e.ctx)
	require.NoError(t, err)
	require.Positive(t, last)
	es, err := e.svc.ReadEvents(e.ctx, last-1, 10)
	require.NoError(t, err)
	require.Len(t, es, 1)
	require.Equal(t, last, es[0].ID)

	st, err := e.svc.OpenStream(e.ctx, "alice", false, nil, 0)
	require.NoError(t, err)
	require.Equal(t, last, st.LastEventID)
	require.False(t, st.Resumed)
	require.Equal(t, []string{"bob"}, st.Blocked)
	require.ElementsMatch(t, []string{"c", "e"}, st.Channels)

	st, err = e.svc.OpenStream(e.ctx, "alice", false, nil, last)
	require.NoError(t, err)
	require.True(t, st.Resumed, "the event is in the log")
	n, err := e.svc.DeleteEventsBefore(e.ctx, e.svc.Now().Add(time.Second), 1000)
	require.NoError(t, err)
	require.EqualValues(t, last, n, "every event was older")
	st, err = e.svc.OpenStream(e.ctx, "alice", false, nil, last)
	require.NoError(t, err)
	require.False(t, st.Resumed, "the event is no longer in the log")
	require.Equal(t, last, st.LastEventID, "the position stays")

	st, err = e.svc.OpenStream(e.ctx, e.admin, true, nil, 0)
	require.NoError(t, err)
	require.Empty(t, st.Channels, "an admin's stream reads no membership")

	now := e.svc.Now()
	access := &chat.Access{UserID: "alice", IssuedAt: &now}
	_, err = e.svc.OpenStream(e.ctx, "alice", false, access, 0)
	require.NoError(t, err)
	e.clk.Add(time.Second)
	require.NoError(t, e.svc.RevokeUserTokens(e.ctx, e.admin, "alice"))
	_, err = e.svc.OpenStream(e.ctx, "alice", false, access, 0)
	require.Equal(t, chat.CodeUnauthorized, chat.ErrorCode(err))

	require.NoError(t, e.svc.GlobalBan(e.ctx, e.admin, "alice", false))
	_, err = e.svc.OpenStream(e.ctx, "alice", false, nil, 0)
	require.Equal(t, chat.CodeGlobalBanned, chat.ErrorCode(err))

	ids, err := e.svc.MemberChannelIDs(e.ctx, "bob", 0)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"c", "d"}, ids)
	ids, err = e.svc.MemberChannelIDs(e.ctx, "bob", 1)
	require.NoError(t, err)
	require.Equal(t, []string{"d"}, ids, "c has two members")
}

// WatchEvents passes on the store's signal of a commit that wrote events.
func TestServiceWatchEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	ch, err := e.svc.WatchEvents(ctx)
	require.NoError(t, err)
	require.NotNil(t, ch)
	for len(ch) > 0 {
		<-ch
	}
	e.channel("c", "alice")
	<-ch // a signal after the commit, or the test's deadline
}

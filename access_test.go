package chat_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestAccessEventsAreInternal: revoking a user's tokens, revoking an
// admin and rotating one log an internal event each, in the log only: a
// webhook of every event gets no delivery for them, and the recent events
// of the panel leave them out.
func TestAccessEventsAreInternal(t *testing.T) {
	e := newEnv(t)
	hook, err := e.svc.CreateWebhook(e.ctx, e.admin, "https://hooks.example.com/chat", nil)
	require.NoError(t, err)
	_, _, err = e.svc.CreateAdmin(e.ctx, "", "ops", "")
	require.NoError(t, err)
	e.channel("c", "alice") // an event for the webhook and the panel
	require.NoError(t, e.svc.RevokeUserTokens(e.ctx, e.admin, "alice"))
	require.NoError(t, e.svc.RevokeAdmin(e.ctx, "", "ops"))
	_, err = e.svc.RotateAdmin(e.ctx, "", "ops")
	require.NoError(t, err)

	var logged []*chat.Event
	require.NoError(t, e.store.View(e.ctx, func(tx chat.Tx) (err error) {
		logged, err = tx.ReadEvents(e.ctx, 0, 100)
		return err
	}))
	var internal []chat.AccessEventData
	for _, ev := range logged {
		if d, ok := chat.AccessEvent(ev); ok {
			internal = append(internal, d)
		}
	}
	require.Len(t, internal, 3)
	require.Equal(t, "alice", internal[0].UserID)
	require.Equal(t, e.svc.Now().UnixMilli(), internal[0].RevokedAt.UnixMilli())
	require.Equal(t, chat.AccessEventData{Admin: "ops", RevokedAt: internal[1].RevokedAt}, internal[1])
	require.Equal(t, chat.AccessEventData{Admin: "ops", RevokedAt: internal[2].RevokedAt, Rotated: true}, internal[2])

	require.NoError(t, e.store.View(e.ctx, func(tx chat.Tx) error {
		ds, err := tx.ListDeliveries(e.ctx, hook.WebhookID, "", 100)
		require.NotEmpty(t, ds)
		for _, d := range ds {
			require.False(t, chat.IsInternalEvent(d.Event), "delivered %s", d.Event)
		}
		return err
	}))
	recent, err := e.svc.RecentEvents(e.ctx, 100)
	require.NoError(t, err)
	require.NotEmpty(t, recent)
	for _, ev := range recent {
		require.False(t, chat.IsInternalEvent(ev.Name), "recent %s", ev.Name)
	}
}

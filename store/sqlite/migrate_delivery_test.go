package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestMigrateDeliveryLastAttempt upgrades a database written before
// migration 27, whose attempts are all rows of delivery_attempts: they are
// listed as before, and the next attempt is listed after them, once.
func TestMigrateDeliveryLastAttempt(t *testing.T) {
	t.Parallel()
	requireCgo(t)
	ctx := context.Background()
	path, db := migratedBefore(t, "delivery_last_attempt")
	execAll(t, db,
		`INSERT INTO deliveries (request_id, webhook_id, event, body, state, attempts, next_attempt_at,
			lease_owner, lease_until, last_error, last_status, created_at, updated_at)
			VALUES ('a', 'w', 'message.didCreate', '{}', 'pending', 1, 5000, 'o', 70000, 'HTTP 500', 500, 1000, 2000)`,
		`INSERT INTO delivery_attempts (request_id, webhook_id, event, attempt, status_code, latency_ms, error, at)
			VALUES ('a', 'w', 'message.didCreate', 1, 500, 12, 'HTTP 500', 2000)`)
	s := upgrade(t, path, db)
	list := func() []*chat.DeliveryAttempt {
		var as []*chat.DeliveryAttempt
		require.NoError(t, s.View(ctx, func(tx chat.Tx) (err error) {
			as, err = tx.ListAttempts(ctx, "a")
			return err
		}))
		return as
	}
	first := chat.DeliveryAttempt{RequestID: "a", WebhookID: "w", Event: "message.didCreate", Attempt: 1,
		StatusCode: 500, LatencyMs: 12, Error: "HTTP 500", At: chat.Time{Time: time.UnixMilli(2000).UTC()}}
	got := list()
	require.Len(t, got, 1)
	require.Equal(t, first, *got[0])

	second := chat.DeliveryAttempt{RequestID: "a", WebhookID: "w", Event: "message.didCreate", Attempt: 2,
		StatusCode: 204, LatencyMs: 3, At: chat.Time{Time: time.UnixMilli(6000).UTC()}}
	a := second
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error {
		return tx.FinishDelivery(ctx, "o", &a, chat.DeliveryDelivered, time.Time{})
	}))
	got = list()
	require.Len(t, got, 2)
	require.Equal(t, first, *got[0])
	require.Equal(t, second, *got[1])
}

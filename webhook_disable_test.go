package chat_test

import (
	"testing"

	chat "github.com/chatengine/chat"
	"github.com/stretchr/testify/require"
)

// DisableWebhook disables a webhook with a webhook.disable audit entry in
// the same transaction; a webhook already disabled changes nothing.
func TestDisableWebhook(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w, err := e.svc.CreateWebhook(e.ctx, e.admin, "https://hooks.example.com/chat", nil)
	require.NoError(t, err)

	require.Equal(t, chat.CodeBadRequest, chat.ErrorCode(e.svc.DisableWebhook(e.ctx, "", w.WebhookID, "")))
	require.Equal(t, chat.CodeNotFound, chat.ErrorCode(e.svc.DisableWebhook(e.ctx, "", "nope", "gone")))
	entries := func() []chat.AuditEntry {
		l, err := e.svc.QueryAudit(e.ctx, e.admin, chat.AuditQuery{TargetID: w.WebhookID, Action: chat.AuditWebhookDisable})
		require.NoError(t, err)
		return l.Audit
	}
	require.Empty(t, entries(), "refused calls leave no entry")

	require.NoError(t, e.svc.DisableWebhook(e.ctx, "", w.WebhookID, "receiver answered 410 Gone"))
	l, err := e.svc.ListWebhooks(e.ctx, e.admin)
	require.NoError(t, err)
	require.Len(t, l.Webhooks, 1)
	require.True(t, l.Webhooks[0].IsDisabled)
	require.Equal(t, "receiver answered 410 Gone", l.Webhooks[0].DisabledReason)
	es := entries()
	require.Len(t, es, 1)
	require.Empty(t, es[0].ActorID, "the server's own action")
	require.Equal(t, chat.AuditTargetWebhook, es[0].TargetType)
	require.Equal(t, map[string]any{"reason": "receiver answered 410 Gone"}, es[0].Details)

	require.NoError(t, e.svc.DisableWebhook(e.ctx, e.admin, w.WebhookID, "again"))
	require.Len(t, entries(), 1, "already disabled: nothing changes")
	l, err = e.svc.ListWebhooks(e.ctx, e.admin)
	require.NoError(t, err)
	require.Equal(t, "receiver answered 410 Gone", l.Webhooks[0].DisabledReason)

	// Rotating the secret enables it again; a disable by a named actor
	// records that actor.
	_, err = e.svc.RotateWebhookSecret(e.ctx, e.admin, w.WebhookID)
	require.NoError(t, err)
	require.NoError(t, e.svc.DisableWebhook(e.ctx, e.admin, w.WebhookID, "by hand"))
	es = entries()
	require.Len(t, es, 2)
	require.Equal(t, e.admin, es[0].ActorID, "newest first")
}

package chat_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

func TestMarkReadPublishesEphemeralEvent(t *testing.T) {
	e := newEnv(t)
	w, err := e.svc.CreateWebhook(e.ctx, e.admin, "https://hooks.example.com/x", nil)
	require.NoError(t, err)
	e.channel("c", "alice", "bob")
	e.mustPost("alice", "c", "one")
	e.mustPost("alice", "c", "two")
	e.mustPost("alice", "c", "three")
	before := len(e.deliveries(w.WebhookID))
	var rec recorder
	cancel := e.svc.SubscribeEphemeral(rec.add)
	t.Cleanup(cancel)

	_, err = e.svc.MarkRead(e.ctx, "bob", "c", 2)
	require.NoError(t, err)
	require.Equal(t, 1, rec.count())
	ev := rec.last()
	require.Equal(t, chat.EventChannelDidMarkRead, ev.Event)
	require.Equal(t, "c", ev.ChannelID)
	require.Equal(t, "bob", ev.UserID)
	require.Equal(t, e.svc.Now(), ev.CreatedAt)
	var data chat.MarkReadEventData
	require.NoError(t, json.Unmarshal(ev.Data, &data))
	require.Equal(t, chat.MarkReadEventData{ChannelID: "c", UserID: "bob", ReadToSegment: 2}, data)
	require.JSONEq(t, `{"channelId":"c","userId":"bob","readToSegment":2}`, string(ev.Data))

	// A marker that does not move publishes nothing.
	for _, seg := range []int64{1, 2} {
		_, err = e.svc.MarkRead(e.ctx, "bob", "c", seg)
		require.NoError(t, err)
	}
	require.Equal(t, 1, rec.count(), "the marker did not move")

	// Without a segment the marker moves to the latest.
	_, err = e.svc.MarkRead(e.ctx, "bob", "c", 0)
	require.NoError(t, err)
	require.Equal(t, 2, rec.count())
	require.NoError(t, json.Unmarshal(rec.last().Data, &data))
	require.EqualValues(t, 3, data.ReadToSegment)

	// A refused call publishes nothing: not a member, a segment beyond
	// the latest.
	_, err = e.svc.MarkRead(e.ctx, "carol", "c", 0)
	require.Equal(t, chat.CodePermissionDenied, chat.ErrorCode(err))
	_, err = e.svc.MarkRead(e.ctx, "alice", "c", 9)
	require.Equal(t, chat.CodeBadRequest, chat.ErrorCode(err))
	require.Equal(t, 2, rec.count())

	// Never stored, never sent to webhooks.
	require.Len(t, e.deliveries(w.WebhookID), before)
	require.NotContains(t, chat.EventNames, chat.EventChannelDidMarkRead)
	_, err = e.svc.CreateWebhook(e.ctx, e.admin, "https://hooks.example.com/y", []string{chat.EventChannelDidMarkRead})
	require.Equal(t, chat.CodeBadRequest, chat.ErrorCode(err), "a webhook cannot subscribe to it")
}

package chat_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// recorder collects ephemeral events.
type recorder struct {
	mu  sync.Mutex
	evs []chat.EphemeralEvent
}

func (r *recorder) add(ev chat.EphemeralEvent) {
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.evs)
}

func (r *recorder) last() chat.EphemeralEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.evs[len(r.evs)-1]
}

// deliveries returns the number of webhook deliveries in the outbox.
func (e *env) deliveries(webhookID string) []*chat.Delivery {
	e.t.Helper()
	var ds []*chat.Delivery
	require.NoError(e.t, e.store.View(e.ctx, func(tx chat.Tx) error {
		var err error
		ds, err = tx.ListDeliveries(e.ctx, webhookID, "", 1000)
		return err
	}))
	return ds
}

func TestTyping(t *testing.T) {
	e := newEnv(t)
	w, err := e.svc.CreateWebhook(e.ctx, e.admin, "https://hooks.example.com/x", nil)
	require.NoError(t, err)
	e.channel("c", "alice", "bob")
	e.channel("d", "alice")
	before := len(e.deliveries(w.WebhookID))
	var rec recorder
	cancel := e.svc.SubscribeEphemeral(rec.add)
	t.Cleanup(cancel)

	require.NoError(t, e.svc.Typing(e.ctx, "alice", "c"))
	require.Equal(t, 1, rec.count())
	ev := rec.last()
	require.Equal(t, chat.EventChannelDidStartTyping, ev.Event)
	require.Equal(t, "c", ev.ChannelID)
	require.Equal(t, "alice", ev.UserID)
	require.Equal(t, e.svc.Now(), ev.CreatedAt)
	require.JSONEq(t, `{"channelId":"c","userId":"alice"}`, string(ev.Data))
	var data chat.TypingEventData
	require.NoError(t, json.Unmarshal(ev.Data, &data))
	require.Equal(t, chat.TypingEventData{ChannelID: "c", UserID: "alice"}, data)

	// Within 2 s the calls succeed and publish nothing.
	require.NoError(t, e.svc.Typing(e.ctx, "alice", "c"))
	e.clk.Add(chat.TypingInterval - time.Millisecond)
	require.NoError(t, e.svc.Typing(e.ctx, "alice", "c"))
	require.Equal(t, 1, rec.count())
	// Other users and other channels have their own allowance.
	require.NoError(t, e.svc.Typing(e.ctx, "bob", "c"))
	require.NoError(t, e.svc.Typing(e.ctx, "alice", "d"))
	require.Equal(t, 3, rec.count())
	// 2 s after the last published one, the next one goes out.
	e.clk.Add(time.Millisecond)
	require.NoError(t, e.svc.Typing(e.ctx, "alice", "c"))
	require.Equal(t, 4, rec.count())
	require.Equal(t, "alice", rec.last().UserID)
	require.Equal(t, "c", rec.last().ChannelID)

	// Never stored, never sent to webhooks.
	require.Len(t, e.deliveries(w.WebhookID), before)
	_, err = e.svc.CreateWebhook(e.ctx, e.admin, "https://hooks.example.com/y", []string{chat.EventChannelDidStartTyping})
	requireCode(t, err, chat.CodeBadRequest)

	// Rights: members, and admins (who may post anywhere); not others.
	e.clk.Add(time.Hour)
	requireCode(t, e.svc.Typing(e.ctx, "carol", "c"), chat.CodePermissionDenied)
	require.NoError(t, e.svc.Typing(e.ctx, e.admin, "c"))
	requireCode(t, e.svc.Typing(e.ctx, "alice", "nope"), chat.CodeNotFound)
	requireCode(t, e.svc.Typing(e.ctx, "alice", ""), chat.CodeBadRequest)
	require.NoError(t, e.svc.BanUsers(e.ctx, e.admin, "c", []string{"bob"}))
	requireCode(t, e.svc.Typing(e.ctx, "bob", "c"), chat.CodeUserBanned)
	require.NoError(t, e.svc.GlobalBan(e.ctx, e.admin, "alice", false))
	requireCode(t, e.svc.Typing(e.ctx, "alice", "d"), chat.CodeGlobalBanned)
	require.NoError(t, e.svc.CloseChannel(e.ctx, e.admin, "d"))
	requireCode(t, e.svc.Typing(e.ctx, e.admin, "d"), chat.CodeForbidden)
	require.Equal(t, 5, rec.count(), "refused calls publish nothing")

	// Cancelled subscribers receive nothing more; cancelling twice is fine.
	var other recorder
	cancelOther := e.svc.SubscribeEphemeral(other.add)
	cancel()
	cancel()
	e.channel("f", "dave")
	require.NoError(t, e.svc.Typing(e.ctx, "dave", "f"))
	require.Equal(t, 5, rec.count())
	require.Equal(t, 1, other.count())
	cancelOther()
	e.clk.Add(time.Hour)
	require.NoError(t, e.svc.Typing(e.ctx, "dave", "f"))
	require.Equal(t, 1, other.count())
}

// TestTypingConcurrent checks the throttle's mechanism under concurrent
// callers: with the clock standing still, exactly one of many calls for
// a pair publishes.
func TestTypingConcurrent(t *testing.T) {
	e := newEnv(t)
	e.channel("c", "alice", "bob")
	var rec recorder
	t.Cleanup(e.svc.SubscribeEphemeral(rec.add))
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 10; j++ {
				for _, u := range []string{"alice", "bob"} {
					if err := e.svc.Typing(e.ctx, u, "c"); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 2, rec.count())
}

func TestLeaveChannel(t *testing.T) {
	e := newEnv(t)
	w, err := e.svc.CreateWebhook(e.ctx, e.admin, "https://hooks.example.com/x", nil)
	require.NoError(t, err)
	e.channel("c", "alice", "bob")
	e.clk.Add(time.Minute)

	require.NoError(t, e.svc.LeaveChannel(e.ctx, "alice", "c"))
	got, err := e.svc.GetChannel(e.ctx, e.admin, "c")
	require.NoError(t, err)
	require.Equal(t, 1, got.Channels[0].MemberCount)
	require.Equal(t, e.svc.Now(), got.Channels[0].UpdatedAt)
	require.Len(t, got.ChannelUsers, 1)
	require.Equal(t, "bob", got.ChannelUsers[0].UserID)
	_, err = e.post("alice", "c", "still here?")
	requireCode(t, err, chat.CodePermissionDenied)

	// The event is a removal of the user by the user.
	var env chat.Envelope
	n := 0
	for _, d := range e.deliveries(w.WebhookID) {
		if d.Event == chat.EventChannelDidRemoveUsers {
			require.NoError(t, json.Unmarshal(d.Body, &env))
			n++
		}
	}
	require.Equal(t, 1, n)
	var data chat.ChannelEventData
	require.NoError(t, json.Unmarshal(env.Data, &data))
	require.Equal(t, "c", data.Channel.ChannelID)
	require.Equal(t, 1, data.Channel.MemberCount)
	require.Equal(t, []string{"alice"}, data.UserIDs)
	require.Equal(t, "alice", data.ActorID)
	require.Len(t, data.Users, 1)
	require.Equal(t, "alice", data.Users[0].UserID)

	// Leaving again, or a channel one never joined, is a no-op without an event.
	count := len(e.deliveries(w.WebhookID))
	require.NoError(t, e.svc.LeaveChannel(e.ctx, "alice", "c"))
	require.NoError(t, e.svc.LeaveChannel(e.ctx, "nobody-yet", "c"))
	require.Len(t, e.deliveries(w.WebhookID), count)

	// A ban stays when the banned user "leaves".
	require.NoError(t, e.svc.BanUsers(e.ctx, e.admin, "c", []string{"bob"}))
	require.NoError(t, e.svc.LeaveChannel(e.ctx, "bob", "c"))
	_, err = e.svc.AddUsers(e.ctx, e.admin, "c", []string{"bob"})
	requireCode(t, err, chat.CodeUserBanned)

	// Refusals change nothing.
	e.channel("d", "carol")
	requireCode(t, e.svc.LeaveChannel(e.ctx, "carol", "nope"), chat.CodeNotFound)
	requireCode(t, e.svc.LeaveChannel(e.ctx, "carol", ""), chat.CodeBadRequest)
	require.NoError(t, e.svc.GlobalBan(e.ctx, e.admin, "carol", false))
	requireCode(t, e.svc.LeaveChannel(e.ctx, "carol", "d"), chat.CodeGlobalBanned)
	got, err = e.svc.GetChannel(e.ctx, e.admin, "d")
	require.NoError(t, err)
	require.Equal(t, 1, got.Channels[0].MemberCount)
	require.NoError(t, e.svc.CloseChannel(e.ctx, e.admin, "d"))
	requireCode(t, e.svc.LeaveChannel(e.ctx, "carol", "d"), chat.CodeForbidden)

	// The admin's own user leaves like anyone.
	_, err = e.svc.JoinChannel(e.ctx, e.admin, "c")
	require.NoError(t, err)
	require.NoError(t, e.svc.LeaveChannel(e.ctx, e.admin, "c"))
	got, err = e.svc.GetChannel(e.ctx, e.admin, "c")
	require.NoError(t, err)
	for _, cu := range got.ChannelUsers {
		require.NotEqual(t, e.admin, cu.UserID)
	}
}

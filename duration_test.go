package chat_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestDurationsInMilliseconds checks how durations become the API's
// milliseconds: a mute's end and the channel.didMute mutePeriod are
// rounded up to whole milliseconds, MuteForever is mutePeriod -1 and
// Forever, and a slow-mode window is kept rounded up.
func TestDurationsInMilliseconds(t *testing.T) {
	e := newEnv(t)
	hook, err := e.svc.CreateWebhook(e.ctx, e.admin, "https://hooks.example.com/chat", []string{chat.EventChannelDidMute})
	require.NoError(t, err)
	e.channel("c", "alice")
	now := e.svc.Now()

	require.NoError(t, e.svc.MuteChannel(e.ctx, e.admin, "c", 1500*time.Microsecond))
	got, err := e.svc.GetChannel(e.ctx, e.admin, "c")
	require.NoError(t, err)
	require.Equal(t, now.Add(2*time.Millisecond), got.Channels[0].MuteTimeout.Time)
	require.NoError(t, e.svc.MuteUsers(e.ctx, e.admin, "c", []string{"alice"}, chat.MuteForever))
	got, err = e.svc.GetChannel(e.ctx, e.admin, "c")
	require.NoError(t, err)
	require.Equal(t, chat.Forever, *got.ChannelUsers[0].MuteTimeout)
	require.NoError(t, e.svc.MuteChannel(e.ctx, e.admin, "c", chat.Unmute))

	var periods []int64
	var mutes []time.Duration
	must := func(d time.Duration, ok bool) time.Duration {
		require.True(t, ok)
		return d
	}
	require.NoError(t, e.store.View(e.ctx, func(tx chat.Tx) error {
		ds, err := tx.ListDeliveries(e.ctx, hook.WebhookID, "", 100)
		for i := len(ds) - 1; i >= 0; i-- {
			var env chat.Envelope
			require.NoError(t, json.Unmarshal(ds[i].Body, &env))
			var d chat.ChannelEventData
			require.NoError(t, json.Unmarshal(env.Data, &d))
			periods = append(periods, *d.MutePeriod)
			mutes = append(mutes, must(d.Mute()))
		}
		return err
	}))
	require.Equal(t, []int64{2, -1, 0}, periods)
	require.Equal(t, []time.Duration{2 * time.Millisecond, chat.MuteForever, chat.Unmute}, mutes)
	_, ok := (&chat.ChannelEventData{}).Mute()
	require.False(t, ok, "no mutePeriod")

	out, err := e.svc.SetChannelRateLimit(e.ctx, e.admin, "c", 1500*time.Microsecond)
	require.NoError(t, err)
	require.Equal(t, 2, out.Channels[0].RateLimitWindow)
	require.Equal(t, 2*time.Millisecond, out.Channels[0].RateLimit())
	_, err = e.svc.SetChannelRateLimit(e.ctx, e.admin, "c", -time.Nanosecond)
	var f chat.FieldError
	require.ErrorAs(t, err, &f)
	require.Equal(t, "rateLimitWindow", f.Field)
	err = e.svc.MuteChannel(e.ctx, e.admin, "c", -time.Nanosecond)
	require.ErrorAs(t, err, &f)
	require.Equal(t, "mutePeriod", f.Field)
}

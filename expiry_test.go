package chat_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
)

// loggedEvent is an event of the log with its channel event data decoded.
type loggedEvent struct {
	name string
	data chat.ChannelEventData
}

// eventsAfter reads the event log after id and returns the events and the
// last id.
func eventsAfter(t *testing.T, st chat.Store, after int64) ([]loggedEvent, int64) {
	t.Helper()
	var evs []*chat.Event
	require.NoError(t, st.View(context.Background(), func(tx chat.Tx) (err error) {
		evs, err = tx.ReadEvents(context.Background(), after, 1000)
		return err
	}))
	out := make([]loggedEvent, 0, len(evs))
	for _, ev := range evs {
		le := loggedEvent{name: ev.Name}
		if ev.Name != chat.EventMessageDidCreate {
			require.NoError(t, json.Unmarshal(ev.Data, &le.data), "%s: %s", ev.Name, ev.Data)
		}
		out = append(out, le)
		after = ev.ID
	}
	return out, after
}

func lastEventID(t *testing.T, st chat.Store) int64 {
	t.Helper()
	_, id := eventsAfter(t, st, 0)
	return id
}

func names(evs []loggedEvent) []string {
	out := []string{}
	for _, e := range evs {
		out = append(out, e.name)
	}
	return out
}

func TestExpireMutesAnnouncesEachLapseOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.channel("room", "alice", "bob", "carol", "dave")
	e.channel("quiet")
	require.NoError(t, e.svc.MuteChannel(e.ctx, e.admin, "room", 10*time.Second))
	require.NoError(t, e.svc.MuteUsers(e.ctx, e.admin, "room", []string{"bob", "alice"}, 5*time.Second))
	require.NoError(t, e.svc.MuteUsers(e.ctx, e.admin, "room", []string{"carol"}, 20*time.Second))
	require.NoError(t, e.svc.MuteUsers(e.ctx, e.admin, "room", []string{"dave"}, chat.MuteForever))
	t0 := e.clk.Now()
	last := lastEventID(t, e.store)

	// Nothing has ended yet; the next end is in 5 s.
	e.clk.Add(4999 * time.Millisecond)
	n, next, ok, err := e.svc.ExpireMutes(e.ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	require.True(t, ok)
	require.True(t, next.Equal(t0.Add(5*time.Second)), "next %v", next)
	evs, _ := eventsAfter(t, e.store, last)
	require.Empty(t, evs)

	// At the moment: alice and bob, in one event.
	e.clk.Add(time.Millisecond)
	n, next, _, err = e.svc.ExpireMutes(e.ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.True(t, next.Equal(t0.Add(10*time.Second)))
	evs, last = eventsAfter(t, e.store, last)
	require.Equal(t, []string{chat.EventChannelDidUnmuteUsers}, names(evs))
	d := evs[0].data
	require.Equal(t, []string{"alice", "bob"}, d.UserIDs)
	require.Equal(t, chat.UnmuteExpired, d.Reason)
	require.Empty(t, d.ActorID, "nobody acted")
	require.Nil(t, d.MutePeriod)
	require.Equal(t, "room", d.Channel.ChannelID)
	require.True(t, d.Channel.IsMuted, "the channel's own mute runs on")
	require.Len(t, d.Users, 2)
	require.Equal(t, "alice", d.Users[0].UserID)

	// Once: a second look finds nothing.
	n, _, _, err = e.svc.ExpireMutes(e.ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	evs, _ = eventsAfter(t, e.store, last)
	require.Empty(t, evs)

	// alice may post again; the record shows her unmuted.
	_, err = e.post("alice", "room", "hi")
	requireCode(t, err, chat.CodeChannelMuted)
	cl, err := e.svc.GetChannel(e.ctx, e.admin, "room")
	require.NoError(t, err)
	for _, cu := range cl.ChannelUsers {
		switch cu.UserID {
		case "alice", "bob":
			require.False(t, cu.IsMuted)
			require.Nil(t, cu.MuteTimeout)
		case "carol", "dave":
			require.True(t, cu.IsMuted, cu.UserID)
		}
	}

	// The channel's mute, 5 s later, then carol's.
	e.clk.Add(5 * time.Second)
	n, next, _, err = e.svc.ExpireMutes(e.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.True(t, next.Equal(t0.Add(20*time.Second)))
	evs, last = eventsAfter(t, e.store, last)
	require.Equal(t, []string{chat.EventChannelDidUnmute}, names(evs))
	d = evs[0].data
	require.Equal(t, "room", d.Channel.ChannelID)
	require.False(t, d.Channel.IsMuted)
	require.Nil(t, d.Channel.MuteTimeout)
	require.Equal(t, []string{}, d.UserIDs)
	require.Equal(t, chat.UnmuteExpired, d.Reason)
	require.Equal(t, "hi", e.mustPost("alice", "room", "hi").Data["text"])
	_, last = eventsAfter(t, e.store, last)

	e.clk.Add(time.Hour)
	n, next, ok, err = e.svc.ExpireMutes(e.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.True(t, ok)
	require.True(t, next.Equal(chat.Forever.Time), "dave is muted for ever")
	evs, _ = eventsAfter(t, e.store, last)
	require.Equal(t, []string{chat.EventChannelDidUnmuteUsers}, names(evs))
	require.Equal(t, []string{"carol"}, evs[0].data.UserIDs)
}

func TestExpireMutesInBatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var ids []string
	for i := range 250 {
		ids = append(ids, "u"+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	e.channel("big", ids...)
	require.NoError(t, e.svc.MuteUsers(e.ctx, e.admin, "big", ids, time.Minute))
	last := lastEventID(t, e.store)
	e.clk.Add(time.Minute)
	n, _, ok, err := e.svc.ExpireMutes(e.ctx)
	require.NoError(t, err)
	require.Equal(t, 250, n)
	require.False(t, ok, "nothing muted any more")
	evs, _ := eventsAfter(t, e.store, last)
	seen := map[string]int{}
	for _, ev := range evs {
		require.Equal(t, chat.EventChannelDidUnmuteUsers, ev.name)
		for _, id := range ev.data.UserIDs {
			seen[id]++
		}
	}
	require.Len(t, seen, 250)
	for id, c := range seen {
		require.Equal(t, 1, c, id)
	}
}

func TestUnmuteByHandEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.channel("room", "alice", "bob")
	last := lastEventID(t, e.store)

	// Unmuting a channel that is not muted: only channel.didMute.
	require.NoError(t, e.svc.MuteChannel(e.ctx, e.admin, "room", chat.Unmute))
	evs, last := eventsAfter(t, e.store, last)
	require.Equal(t, []string{chat.EventChannelDidMute}, names(evs))

	// Unmuting a muted one: channel.didMute (mutePeriod 0), then
	// channel.didUnmute with the actor and reason manual.
	require.NoError(t, e.svc.MuteChannel(e.ctx, e.admin, "room", time.Hour))
	require.NoError(t, e.svc.MuteChannel(e.ctx, e.admin, "room", chat.Unmute))
	evs, last = eventsAfter(t, e.store, last)
	require.Equal(t, []string{chat.EventChannelDidMute, chat.EventChannelDidMute, chat.EventChannelDidUnmute}, names(evs))
	d := evs[2].data
	require.Equal(t, chat.UnmuteManual, d.Reason)
	require.Equal(t, e.admin, d.ActorID)
	require.False(t, d.Channel.IsMuted)

	// Members: only those who were muted are named.
	require.NoError(t, e.svc.MuteUsers(e.ctx, e.admin, "room", []string{"alice"}, chat.MuteForever))
	require.NoError(t, e.svc.MuteUsers(e.ctx, e.admin, "room", []string{"alice", "bob"}, chat.Unmute))
	evs, last = eventsAfter(t, e.store, last)
	require.Equal(t, []string{chat.EventChannelDidMute, chat.EventChannelDidMute, chat.EventChannelDidUnmuteUsers}, names(evs))
	d = evs[2].data
	require.Equal(t, []string{"alice"}, d.UserIDs)
	require.Equal(t, chat.UnmuteManual, d.Reason)
	require.Equal(t, e.admin, d.ActorID)
	require.Len(t, d.Users, 1)

	// Nothing is left for the expirer.
	e.clk.Add(24 * time.Hour)
	n, _, ok, err := e.svc.ExpireMutes(e.ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	require.False(t, ok)
	evs, _ = eventsAfter(t, e.store, last)
	require.Empty(t, evs)
}

// A mute that ended by time and was not announced yet (no expirer ran) is
// announced, as expired, by the next mute call that touches it, and then
// not again.
func TestLapsedMuteAnnouncedByNextMuteCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.channel("room", "alice", "bob")
	require.NoError(t, e.svc.MuteChannel(e.ctx, e.admin, "room", time.Second))
	require.NoError(t, e.svc.MuteUsers(e.ctx, e.admin, "room", []string{"alice", "bob"}, time.Second))
	last := lastEventID(t, e.store)
	e.clk.Add(2 * time.Second)

	require.NoError(t, e.svc.MuteChannel(e.ctx, e.admin, "room", time.Minute))
	require.NoError(t, e.svc.MuteUsers(e.ctx, e.admin, "room", []string{"alice"}, chat.Unmute))
	evs, last := eventsAfter(t, e.store, last)
	require.Equal(t, []string{chat.EventChannelDidUnmute, chat.EventChannelDidMute,
		chat.EventChannelDidUnmuteUsers, chat.EventChannelDidMute}, names(evs))
	require.Equal(t, chat.UnmuteExpired, evs[0].data.Reason)
	require.False(t, evs[0].data.Channel.IsMuted, "the channel as the lapse left it")
	require.Empty(t, evs[0].data.ActorID)
	require.True(t, evs[1].data.Channel.IsMuted)
	require.Equal(t, []string{"alice"}, evs[2].data.UserIDs)
	require.Equal(t, chat.UnmuteExpired, evs[2].data.Reason, "alice's mute had already ended")

	// bob's lapse is still to announce; the channel's new mute is running.
	n, _, _, err := e.svc.ExpireMutes(e.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	evs, _ = eventsAfter(t, e.store, last)
	require.Equal(t, []string{chat.EventChannelDidUnmuteUsers}, names(evs))
	require.Equal(t, []string{"bob"}, evs[0].data.UserIDs)
}

// Closing a channel, and removing or banning a member, end their mutes
// with the event of that action: nothing is left to announce.
func TestClosedAndRemovedMutesAreNotAnnounced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.channel("gone", "alice")
	e.channel("room", "bob", "carol")
	require.NoError(t, e.svc.MuteChannel(e.ctx, e.admin, "gone", time.Second))
	require.NoError(t, e.svc.MuteUsers(e.ctx, e.admin, "gone", []string{"alice"}, time.Second))
	require.NoError(t, e.svc.MuteUsers(e.ctx, e.admin, "room", []string{"bob", "carol"}, time.Second))
	require.NoError(t, e.svc.CloseChannel(e.ctx, e.admin, "gone"))
	require.NoError(t, e.svc.RemoveUsers(e.ctx, e.admin, "room", []string{"bob"}))
	require.NoError(t, e.svc.BanUsers(e.ctx, e.admin, "room", []string{"carol"}))
	e.clk.Add(time.Minute)
	n, _, ok, err := e.svc.ExpireMutes(e.ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	require.False(t, ok)
}

// waitFor polls cond until it holds, failing after a generous deadline;
// it waits for a mechanism to act, it does not measure how fast.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 20*time.Second, 5*time.Millisecond, what)
}

// The Expirer announces on its own: the test moves the Service's clock,
// not real time, past the moments.
func TestExpirerAnnounces(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.channel("room", "alice")
	x := chat.NewExpirer(e.svc, chat.ExpirerConfig{Interval: 5 * time.Millisecond})
	require.NoError(t, x.Start(e.ctx))
	require.Error(t, x.Start(e.ctx), "started twice")
	t.Cleanup(func() { _ = x.Stop(context.Background()) })
	last := lastEventID(t, e.store)

	require.NoError(t, e.svc.MuteUsers(e.ctx, e.admin, "room", []string{"alice"}, time.Hour))
	require.NoError(t, e.svc.MuteChannel(e.ctx, e.admin, "room", 2*time.Hour))
	_, last = eventsAfter(t, e.store, last)
	e.clk.Add(time.Hour)
	var evs []loggedEvent
	waitFor(t, "channel.didUnmuteUsers for alice", func() bool {
		got, _ := eventsAfter(t, e.store, last)
		evs = got
		return len(got) > 0
	})
	require.Equal(t, []string{chat.EventChannelDidUnmuteUsers}, names(evs))
	require.Equal(t, []string{"alice"}, evs[0].data.UserIDs)
	_, last = eventsAfter(t, e.store, last)

	e.clk.Add(time.Hour)
	waitFor(t, "channel.didUnmute", func() bool {
		got, _ := eventsAfter(t, e.store, last)
		evs = got
		return len(got) > 0
	})
	require.Equal(t, []string{chat.EventChannelDidUnmute}, names(evs))

	require.NoError(t, x.Stop(e.ctx))
	require.NoError(t, x.Stop(e.ctx), "Stop is idempotent")
	require.Error(t, x.Start(e.ctx), "no start after Stop")
	unstarted := chat.NewExpirer(e.svc, chat.ExpirerConfig{})
	require.NoError(t, unstarted.Stop(e.ctx), "Stop before Start")
	require.Error(t, unstarted.Start(e.ctx))
	evs, _ = eventsAfter(t, e.store, last)
	require.Len(t, evs, 1, "announced once")
}

// A lapse that passed while no expirer ran (a restart across the moment)
// is announced once when one starts.
func TestExpirerAfterRestart(t *testing.T) {
	t.Parallel()
	st := memory.New()
	e := newEnvStore(t, st)
	e.channel("room", "alice")
	first := chat.NewExpirer(e.svc, chat.ExpirerConfig{Interval: 5 * time.Millisecond})
	require.NoError(t, first.Start(e.ctx))
	require.NoError(t, e.svc.MuteUsers(e.ctx, e.admin, "room", []string{"alice"}, time.Minute))
	require.NoError(t, first.Stop(e.ctx))
	last := lastEventID(t, st)

	e.clk.Add(time.Hour) // the moment passes while nothing runs
	evs, _ := eventsAfter(t, st, last)
	require.Empty(t, evs)

	// A new process on the same store.
	svc, err := chat.New(e.ctx, st, chat.Config{Now: e.clk.Now})
	require.NoError(t, err)
	second := chat.NewExpirer(svc, chat.ExpirerConfig{Interval: 5 * time.Millisecond})
	require.NoError(t, second.Start(e.ctx))
	waitFor(t, "the lapse announced after the restart", func() bool {
		got, _ := eventsAfter(t, st, last)
		return len(got) > 0
	})
	require.NoError(t, second.Stop(e.ctx))
	evs, _ = eventsAfter(t, st, last)
	require.Equal(t, []string{chat.EventChannelDidUnmuteUsers}, names(evs))
	require.Equal(t, []string{"alice"}, evs[0].data.UserIDs)
}

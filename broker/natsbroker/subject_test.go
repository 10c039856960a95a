package natsbroker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/broker"
	"github.com/chatengine/chat/internal/natstest"
	"github.com/chatengine/chat/store/memory"
)

// TestParseURLs: the -broker syntax, nats://host:port[,host:port...].
func TestParseURLs(t *testing.T) {
	t.Parallel()
	urls, err := ParseURLs("nats://h1:4222,h2:4223, nats://h3:4224")
	require.NoError(t, err)
	require.Equal(t, []string{"nats://h1:4222", "nats://h2:4223", "nats://h3:4224"}, urls)
	for _, bad := range []string{"h1:4222", "nats://h1", "nats://h1:4222,", "nats://h1:4222,,h2:1", "tls://h:1"} {
		_, err := ParseURLs(bad)
		require.Error(t, err, bad)
	}
}

// TestSubjects: ids become one subject token each (no '.', '*', '>' or
// space survives, and two ids never share a token); an event goes to its
// channel's subject, one per user it is about, its admin's for an admin
// revocation, else the subject of no one; each key's subscriptions
// cover the subjects published for it.
func TestSubjects(t *testing.T) {
	t.Parallel()
	require.Equal(t, "abc-_9", escape("abc-_9"))
	require.Equal(t, "a%2Eb%2A%3E%20%25", escape("a.b*> %"))
	require.NotEqual(t, escape("a.b"), escape("a%2Eb"))
	require.Equal(t, "%", escape(""))

	b := &Broker{cfg: Config{Prefix: "chat"}}
	require.Equal(t, []string{"chat.ev.c.g%2E1", "chat.ev.u.alice", "chat.ev.u.bob"},
		b.subjects(&chat.Event{Name: chat.EventChannelDidAddUsers, ChannelID: "g.1", UserIDs: []string{"alice", "bob"}}))
	require.Equal(t, []string{"chat.ev.a.ops"},
		b.subjects(&chat.Event{Name: chat.EventAdminDidRevokeToken, Data: []byte(`{"admin":"ops","revokedAt":"2026-01-01T00:00:00.000Z"}`)}))
	require.Equal(t, []string{"chat.ev.x"}, b.subjects(&chat.Event{Name: chat.EventMessageDidFlag}))
	require.Equal(t, []string{"chat.ev.c.g%2E1", "chat.eph.c.g%2E1"}, b.keySubjects(broker.KeyChannel("g.1")))
	require.Equal(t, []string{"chat.ev.u.alice", "chat.eph.u.alice"}, b.keySubjects(broker.KeyUser("alice")))
	require.Equal(t, []string{"chat.ev.a.ops"}, b.keySubjects(broker.KeyAdmin("ops")))
	require.Equal(t, []string{"chat.ev.>", "chat.eph.>"}, b.keySubjects(broker.KeyAll))
}

// TestStreamKept: the first broker creates the stream; a later one with
// another configuration finds it and changes nothing.
func TestStreamKept(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ns := natstest.Start(t)
	st := memory.New()
	first, err := New(ctx, Config{URLs: []string{ns.URL()}, Store: st, MaxAge: time.Hour})
	require.NoError(t, err)
	defer first.Close()
	second, err := New(ctx, Config{URLs: []string{ns.URL()}, Store: st, MaxAge: 2 * time.Hour})
	require.NoError(t, err)
	defer second.Close()
	s, err := second.js.Stream(ctx, "CHAT_EVENTS")
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, time.Hour, info.Config.MaxAge)
	require.Equal(t, 1, info.Config.Replicas, "one server: one replica")
	require.Equal(t, 2*time.Minute, info.Config.Duplicates)
	require.Equal(t, []string{"chat.ev.>"}, info.Config.Subjects)
}

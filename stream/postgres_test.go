package stream_test

import (
	"context"
	"database/sql"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/internal/pgtest"
	"github.com/chatengine/chat/store/postgres"
	"github.com/chatengine/chat/stream"
)

// TestPostgresAcrossStores: two stores on one Postgres schema stand for
// two server processes. Messages posted through one reach a subscriber of
// the other's hub, all of them and in order, woken by LISTEN/NOTIFY (the
// hub's poll interval is an hour, so no poll can deliver them).
func TestPostgresAcrossStores(t *testing.T) {
	t.Parallel()
	dsn := pgtest.URL(t)
	schema := pgtest.SchemaName()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	open := func() *postgres.Store {
		st, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: schema, MaxOpenConns: 4})
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	a := open()
	b := open()
	t.Cleanup(func() {
		db, err := sql.Open("postgres", dsn)
		if err == nil {
			_, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE")
			db.Close()
		}
	})
	svcA, err := chat.New(ctx, a, chat.Config{})
	require.NoError(t, err)
	svcB, err := chat.New(ctx, b, chat.Config{})
	require.NoError(t, err)
	hub := stream.New(svcB, stream.Config{PollInterval: time.Hour})
	require.NoError(t, hub.Start(ctx))
	defer func() { _ = hub.Stop(context.Background()) }()
	sub, err := hub.Subscribe(ctx, stream.Filter{Admin: true}, nil)
	require.NoError(t, err)
	defer sub.Close()

	admin, _, err := svcA.CreateAdmin(ctx, "ops", "")
	require.NoError(t, err)
	_, err = svcA.CreateChannel(ctx, admin.UserID, chat.CreateChannel{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice"}})
	require.NoError(t, err)
	const n = 50
	go func() {
		for i := 1; i <= n; i++ {
			if _, err := svcA.CreateMessage(ctx, "alice", chat.CreateMessage{ChannelID: "c", Type: chat.MessageTypeText, Data: chat.TextData(strconv.Itoa(i))}); err != nil {
				return // the receiving side fails on the missing message
			}
		}
	}()
	var last int64
	want := 1
	for want <= n {
		f := next(t, sub)
		v := id(t, f)
		require.Greater(t, v, last)
		last = v
		if f.Event != chat.EventMessageDidCreate {
			continue // user and channel creation
		}
		require.Equal(t, strconv.Itoa(want), text(t, f))
		want++
	}
}

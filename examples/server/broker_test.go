package main

import (
	"bufio"
	"context"
	"database/sql"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chatengine/chat/internal/natstest"
	"github.com/chatengine/chat/internal/pgtest"
)

// TestBrokerUsage: -broker takes inprocess, postgres or nats://...; postgres
// and NATS need a Postgres store; CHAT_BROKER sets it too.
func TestBrokerUsage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, args := range [][]string{
		{"-store", "memory", "-broker", "redis://x"},
		{"-store", "memory", "-broker", "postgres"},
		{"-store", "memory", "-broker", "nats://127.0.0.1:4222"},
		{"-store", "memory", "-broker", "nats://127.0.0.1:4222,"},
	} {
		err := run(ctx, args, envOf(nil), io.Discard, io.Discard)
		var u usageError
		require.ErrorAs(t, err, &u, "%v", args)
	}
	err := run(ctx, []string{"-store", "memory"}, envOf(map[string]string{"CHAT_BROKER": "postgres"}), io.Discard, io.Discard)
	var u usageError
	require.ErrorAs(t, err, &u, "CHAT_BROKER=postgres with the memory store")
	require.Contains(t, u.Error(), "-broker postgres needs a Postgres store")
}

// TestServeNATSBroker: two servers on one Postgres schema with -broker
// nats://...: a message posted on one reaches an event stream on the
// other.
func TestServeNATSBroker(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	dsn := pgtest.URL(t)
	schema := pgtest.SchemaName()
	t.Cleanup(func() {
		db, err := sql.Open("postgres", dsn)
		if err == nil {
			_, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE")
			db.Close()
		}
	})
	args := []string{"-store", dsn, "-postgres-schema", schema, "-broker", ns.URL() + ",127.0.0.1:1"}
	a := start(t, args...)
	tok := a.token(t)
	b := start(t, args...)
	code, body := a.call(t, tok, "POST", "/api/v2/channel", map[string]any{"channelId": "general", "type": "standard"})
	require.Equal(t, 200, code, "%v", body)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", b.base+"/api/v2/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	sc := bufio.NewScanner(resp.Body)
	readEvent := func() string {
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				return name
			}
		}
		return ""
	}
	require.Equal(t, "stream.didConnect", readEvent())
	code, body = a.call(t, tok, "POST", "/api/v2/message", map[string]any{
		"channelId": "general", "type": "text", "data": map[string]any{"text": "across"}})
	require.Equal(t, 200, code, "%v", body)
	require.Equal(t, "message.didCreate", readEvent())
	require.Contains(t, a.stderr.String()+b.stderr.String(), "event broker: NATS JetStream")
}

package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
)

func TestLoopbackDSN(t *testing.T) {
	for dsn, ok := range map[string]bool{
		"postgres://postgres@127.0.0.1:5432/test?sslmode=disable": true,
		"postgresql://u:p@127.0.0.1/db":                           true,
		"postgres://postgres@db.example.com:5432/test":            false,
		"postgres://127.0.0.1.example.com/test":                   false,
		"host=127.0.0.1 dbname=test":                              false,
		"http://127.0.0.1:5432/":                                  false,
	} {
		require.Equal(t, ok, loopbackDSN(dsn), dsn)
	}
}

// TestBadFlags: out-of-range counts and non-loopback targets are refused
// before anything starts.
func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-idle", "0"},
		{"-idle", "100001"},
		{"-members", "10001"},
		{"-messages", "0"},
		{"-burst", "1000"},
		{"-store", "mysql"},
		{"-store", "postgres", "-dsn", "postgres://postgres@10.0.0.5/test"},
		{"-scenarios", "nope", "-store", "postgres"},
	} {
		require.Error(t, run(args, io.Discard, io.Discard), "%v", args)
	}
	require.Error(t, postBurst(options{postURL: "http://example.com:80"}), "posts go to 127.0.0.1 only")
}

// TestCeilingBroadcastAfterHello: a client that has read its first frame
// from the bare server receives every broadcast made after that, however
// soon (the connection is in the broadcast set before its first frame is
// written).
func TestCeilingBroadcastAfterHello(t *testing.T) {
	srv := httptest.NewServer(newCeiling())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 200 {
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/ws", nil)
		require.NoError(t, err)
		_, b, err := c.Read(ctx)
		require.NoError(t, err)
		require.Contains(t, string(b), "stream.didConnect")
		resp, err := http.Post(srv.URL+"/broadcast?n=1&size=64", "", nil)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		_, b, err = c.Read(rctx)
		rcancel()
		require.NoError(t, err, "connection %d: no broadcast after its first frame", i)
		require.Contains(t, string(b), "message.didCreate")
		c.CloseNow()
	}
}

package main

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMaxStreamsPerCaller: -max-streams-per-caller (or its variable) caps
// the open event streams of one caller; a negative value is a usage
// error, and the default is the stream package's.
func TestMaxStreamsPerCaller(t *testing.T) {
	t.Parallel()
	c, err := parseConfig(t, nil, nil)
	require.NoError(t, err)
	require.Equal(t, 10, c.maxStreams)
	c, err = parseConfig(t, nil, map[string]string{"CHAT_MAX_STREAMS_PER_CALLER": "3"})
	require.NoError(t, err)
	require.Equal(t, 3, c.maxStreams)
	var u usageError
	require.ErrorAs(t, run(context.Background(), []string{"-max-streams-per-caller", "-1"}, envOf(nil), io.Discard, io.Discard), &u)

	s := start(t, "-store", "memory", "-max-streams-per-caller", "1")
	tok := s.token(t)
	open := func() *http.Response {
		req, err := http.NewRequest("GET", s.base+"/api/v2/events", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	require.Equal(t, http.StatusOK, open().StatusCode)
	require.Equal(t, http.StatusTooManyRequests, open().StatusCode)
}

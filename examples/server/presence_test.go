package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPresenceWired: the server counts an end user's event stream, so
// the user reads as online while it is open and as offline once it
// closed and -presence-grace passed.
func TestPresenceWired(t *testing.T) {
	t.Parallel()
	s := start(t, "-store", "memory", "-presence-grace", "100ms")
	tok := s.token(t)
	code, body := s.call(t, tok, "POST", "/api/v2/users/alice/token", map[string]any{"ttl": 3600})
	require.Equal(t, http.StatusOK, code)
	userToken := body["token"].(string)
	user := func() map[string]any {
		code, body := s.call(t, tok, "GET", "/api/v2/users/alice", nil)
		require.Equal(t, http.StatusOK, code)
		return body["users"].([]any)[0].(map[string]any)
	}
	require.Equal(t, false, user()["online"])
	require.Nil(t, user()["lastActiveAt"])

	req, err := http.NewRequest("GET", s.base+"/api/v2/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+userToken)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Eventually(t, func() bool { return user()["online"] == true }, 10*time.Second, 10*time.Millisecond)
	require.NotNil(t, user()["lastActiveAt"])
	resp.Body.Close()
	require.Eventually(t, func() bool { return user()["online"] == false }, 10*time.Second, 10*time.Millisecond)
	require.NotNil(t, user()["lastActiveAt"])
}

package main

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServeRateLimits: the flags reach the API. With one request a
// thousand seconds and a burst of 3, the fourth request of the admin is
// refused with 429/400311 and a Retry-After; /livez is outside the API
// and not counted.
func TestServeRateLimits(t *testing.T) {
	t.Parallel()
	s := start(t, "-store", "memory", "-admin-rate", "0.001", "-admin-burst", "3")
	tok := s.token(t)
	get := func(path string) *http.Response {
		req, err := http.NewRequest("GET", s.base+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	for i := range 3 {
		resp := get("/api/v2/users")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "3", resp.Header.Get("X-RateLimit-Limit"))
		require.Equal(t, strconv.Itoa(2-i), resp.Header.Get("X-RateLimit-Remaining"))
		require.Equal(t, strconv.Itoa(1000*(i+1)), resp.Header.Get("X-RateLimit-Reset"))
		require.Equal(t, http.StatusOK, get("/livez").StatusCode)
	}
	resp := get("/api/v2/users")
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "1000", resp.Header.Get("Retry-After"))
	code, body := s.call(t, tok, "GET", "/api/v2/users", nil)
	require.Equal(t, http.StatusTooManyRequests, code)
	require.EqualValues(t, 400311, body["code"])
}

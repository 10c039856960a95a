package main

import (
	"net/http"
	"strconv"
	"strings"
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

// TestServeAnonRateLimit: -anon-rate and -anon-burst reach the API and the
// sign-in forms beside it, which share one bucket per client address; a
// valid token is not counted. With -client-addr-header the address is the
// header's.
func TestServeAnonRateLimit(t *testing.T) {
	t.Parallel()
	s := start(t, "-store", "memory", "-anon-rate", "0.001", "-anon-burst", "3", "-unsafe-dev-sign-in")
	tok := s.token(t)
	send := func(method, path, token string, hdr ...string) *http.Response {
		req, err := http.NewRequest(method, s.base+path, strings.NewReader(`{"userId":"ann"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	// The API without a token, a bad token, the chat page's sign-in: one bucket.
	require.Equal(t, http.StatusUnauthorized, send("GET", "/api/v2/users", "").StatusCode)
	resp := send("GET", "/api/v2/users", "chat_wrong")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, "3", resp.Header.Get("X-RateLimit-Limit"))
	require.Equal(t, "1", resp.Header.Get("X-RateLimit-Remaining"))
	require.Equal(t, http.StatusOK, send("POST", "/chat/dev-token", "").StatusCode)
	for _, path := range []string{"/admin/signin", "/chat/dev-token", "/api/v2/users"} {
		resp = send("POST", path, "")
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, path)
		require.Equal(t, "1000", resp.Header.Get("Retry-After"), path)
	}
	code, body := s.call(t, "", "GET", "/api/v2/users", nil)
	require.Equal(t, http.StatusTooManyRequests, code)
	require.EqualValues(t, 400311, body["code"])
	// Not counted: a valid token, the panel's pages, /livez.
	require.Equal(t, http.StatusOK, send("GET", "/api/v2/users", tok).StatusCode)
	require.Equal(t, http.StatusOK, send("GET", "/admin/signin", "").StatusCode)
	require.Equal(t, http.StatusOK, send("GET", "/livez", "").StatusCode)

	// Behind a proxy that sets X-Real-IP: each client has its bucket.
	p := start(t, "-store", "memory", "-anon-rate", "0.001", "-anon-burst", "1", "-client-addr-header", "X-Real-IP")
	for _, c := range []struct {
		ip   string
		want int
	}{{"198.51.100.1", 401}, {"198.51.100.1", 429}, {"198.51.100.2", 401}, {"203.0.113.9, 198.51.100.2", 429}} {
		req, err := http.NewRequest("GET", p.base+"/api/v2/users", nil)
		require.NoError(t, err)
		req.Header.Set("X-Real-IP", c.ip)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, c.want, resp.StatusCode, c.ip)
	}
}

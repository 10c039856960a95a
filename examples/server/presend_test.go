package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatengine/chat/webhook"
)

// TestPreSendHookFlags: -pre-send-hook-url and its siblings configure a
// hook that sees every new message, signed with -pre-send-hook-secret; its
// reject is 403/400313 with the reason, and each answer is counted in
// chat_presend_hook_total.
func TestPreSendHookFlags(t *testing.T) {
	t.Parallel()
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !webhook.Verify([]byte("hk"), body, r.Header.Get(webhook.DefaultSignatureHeader)) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var m struct {
			Data map[string]any `json:"data"`
		}
		_ = json.Unmarshal(body, &m)
		switch m.Data["text"] {
		case "spam":
			_, _ = io.WriteString(w, `{"action":"reject","reason":"looks like spam"}`)
		case "rude":
			_, _ = io.WriteString(w, `{"action":"flag"}`)
		case "boom":
			w.WriteHeader(http.StatusInternalServerError)
		default:
			_, _ = io.WriteString(w, `{"action":"allow"}`)
		}
	}))
	t.Cleanup(hook.Close)
	s := start(t, "-store", "memory", "-pre-send-hook-url", hook.URL, "-pre-send-hook-secret", "hk",
		"-pre-send-hook-policy", "reject", "-allow-private-webhooks")
	tok := s.token(t)
	code, body := s.call(t, tok, "POST", "/api/v2/channel", map[string]any{"channelId": "c", "type": "standard"})
	require.Equal(t, 200, code, "%v", body)
	post := func(text string) (int, map[string]any) {
		return s.call(t, tok, "POST", "/api/v2/message", map[string]any{"channelId": "c", "type": "text", "data": map[string]any{"text": text}})
	}
	code, body = post("hello")
	require.Equal(t, 200, code, "%v", body)
	code, body = post("spam")
	require.Equal(t, 403, code)
	require.EqualValues(t, 400313, body["code"])
	require.Contains(t, body["message"], "looks like spam")
	code, body = post("rude")
	require.Equal(t, 200, code, "%v", body)
	require.EqualValues(t, 1, body["messages"].([]any)[0].(map[string]any)["flagCount"])
	code, body = post("boom")
	require.Equal(t, 403, code, "the policy is reject")
	require.EqualValues(t, 400313, body["code"])

	_, text := scrape(t, s.base+"/metrics")
	for _, want := range []string{`result="allow"} 1`, `result="reject"} 1`, `result="flag"} 1`, `result="error_rejected"} 1`, `result="error_allowed"} 0`} {
		require.Contains(t, text, "chat_presend_hook_total{"+want+"\n")
	}
	require.False(t, strings.Contains(text, "looks like spam"))
}

// TestPreSendHookUsage: the hook's flags are checked at start.
func TestPreSendHookUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-pre-send-hook-url", "https://hook.example.com/"},
		{"-pre-send-hook-secret", "k"},
		{"-pre-send-hook-url", "https://hook.example.com/", "-pre-send-hook-secret", "k", "-pre-send-hook-policy", "maybe"},
		{"-pre-send-hook-url", "https://hook.example.com/", "-pre-send-hook-secret", "k", "-pre-send-hook-timeout", "0s"},
	} {
		_, err := parseConfig(t, args, nil)
		require.Error(t, err, "%v", args)
	}
	c, err := parseConfig(t, nil, map[string]string{"CHAT_PRE_SEND_HOOK_URL": "https://hook.example.com/",
		"CHAT_PRE_SEND_HOOK_SECRET": "k", "CHAT_PRE_SEND_HOOK_TIMEOUT": "500ms", "CHAT_PRE_SEND_HOOK_POLICY": "reject"})
	require.NoError(t, err)
	require.Equal(t, "https://hook.example.com/", c.preSendURL)
	require.Equal(t, "k", c.preSendSecret)
	require.Equal(t, "500ms", c.preSendTimeout.String())
	require.Equal(t, "reject", c.preSendPolicy)
	c, err = parseConfig(t, nil, nil)
	require.NoError(t, err)
	require.Equal(t, "2s", c.preSendTimeout.String())
	require.Equal(t, "allow", c.preSendPolicy)
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestServeAnnouncesMuteExpiry: the server runs the expirer. A member
// muted for 300 ms is announced unmuted on the event stream
// (channel.didUnmuteUsers, reason expired) without anybody acting.
func TestServeAnnouncesMuteExpiry(t *testing.T) {
	t.Parallel()
	s := start(t, "-store", "memory")
	tok := s.token(t)
	code, _ := s.call(t, tok, "POST", "/api/v2/channel", map[string]any{"channelId": "room", "type": "standard", "userIds": []string{"alice"}})
	require.Equal(t, http.StatusOK, code)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", s.base+"/api/v2/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	code, _ = s.call(t, tok, "PUT", "/api/v2/channel/room/users/mute", map[string]any{"userIds": []string{"alice"}, "mutePeriod": 300})
	require.Equal(t, http.StatusOK, code)

	br := bufio.NewReader(resp.Body)
	var names []string
	for {
		line, err := br.ReadString('\n')
		require.NoError(t, err, "stream ended; events seen: %v", names)
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
		if !ok {
			continue
		}
		var f struct {
			Event string `json:"event"`
			Data  struct {
				UserIDs []string `json:"userIds"`
				Reason  string   `json:"reason"`
				ActorID string   `json:"actorId"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal([]byte(data), &f))
		names = append(names, f.Event)
		if f.Event == "channel.didUnmuteUsers" {
			require.Equal(t, []string{"alice"}, f.Data.UserIDs)
			require.Equal(t, "expired", f.Data.Reason)
			require.Empty(t, f.Data.ActorID)
			return
		}
	}
}

package main

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// searchBound is how soon after its create returns a message is found by
// a search on the SQLite store, whose index the server's indexer writes
// after the commit (docs/operations.md, "Message search").
const searchBound = time.Second

// TestSearchFindsNewMessageWithinBound: on the SQLite store, a message
// posted through the API is found by POST /messages/search within
// searchBound of its create returning, in each of several rounds (polling
// until a deadline), so the server runs the search indexer.
func TestSearchFindsNewMessageWithinBound(t *testing.T) {
	t.Parallel()
	requireSQLite(t)
	s := start(t, "-store", "sqlite:"+filepath.Join(t.TempDir(), "search.db"))
	tok := s.token(t)
	code, body := s.call(t, tok, "POST", "/api/v2/channel", map[string]any{"channelId": "general", "type": "standard"})
	require.Equal(t, 200, code, "%v", body)
	for round := 0; round < 3; round++ {
		word := fmt.Sprintf("quokka%d", round)
		code, body = s.call(t, tok, "POST", "/api/v2/message", map[string]any{
			"channelId": "general", "type": "text", "data": map[string]any{"text": "a " + word + " was seen"}})
		require.Equal(t, 200, code, "%v", body)
		deadline := time.Now().Add(searchBound)
		found := false
		for !found && time.Now().Before(deadline) {
			code, body = s.call(t, tok, "POST", "/api/v2/messages/search", map[string]any{"query": word})
			require.Equal(t, 200, code, "%v", body)
			found = len(body["messages"].([]any)) == 1
			if !found {
				time.Sleep(10 * time.Millisecond)
			}
		}
		require.True(t, found, "round %d: %q not found within %v of its create", round, word, searchBound)
	}
}

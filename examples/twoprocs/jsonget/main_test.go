package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLookup(t *testing.T) {
	var doc any
	require.NoError(t, json.Unmarshal([]byte(`{"token":"t1","messages":[{"messageId":"m1","data":{"text":"hi"}}],"n":3}`), &doc))
	for path, want := range map[string]any{
		"token": "t1", "messages.0.messageId": "m1", "messages.0.data.text": "hi", "n": 3.0,
	} {
		got, err := lookup(doc, path)
		require.NoError(t, err, path)
		require.Equal(t, want, got, path)
	}
	for _, path := range []string{"nope", "messages.1", "messages.x", "messages.-1", "token.x", "n.0"} {
		_, err := lookup(doc, path)
		require.Error(t, err, path)
	}
}

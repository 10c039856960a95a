package sqlite

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

var dataJSON = []string{
	`{"text":"hello"}`,
	`{"text":""}`,
	`{"text":"héllo wörld ✓ 😀"}`,
	`{"a":"1","b":"2","a":"3"}`,
	`{"text":"x","lang":"en"}`,
	`{"":""}`,
	`{}`,
	`null`,
	`{"text":"a \"quoted\" word"}`,
	`{"text":"line\nbreak"}`,
	`{"text":"\u00e9"}`,
	`{"text":"<b>&</b>"}`,
	`{"n":1}`,
	`{"text":"x","n":1.5}`,
	`{"b":true}`,
	`{"z":null}`,
	`{"o":{"text":"x"}}`,
	`{"l":["x"]}`,
	`{ "text":"x"}`,
	`{"text": "x"}`,
	`{"text":"x" }`,
	"{\"text\":\"bad \xff utf8\"}",
	"{\"text\":\"tab\there\"}",
	`{"text":"x",}`,
	`{"text":"x"`,
	`{"text":x}`,
	`{"text"}`,
	`{"text":"x"}}`,
	`{,}`,
	`{"`,
	`{`,
	`}`,
	``,
}

// TestFromJSONData checks that decoding message data gives what
// json.Unmarshal gives (value or failure) for every input, including
// those the flat-string fast path declines.
func TestFromJSONData(t *testing.T) {
	t.Parallel()
	for _, in := range dataJSON {
		checkFromJSONData(t, []byte(in))
	}
	m, ok := flatStrings(`{"text":"hello","lang":"en"}`)
	require.True(t, ok)
	require.Equal(t, map[string]any{"text": "hello", "lang": "en"}, m)
	for _, in := range []string{`{"text":"a\"b"}`, `{"n":1}`, `{"text": "x"}`, "{\"t\":\"\xff\"}"} {
		_, ok := flatStrings(in)
		require.False(t, ok, in)
	}
}

func checkFromJSONData(t *testing.T, in []byte) {
	t.Helper()
	var want map[string]any
	werr := json.Unmarshal(in, &want)
	var got map[string]any
	gerr := fromJSON(string(in), &got)
	if werr != nil {
		require.Error(t, gerr, "%q", in)
		return
	}
	require.NoError(t, gerr, "%q", in)
	require.Equal(t, want, got, "%q", in)
}

func FuzzFromJSONData(f *testing.F) {
	for _, in := range dataJSON {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkFromJSONData(t, in)
	})
}

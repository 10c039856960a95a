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
// those that flatStrings declines.
func TestFromJSONData(t *testing.T) {
	t.Parallel()
	for _, in := range dataJSON {
		checkFromJSONData(t, []byte(in))
	}
	for in, want := range map[string]map[string]any{
		`{"text":"hello","lang":"en"}`: {"text": "hello", "lang": "en"},
		`{ "text" : "a\"b\u00e9" }`:    {"text": "a\"b\u00e9"},
		"{\"t\":\"\xff\"}":             {"t": "\ufffd"},
		`{"t":"1","t":"2"}`:            {"t": "2"},
		`{}`:                           {},
	} {
		m, ok := flatStrings(in)
		require.True(t, ok, in)
		require.Equal(t, want, m, in)
	}
	for _, in := range []string{`{"n":1}`, `{"t":"x","o":{}}`, `{"t":"x"} {}`, `{"t":"x"`, `[]`, `"x"`} {
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

// BenchmarkDecodeData decodes the data of a text message as a page read
// does (fromJSON), and with json.Unmarshal for comparison in the same run.
// Under load, compare instructions (valgrind) or allocations, not ns/op.
//
//	go test -run '^$' -bench DecodeData -benchmem ./store/sqlite
func BenchmarkDecodeData(b *testing.B) {
	const data = `{"text":"message 12: about as long as a short line of chat"}`
	for _, v := range []struct {
		name   string
		decode func(*map[string]any) error
	}{
		{"fromJSON", func(m *map[string]any) error { return fromJSON(data, m) }},
		{"unmarshal", func(m *map[string]any) error { return json.Unmarshal([]byte(data), m) }},
	} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				var m map[string]any
				if err := v.decode(&m); err != nil || len(m) != 1 {
					b.Fatal(m, err)
				}
			}
		})
	}
}

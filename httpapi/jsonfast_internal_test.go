package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// slowDecode is encoding/json's reading of a body: the tree decodeJSON
// made before its fast path, or an error.
func slowDecode(b []byte) (map[string]any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return m, true
}

var jsonSeeds = []string{
	`{}`, ` {"a":1} `, `{"channelId":"c","type":"text","data":{"text":"hi"}}`,
	`{"a":[],"b":{},"c":[1,-2.5e+3,0,-0,1E2,0.5],"d":null,"e":true,"f":false}`,
	`{"a":"\u00e9\ud83d\ude00\n\t\"\\\/","b":"caf\u00e9 é","c":"\ud800x","d":"\xff\xfe"}`,
	`{"a":1,"a":2}`, `{"a":{"b":{"c":[[[{"d":"e"}]]]}}}`, "{\"a\":\"x\x01\"}",
	`[1]`, `"x"`, `1`, `null`, `{"a":1}{}`, `{"a":1} x`, `{"a":01}`, `{"a":-}`, `{"a":1.}`,
	`{"a":.5}`, `{"a":1e}`, `{"a":tru}`, `{"a":nul}`, `{"a" 1}`, `{"a":1,}`, `{,}`, `{"a":[1,]}`,
	`{"a":[1 2]}`, `{"a":"unterminated}`, `{"a":"\x"}`, `{"a":"\u12"}`, `{a:1}`, `{"a":1`, ``, `   `,
	"\ufeff{}", `{"a":"\u0000"}`, `{"big":123456789012345678901234567890}`, `{"k\u00e9y":1}`,
	`{"a":[` + strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001) + `]}`,
}

// TestParseObjectMatchesDecoder checks the fast path against encoding/json
// on the seeds: the same tree, or both refuse.
func TestParseObjectMatchesDecoder(t *testing.T) {
	t.Parallel()
	for _, s := range jsonSeeds {
		checkParseObject(t, []byte(s))
	}
}

func checkParseObject(t *testing.T, b []byte) {
	want, wok := slowDecode(b)
	got, gok := parseObject(b)
	if gok {
		require.True(t, wok, "fast path accepted what encoding/json refuses: %q", b)
		require.Equal(t, want, got, "%q", b)
	}
	// When the fast path refuses, decodeJSON falls back to encoding/json,
	// so refusing valid input only costs time; the seeds that are valid
	// must still take the fast path.
	if wok && len(b) < 1000 {
		require.True(t, gok, "fast path refused valid input %q", b)
	}
}

func FuzzParseObject(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, wok := slowDecode(b)
		got, gok := parseObject(b)
		if gok {
			require.True(t, wok, "fast path accepted what encoding/json refuses: %q", b)
			require.Equal(t, want, got, "%q", b)
		}
	})
}

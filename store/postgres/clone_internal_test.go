package postgres

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCloneJSONMap(t *testing.T) {
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(`{"a":1.5,"b":"x","c":[1,{"d":true},null],"e":{"f":null,"g":[]}}`), &m))
	c := cloneJSONMap(m)
	require.Equal(t, m, c)
	c["c"].([]any)[1].(map[string]any)["d"] = false
	c["e"].(map[string]any)["h"] = 1.0
	require.Equal(t, true, m["c"].([]any)[1].(map[string]any)["d"], "the copy is deep")
	require.NotContains(t, m["e"], "h")
	// Values encoding/json would not produce go through a JSON round trip.
	type custom struct{ N int }
	odd := map[string]any{"k": custom{N: 2}, "n": json.Number("7")}
	require.Equal(t, map[string]any{"k": map[string]any{"N": 2.0}, "n": 7.0}, cloneJSONMap(odd))
	require.Nil(t, cloneJSONMap(nil))
}

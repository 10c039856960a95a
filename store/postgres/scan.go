package postgres

import (
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/lib/pq"
)

// Values go to Postgres as JSON text (json columns), text[] literals and
// timestamptz. They come back as the memory store returns them: JSON
// numbers as float64, times in UTC with millisecond precision, nil maps and
// nullable arrays as nil; tags (NOT NULL columns) come back as an empty
// slice when there are none.

// jsonArg encodes a JSON object; a nil map is SQL NULL.
func jsonArg(m map[string]any) (any, error) {
	if m == nil {
		return nil, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, chat.WrapError(chat.CodeBadRequest, err, "value cannot be stored as JSON")
	}
	return string(b), nil
}

// jsonMap decodes a json column; SQL NULL is a nil map.
func jsonMap(b []byte) (map[string]any, error) {
	if b == nil {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// hashflagArg encodes a Hashflag; the zero value (unflagged, nil Hash) is
// SQL NULL.
func hashflagArg(h chat.Hashflag) any {
	if h.Bits == 0 && h.Hashes == 0 && h.Hash == nil {
		return nil
	}
	b, _ := json.Marshal(h)
	return string(b)
}

func scanHashflag(b []byte) (chat.Hashflag, error) {
	var h chat.Hashflag
	if b == nil {
		return h, nil
	}
	err := json.Unmarshal(b, &h)
	return h, err
}

// countsArg encodes reaction counts; nil is SQL NULL.
func countsArg(m map[string]int) any {
	if m == nil {
		return nil
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func scanCounts(b []byte) (map[string]int, error) {
	if b == nil {
		return nil, nil
	}
	var m map[string]int
	err := json.Unmarshal(b, &m)
	return m, err
}

// textArray is a text[] argument; nil is SQL NULL.
func textArray(a []string) driver.Valuer { return pq.StringArray(a) }

// tagsArg is the value of a NOT NULL tags column (nil is stored as '{}').
func tagsArg(a []string) driver.Valuer {
	if a == nil {
		return pq.StringArray{}
	}
	return pq.StringArray(a)
}

// tagsOut returns scanned tags (never nil: the column is NOT NULL).
func tagsOut(a pq.StringArray) []string {
	if a == nil {
		return []string{}
	}
	return []string(a)
}

// arrayOut returns a scanned nullable text[]: SQL NULL is nil.
func arrayOut(a pq.StringArray) []string {
	if a == nil {
		return nil
	}
	return []string(a)
}

func timeArg(t chat.Time) time.Time { return t.Time.UTC().Truncate(time.Millisecond) }

func timePtrArg(t *chat.Time) any {
	if t == nil {
		return nil
	}
	return timeArg(*t)
}

func ct(t time.Time) chat.Time { return chat.NewTime(t) }

func ctp(t sql.NullTime) *chat.Time {
	if !t.Valid {
		return nil
	}
	v := chat.NewTime(t.Time)
	return &v
}

// scanner is *sql.Rows or *sql.Row.
type scanner interface{ Scan(dest ...any) error }

// inIDOrder returns found in the order of ids. With dup nil an id given
// twice appears once; otherwise it appears again as dup's deep copy.
func inIDOrder[T any](ids []string, found []T, key func(T) string, dup func(T) T) []T {
	byID := make(map[string]T, len(found))
	for _, v := range found {
		byID[key(v)] = v
	}
	seen := make(map[string]bool, len(found))
	out := make([]T, 0, len(found))
	for _, id := range ids {
		v, ok := byID[id]
		if !ok {
			continue
		}
		if seen[id] {
			if dup == nil {
				continue
			}
			v = dup(v)
		}
		seen[id] = true
		out = append(out, v)
	}
	return out
}

// cloneJSONMap deep-copies a decoded JSON object.
func cloneJSONMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	if out, ok := cloneJSONValue(m).(map[string]any); ok {
		return out
	}
	b, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// cloneJSONValue deep-copies a value made of what encoding/json decodes
// into (maps, slices, strings, float64, json.Number, bool, nil); for
// anything else it returns nil, and cloneJSONMap falls back to a JSON
// round trip.
func cloneJSONValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c := cloneJSONValue(e)
			if c == nil && e != nil {
				return nil
			}
			out[k] = c
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c := cloneJSONValue(e)
			if c == nil && e != nil {
				return nil
			}
			out[i] = c
		}
		return out
	case string, float64, bool, json.Number:
		return x
	}
	return nil
}

// msTime is a time argument in UTC truncated to milliseconds.
func msTime(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

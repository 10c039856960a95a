package httpapi

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestEncodeMatchesJSON checks that the hand encoder of message lists
// produces exactly json.Marshal's bytes.
func TestEncodeMatchesJSON(t *testing.T) {
	t.Parallel()
	strs := []string{"", "plain", "<script>&amp;</script>", "quote \" and \\ backslash",
		"ctl \x00\x01\x08\x0c\n\r\t\x1f\x7f", "invalid \xff\xfe utf-8 \xe2\x82", "sep \u2028 \u2029 end",
		"emoji 😀 and é", "a/b?c=d#e"}
	tm := chat.NewTime(time.Date(2018, 11, 30, 11, 39, 20, 149e6, time.UTC))
	rng := rand.New(rand.NewPCG(1, 2))
	var value func(depth int) any
	value = func(depth int) any {
		switch n := rng.IntN(10); {
		case n == 0:
			return nil
		case n == 1:
			return rng.IntN(2) == 0
		case n == 2:
			fs := []float64{0, -0.0, 1, -1.5, 1e-7, 1e21, 123456789012345678, 3.14159, 1e-6, 5e-324, math.MaxFloat64}
			return fs[rng.IntN(len(fs))]
		case n == 3 && depth < 3:
			m := map[string]any{}
			for i := rng.IntN(4); i > 0; i-- {
				m[strs[rng.IntN(len(strs))]] = value(depth + 1)
			}
			return m
		case n == 4 && depth < 3:
			a := []any{}
			for i := rng.IntN(4); i > 0; i-- {
				a = append(a, value(depth+1))
			}
			return a
		case n == 5:
			return []any(nil)
		case n == 6:
			return map[string]any(nil)
		case n == 7:
			return json.Number("12.50")
		}
		return strs[rng.IntN(len(strs))]
	}
	object := func() map[string]any {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1:
			return map[string]any{}
		}
		m := map[string]any{}
		for i := rng.IntN(12); i >= 0; i-- {
			m[strs[rng.IntN(len(strs))]+string(rune('a'+i))] = value(0)
		}
		return m
	}
	for i := 0; i < 500; i++ {
		l := &chat.MessageList{}
		for j := rng.IntN(4); j > 0; j-- {
			m := chat.Message{MessageID: strs[rng.IntN(len(strs))], ChannelID: "c", UserID: strs[rng.IntN(len(strs))],
				Type: "text", Data: object(), ChannelSegment: rng.Int64N(1 << 40), ChildrenNumber: rng.IntN(5),
				FlagCount: -rng.IntN(3), IsDeleted: rng.IntN(2) == 0, CreatedAt: tm, UpdatedAt: chat.NewTime(time.Unix(rng.Int64N(1<<35), 0)),
				ReactionsCount: rng.IntN(9)}
			if rng.IntN(2) == 0 {
				m.Tags = []string{strs[rng.IntN(len(strs))], "t"}
			}
			if rng.IntN(2) == 0 {
				m.ParentID = strs[rng.IntN(len(strs))]
			}
			if rng.IntN(2) == 0 {
				m.EditedAt = &tm
			}
			if rng.IntN(3) == 0 {
				m.Hashflag = chat.Hashflag{Bits: 64, Hashes: 3, Hash: []uint32{0, 1 << 31, math.MaxUint32}}
			} else if rng.IntN(2) == 0 {
				m.Hashflag.Hash = []uint32{}
			}
			if rng.IntN(2) == 0 {
				m.Reactions = map[string]int{}
				for k := rng.IntN(3); k > 0; k-- {
					m.Reactions[strs[rng.IntN(len(strs))]] = rng.IntN(100)
				}
			}
			l.Messages = append(l.Messages, m)
		}
		for j := rng.IntN(3); j > 0; j-- {
			u := chat.User{UserID: strs[rng.IntN(len(strs))], DisplayName: strs[rng.IntN(len(strs))], Metadata: object(),
				FlagCount: rng.IntN(3), IsGlobalBan: rng.IntN(2) == 0, CreatedAt: tm, UpdatedAt: chat.Forever}
			if rng.IntN(2) == 0 {
				u.Roles = []string{"user", strs[rng.IntN(len(strs))]}
			}
			l.Users = append(l.Users, u)
		}
		switch rng.IntN(4) {
		case 1:
			l.Paging = &chat.Paging{}
		case 2:
			l.Paging = &chat.Paging{Next: "n<1>"}
		case 3:
			l.Paging = &chat.Paging{Next: "n", Previous: "p&"}
		}
		want, err := json.Marshal(l)
		require.NoError(t, err)
		got, err := appendJSON(nil, l)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
	// A value json.Marshal refuses is refused too.
	_, err := appendJSON(nil, &chat.MessageList{Messages: []chat.Message{{Data: map[string]any{"x": math.NaN()}}}})
	require.Error(t, err)
	// Times outside years 0-9999 and the success body.
	for _, tt := range []chat.Time{{}, chat.Forever, chat.NewTime(time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC)), chat.NewTime(time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC))} {
		want, err := json.Marshal(tt)
		require.NoError(t, err)
		require.Equal(t, `"`+tt.UTC().Format("2006-01-02T15:04:05.000Z")+`"`, string(want))
		require.Equal(t, string(want), string(tt.AppendJSON(nil)))
	}
	for _, v := range []any{successBody{Success: true}, successBody{}, errorBody{Status: "error", Code: 400000, Message: "x <y>", Data: errorData{Detail: []chat.Detail{}}}} {
		want, err := json.Marshal(v)
		require.NoError(t, err)
		got, err := appendJSON(nil, v)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
}

package console

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
)

// funcs are the helpers the templates use.
var funcs = map[string]any{
	"when": func(t chat.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"whenp": func(t *chat.Time) string {
		if t == nil || t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	// hookFlagged reports whether the pre-send hook flagged m: its flagger,
	// the empty id, is in the message's hashflag (a bloom filter, so
	// rarely a false positive; never a miss).
	"hookFlagged": func(m chat.Message) bool {
		return m.FlagCount > 0 && chat.BloomContains(m.Hashflag, chat.PreSendHookFlagger)
	},
	"esc":  url.PathEscape,
	"qesc": url.QueryEscape,
	"join": strings.Join,
	// count writes n with its noun, singular for 1: count 1 "member" is
	// "1 member", count 3 "member" is "3 members".
	"count": func(n any, noun string) string {
		v := fmt.Sprint(n)
		if v == "1" {
			return v + " " + noun
		}
		return v + " " + noun + "s"
	},
	"json": func(v any) string {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return "?"
		}
		return string(b)
	},
	"text": func(m chat.Message) string {
		s, _ := m.Data["text"].(string)
		return s
	},
	"caption": func(m chat.Message) string {
		s, _ := m.Data["caption"].(string)
		return s
	},
	"field": func(m chat.Message, key string) string {
		s, _ := m.Data[key].(string)
		return s
	},
	// imageURL returns the signed link of an image message's rendition
	// (falling back to the next smaller one), "" when there is none.
	"imageURL": func(m chat.Message, size string) string {
		urls, _ := m.Data["urls"].(map[string]any)
		for _, s := range []string{size, "medium", "small", "large"} {
			if u, _ := urls[s].(string); u != "" {
				return u
			}
		}
		return ""
	},
	"reactions": func(m chat.Message) []reactionCount {
		out := make([]reactionCount, 0, len(m.Reactions))
		for n, c := range m.Reactions {
			out = append(out, reactionCount{n, c})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		return out
	},
	"muteLeft": func(t *chat.Time) string {
		if t == nil {
			return ""
		}
		if t.Year() > 9000 {
			return "forever"
		}
		return "until " + t.UTC().Format("2006-01-02 15:04 UTC")
	},
	"div1000": func(ms int) int { return (ms + 999) / 1000 },
	"seconds": func(ms int) string {
		return (time.Duration(ms) * time.Millisecond).String()
	},
	"hasRole": func(u chat.User, role string) bool {
		for _, r := range u.Roles {
			if r == role {
				return true
			}
		}
		return false
	},
}

// reactionCount is one reaction name with its count.
type reactionCount struct {
	Name  string
	Count int
}

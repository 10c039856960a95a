package chat

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMentionRuns(t *testing.T) {
	cases := []struct {
		text string
		want []mentionRun
	}{
		{"no mentions here", nil},
		{"@bob hi", []mentionRun{{"bob", "bob"}}},
		{"hi @bob, and @carol.", []mentionRun{{"bob,", "bob"}, {"carol.", "carol"}}},
		{"(@bob) @", []mentionRun{{"bob)", "bob"}}},
		{"mail me at bob@example.com", nil},
		{"a_@bob x@@bob", nil},
		{"@@bob", []mentionRun{{"@bob", "@bob"}}},
		{"\t@ann\n@li.lu @x!?", []mentionRun{{"ann", "ann"}, {"li.lu", "li.lu"}, {"x!?", "x"}}},
		{"«@élodie» @…", []mentionRun{{"élodie»", "élodie»"}}},
		{"@a@b", []mentionRun{{"a@b", "a@b"}}},
		{"@\u00a0x", nil},
	}
	for _, c := range cases {
		require.Equal(t, c.want, mentionRuns(c.text, 100), "%q", c.text)
	}
	require.Len(t, mentionRuns("@a @b @c @d", 2), 2, "at most limit")
}

// BenchmarkMentionsNone is what a message without mentions adds to a
// create: finding its text and seeing that it holds no @ (no store read).
func BenchmarkMentionsNone(b *testing.B) {
	s := &Service{}
	data := map[string]any{"text": "Hello team, the release notes for this week are ready. Please read them at https://docs.example.com/pub/notes before the meeting."}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		ids, err := s.mentions(ctx, nil, "c", "u", mentionText(MessageTypeText, data), nil)
		if err != nil || ids != nil {
			b.Fatal(ids, err)
		}
	}
}

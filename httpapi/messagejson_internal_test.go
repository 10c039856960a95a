package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestMessageListJSON checks that message lists written in their wire
// shape are byte for byte what encoding/json makes of the
// *chat.MessageList: every field of chat.Message, data of every kind, edits,
// odd timestamps and characters that encoding/json escapes. A field added
// to chat.Message and not to messageJSON fails it.
func TestMessageListJSON(t *testing.T) {
	at := func(y int, ms int) chat.Time {
		return chat.NewTime(time.Date(y, 3, 4, 5, 6, 7, ms*1e6, time.UTC))
	}
	edited := at(2026, 9)
	far := chat.Forever
	full := chat.Message{
		MessageID: "m1", ChannelID: "c<1>", UserID: "u&1", Type: chat.MessageTypeText,
		Data: map[string]any{"text": "hi <b>&</b> \u2028 é \x01"}, Tags: []string{"a", "b"}, ParentID: "p1",
		IsDeleted: true, CreatedAt: at(2026, 0), EditedAt: &edited, UpdatedAt: at(2026, 999),
		ChannelSegment: 7, ChildrenNumber: 2, FlagCount: 1,
		Hashflag:  chat.Hashflag{Bits: 64, Hashes: 3, Hash: []uint32{1, 2}},
		Reactions: map[string]int{"like": 2, "haha": 1}, ReactionsCount: 3,
		MentionedUserIDs: []string{"u<2>", "v"},
	}
	msg := func(data map[string]any) chat.Message {
		m := full
		m.Data, m.EditedAt, m.ParentID = data, nil, ""
		return m
	}
	odd := msg(map[string]any{"text": "year 10000"})
	odd.CreatedAt, odd.UpdatedAt, odd.EditedAt = at(10000, 1), at(1, 2), &far
	// Never changed (updatedAt is createdAt), then edited at that instant.
	same := msg(map[string]any{"text": "same"})
	same.UpdatedAt = same.CreatedAt
	sameEdited := same
	sameEdited.EditedAt = &same.CreatedAt
	// The next second, at the same millisecond as the messages before it
	// (the shape reuses the text of a second already formatted).
	nextSecond := msg(map[string]any{"text": "next second"})
	nextSecond.CreatedAt = chat.NewTime(time.Date(2026, 3, 4, 5, 6, 8, 0, time.UTC))
	nextSecond.UpdatedAt = at(2026, 0)
	lists := []*chat.MessageList{
		{Messages: []chat.Message{}, Users: []chat.User{}},
		{},
		{Messages: []chat.Message{full}, Users: []chat.User{{UserID: "u&1", DisplayName: "U", Roles: []string{}, Metadata: map[string]any{}}},
			Paging: &chat.Paging{Next: "n", Previous: "p"}},
		{Messages: []chat.Message{
			msg(map[string]any{"text": "plain"}),
			msg(map[string]any{"text": "two keys", "extra": 1.5}),
			msg(map[string]any{"text": 5}),
			msg(map[string]any{"card": map[string]any{"z": true, "a": []any{"x", nil}}}),
			msg(map[string]any{}),
			msg(nil),
			func() chat.Message { m := msg(nil); m.MentionedUserIDs = []string{}; return m }(),
			odd,
			same,
			full,
			same,
			sameEdited,
			same,
			nextSecond,
			same,
			msg(map[string]any{"urls": map[string]any{"small": "/api/v2/messages/m/images?size=small&exp=1&sig=x"}, "text": "caption"}),
		}, Users: []chat.User{}},
	}
	lists = append(lists, benchMessagePage(t, 50), lists[1]) // a big answer, then a small one from the same pooled shape
	for i, l := range lists {
		want, err := json.Marshal(l)
		require.NoError(t, err)
		w := &bodyWriter{h: http.Header{}}
		writeResult(w, l)
		require.Equal(t, string(want)+"\n", w.b.String(), "list %d", i)
	}
}

// bodyWriter is a ResponseWriter that keeps the body.
type bodyWriter struct {
	h http.Header
	b bytes.Buffer
}

func (w *bodyWriter) Header() http.Header         { return w.h }
func (w *bodyWriter) Write(b []byte) (int, error) { return w.b.Write(b) }
func (w *bodyWriter) WriteHeader(int)             {}

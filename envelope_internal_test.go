package chat

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A webhook body is put together from the encoded data (EnvelopeBody); it
// must be byte for byte what encoding/json writes for the Envelope of the
// data the event log holds.
func TestEnvelopeBodyEncodesLikeEnvelope(t *testing.T) {
	t.Parallel()
	now := NewTime(time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC))
	m := Message{MessageID: "m1", ChannelID: "c", UserID: "u", Type: MessageTypeText, ChannelSegment: 7,
		Data: map[string]any{"text": "<b>&</b> ünïcödé \u2028 \"quoted\"", "n": 1.5, "nested": map[string]any{"z": []any{1, "a"}, "a": nil}},
		Tags: []string{"x"}, MentionedUserIDs: []string{"v"}, CreatedAt: now, UpdatedAt: now}
	presentMessage(&m)
	u := User{UserID: "u", DisplayName: "U <1>", Roles: []string{RoleGlobalAdmin}, Metadata: map[string]any{"k": "v"}, CreatedAt: now, UpdatedAt: now}
	presentUser(&u)
	for name, v := range map[string]any{
		"message": MessageEventData{Messages: []Message{m}, Users: []User{u}},
		"map":     map[string]any{"b": "<>", "a": []string{"&"}},
		"raw":     struct{ R json.RawMessage }{json.RawMessage(`{ "spaced" : [ 1, 2 ] }`)},
		"string":  "x<y",
	} {
		t.Run(name, func(t *testing.T) {
			data, err := json.Marshal(v)
			require.NoError(t, err)
			want, err := json.Marshal(Envelope{RequestID: "r", WebhookID: "w", Event: "e", Data: data})
			require.NoError(t, err)
			require.Equal(t, string(want), string(EnvelopeBody("r", "w", "e", data)))
			// Names that encoding/json escapes.
			want, err = json.Marshal(Envelope{RequestID: "<r&>", WebhookID: "w\"\u2028", Event: "e\n", Data: data})
			require.NoError(t, err)
			require.Equal(t, string(want), string(EnvelopeBody("<r&>", "w\"\u2028", "e\n", data)))
			require.True(t, json.Valid(EnvelopeBody("r", "w", "e", data)))
		})
	}
}

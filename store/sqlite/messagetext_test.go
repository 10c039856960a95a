package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestMessageTextColumn checks the text column of migration 0024: written
// for data that is exactly {"text": <string>} and only then, kept in step
// by every write of data (edits, deletes, and by the trigger a statement
// that does not write it), and read as the data decoding the JSON would
// give.
func TestMessageTextColumn(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx := context.Background()
	now := chat.NewTime(t0)
	datas := map[string]map[string]any{
		"plain":   {"text": "hello <b> & \"quoted\"\n\ttab é \u2028"},
		"empty":   {"text": ""},
		"nul":     {"text": "a\x00b"},
		"invalid": {"text": "a\xffb"},
		"more":    {"text": "x", "n": 1.5},
		"number":  {"text": 5.0},
		"other":   {"caption": "c"},
	}
	ids := []string{"plain", "empty", "nul", "invalid", "more", "number", "other"}
	// What decoding the stored JSON gives: the data of a message read back.
	decoded := func(d map[string]any) map[string]any {
		b, err := json.Marshal(d)
		require.NoError(t, err)
		var out map[string]any
		require.NoError(t, json.Unmarshal(b, &out))
		return out
	}
	texts := func() map[string]sql.NullString {
		out := map[string]sql.NullString{}
		require.NoError(t, s.View(ctx, func(stx chat.Tx) error {
			for _, id := range ids {
				var v sql.NullString
				if err := stx.(*tx).row(ctx, "SELECT text FROM messages WHERE message_id = ?", []any{id}, &v); err != nil {
					return err
				}
				out[id] = v
			}
			return nil
		}))
		return out
	}
	read := func() map[string]*chat.Message {
		out := map[string]*chat.Message{}
		require.NoError(t, s.View(ctx, func(stx chat.Tx) error {
			page, err := stx.QueryMessages(ctx, chat.MessageFilter{ChannelID: "c", Limit: 20, IncludeDeleted: true})
			require.NoError(t, err)
			for _, m := range page {
				one, err := stx.GetMessage(ctx, m.MessageID)
				require.NoError(t, err)
				require.Equal(t, m, one)
				out[m.MessageID] = m
			}
			return nil
		}))
		return out
	}
	require.NoError(t, s.Update(ctx, func(stx chat.Tx) error {
		if err := stx.CreateChannel(ctx, testChannel("c")); err != nil {
			return err
		}
		for i, id := range ids {
			m := &chat.Message{MessageID: id, ChannelID: "c", UserID: "u1", Type: chat.MessageTypeText,
				Data: datas[id], ChannelSegment: int64(i + 1), CreatedAt: now, UpdatedAt: now}
			if err := stx.CreateMessage(ctx, m); err != nil {
				return err
			}
		}
		return nil
	}))
	got := texts()
	require.Equal(t, sql.NullString{String: datas["plain"]["text"].(string), Valid: true}, got["plain"])
	require.Equal(t, sql.NullString{String: "", Valid: true}, got["empty"])
	for _, id := range []string{"nul", "invalid", "more", "number", "other"} {
		require.False(t, got[id].Valid, id)
	}
	msgs := read()
	for _, id := range ids {
		require.Equal(t, decoded(datas[id]), msgs[id].Data, id)
	}
	require.Equal(t, "a\ufffdb", msgs["invalid"].Data["text"])

	// Edits: to data with more than the text, and back.
	edit := func(id string, data map[string]any) {
		require.NoError(t, s.Update(ctx, func(stx chat.Tx) error {
			m, err := stx.GetMessage(ctx, id)
			if err != nil {
				return err
			}
			m.Data = data
			return stx.UpdateMessage(ctx, m)
		}))
	}
	edit("plain", map[string]any{"text": "hello", "extra": true})
	require.False(t, texts()["plain"].Valid)
	require.Equal(t, map[string]any{"text": "hello", "extra": true}, read()["plain"].Data)
	edit("more", map[string]any{"text": "now plain"})
	require.Equal(t, sql.NullString{String: "now plain", Valid: true}, texts()["more"])
	require.Equal(t, map[string]any{"text": "now plain"}, read()["more"].Data)

	// A statement that writes data and not text clears text (the trigger).
	require.NoError(t, s.Update(ctx, func(stx chat.Tx) error {
		_, err := stx.(*tx).exec(ctx, `UPDATE messages SET data = '{"text":"raw"}' WHERE message_id = 'more'`)
		return err
	}))
	require.False(t, texts()["more"].Valid)
	require.Equal(t, map[string]any{"text": "raw"}, read()["more"].Data)

	// Deletes empty the data and the text.
	require.NoError(t, s.Update(ctx, func(stx chat.Tx) error {
		_, err := stx.SoftDeleteMessages(ctx, "c", "u1", t0.Add(time.Minute))
		return err
	}))
	got, msgs = texts(), read()
	for _, id := range ids {
		require.False(t, got[id].Valid, id)
		require.True(t, msgs[id].IsDeleted, id)
		require.Equal(t, map[string]any{}, msgs[id].Data, id)
	}
}

package memory_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/store/storetest"
)

func harness() storetest.Harness {
	return storetest.Harness{
		New: func(t *testing.T) chat.Store {
			s := memory.New()
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
	}
}

func TestConformance(t *testing.T) {
	storetest.Run(t, harness())
}

// Writes through a View's Tx are refused: View holds only the read lock.
func TestViewIsReadOnly(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	err := s.View(ctx, func(tx chat.Tx) error {
		return tx.CreateChannel(ctx, &chat.Channel{ChannelID: "c"})
	})
	require.Equal(t, chat.CodeInternal, chat.ErrorCode(err))
	err = s.View(ctx, func(tx chat.Tx) error {
		_, err := tx.GetChannel(ctx, "c")
		return err
	})
	require.ErrorIs(t, err, chat.ErrNotFound)
}

// A Tx used after its transaction ended panics instead of touching state.
func TestTxAfterEnd(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	var kept chat.Tx
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error { kept = tx; return nil }))
	const msg = "memory store: transaction used after it ended"
	require.PanicsWithError(t, msg, func() { _ = kept.CreateChannel(ctx, &chat.Channel{ChannelID: "c"}) })
	require.PanicsWithError(t, msg, func() { _, _ = kept.GetChannel(ctx, "c") })
	require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
		_, err := tx.GetChannel(ctx, "c")
		require.ErrorIs(t, err, chat.ErrNotFound)
		return nil
	}))
}

// Close makes later transactions fail with CodeUnavailable and closes the
// outbox watchers.
func TestClose(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	ch, err := s.WatchOutbox(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "idempotent")
	_, ok := <-ch
	require.False(t, ok, "watch channel closed by Close")
	err = s.Update(ctx, func(tx chat.Tx) error { return nil })
	require.ErrorIs(t, err, chat.ErrUnavailable)
	err = s.View(ctx, func(tx chat.Tx) error { return nil })
	require.ErrorIs(t, err, chat.ErrUnavailable)
	_, err = s.WatchOutbox(ctx)
	require.ErrorIs(t, err, chat.ErrUnavailable)
}

// Custom data is stored as the JSON it would be in a SQL store: numbers
// come back float64, typed slices and structs as []any and map[string]any.
func TestJSONNormalization(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	type size struct {
		Name  string `json:"name"`
		Width int    `json:"width"`
	}
	data := map[string]any{
		"int": 3, "int64": int64(-4), "uint8": uint8(5), "f32": float32(0.5),
		"strs": []string{"a"}, "sizes": []size{{"small", 160}}, "raw": struct{ X int }{1},
	}
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error {
		return tx.CreateMessage(ctx, &chat.Message{MessageID: "m", ChannelID: "c", ChannelSegment: 1, Data: data})
	}))
	var got *chat.Message
	require.NoError(t, s.View(ctx, func(tx chat.Tx) (err error) { got, err = tx.GetMessage(ctx, "m"); return err }))
	require.Equal(t, map[string]any{
		"int": 3.0, "int64": -4.0, "uint8": 5.0, "f32": 0.5,
		"strs":  []any{"a"},
		"sizes": []any{map[string]any{"name": "small", "width": 160.0}},
		"raw":   map[string]any{"X": 1.0},
	}, got.Data)
	// A value JSON cannot hold is refused, and the tx rolls back.
	err := s.Update(ctx, func(tx chat.Tx) error {
		return tx.CreateMessage(ctx, &chat.Message{MessageID: "bad", ChannelID: "c", ChannelSegment: 2, Data: map[string]any{"ch": make(chan int)}})
	})
	require.Error(t, err)
}

// A transaction that creates several messages (top-level and comments,
// in an existing and a new channel) and fails leaves no trace in any index:
// queries by channel, top level, parent and author see only committed
// messages, and the same writes succeed afterwards.
func TestCreateMessagesRolledBack(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	at := chat.NewTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	msg := func(id, ch, parent string, seg int64) *chat.Message {
		return &chat.Message{MessageID: id, ChannelID: ch, UserID: "u", Type: chat.MessageTypeText, ParentID: parent,
			Data: map[string]any{"text": id}, Tags: []string{}, CreatedAt: at, UpdatedAt: at, ChannelSegment: seg}
	}
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error { return tx.CreateMessage(ctx, msg("m1", "c", "", 1)) }))
	writes := func(tx chat.Tx) error {
		for _, m := range []*chat.Message{msg("m2", "c", "", 2), msg("m3", "c", "m1", 3), msg("m4", "c", "m3", 4), msg("n1", "d", "", 1), msg("m5", "c", "", 5)} {
			if err := tx.CreateMessage(ctx, m); err != nil {
				return err
			}
		}
		return nil
	}
	boom := fmt.Errorf("boom")
	err := s.Update(ctx, func(tx chat.Tx) error {
		require.NoError(t, writes(tx))
		return boom
	})
	require.ErrorIs(t, err, boom)

	ids := func(f chat.MessageFilter) []string {
		var out []string
		require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
			ms, err := tx.QueryMessages(ctx, f)
			for _, m := range ms {
				out = append(out, m.MessageID)
			}
			return err
		}))
		return out
	}
	require.Equal(t, []string{"m1"}, ids(chat.MessageFilter{ChannelID: "c"}))
	require.Equal(t, []string{"m1"}, ids(chat.MessageFilter{ChannelID: "c", TopLevel: true}))
	require.Empty(t, ids(chat.MessageFilter{ParentID: "m1"}))
	require.Empty(t, ids(chat.MessageFilter{ChannelID: "d"}))
	require.NoError(t, s.View(ctx, func(tx chat.Tx) error {
		m1, err := tx.GetMessage(ctx, "m1")
		require.NoError(t, err)
		require.Zero(t, m1.ChildrenNumber)
		_, err = tx.GetMessage(ctx, "m2")
		require.ErrorIs(t, err, chat.ErrNotFound)
		return nil
	}))

	require.NoError(t, s.Update(ctx, writes))
	require.Equal(t, []string{"m1", "m2", "m3", "m4", "m5"}, ids(chat.MessageFilter{ChannelID: "c"}))
	require.Equal(t, []string{"m5", "m2", "m1"}, ids(chat.MessageFilter{ChannelID: "c", TopLevel: true, Descending: true}))
	require.Equal(t, []string{"m3"}, ids(chat.MessageFilter{ParentID: "m1"}))
	require.Equal(t, []string{"m4"}, ids(chat.MessageFilter{ParentID: "m3"}))
	require.Equal(t, []string{"n1"}, ids(chat.MessageFilter{ChannelID: "d"}))
	var deleted []string
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) (err error) {
		deleted, err = tx.SoftDeleteUserMessages(ctx, "u", at.Time)
		return err
	}))
	require.Equal(t, []string{"m1", "m2", "m3", "m4", "m5", "n1"}, deleted, "the author's messages oldest first (createdAt, then id)")
}

// Custom data reads back as exactly the values it was normalized to,
// including nested empty, nil and special values.
func TestMessageDataRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	data := map[string]any{
		"": "", "null": nil, "t": true, "f": false, "neg0": math.Copysign(0, -1), "big": 1e308, "small": -5e-324,
		"s": "snowman \u2603 and \x00", "empty": map[string]any{}, "nilmap": map[string]any(nil), "arr": []any{},
		"nested": []any{1.5, "x", []any{nil, map[string]any{"k": []any{true}}}},
	}
	want := map[string]any{}
	for k, v := range data {
		want[k] = v
	}
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error {
		return tx.CreateMessage(ctx, &chat.Message{MessageID: "m", ChannelID: "c", ChannelSegment: 1, Data: data})
	}))
	data["s"] = "changed" // the store kept its own copy
	for i := 0; i < 2; i++ {
		var got *chat.Message
		require.NoError(t, s.View(ctx, func(tx chat.Tx) (err error) { got, err = tx.GetMessage(ctx, "m"); return err }))
		require.Equal(t, want, got.Data)
		require.True(t, math.Signbit(got.Data["neg0"].(float64)))
		got.Data["s"] = "mutated" // the copy handed out is the caller's
		got.Data["nested"].([]any)[0] = 0.0
	}
	err := s.Update(ctx, func(tx chat.Tx) error {
		return tx.CreateMessage(ctx, &chat.Message{MessageID: "nan", ChannelID: "c", ChannelSegment: 2, Data: map[string]any{"x": []any{math.NaN()}}})
	})
	require.Equal(t, chat.CodeBadRequest, chat.ErrorCode(err))
}

// BenchmarkCreateMessage measures the engine's hot write path: allocate a
// segment and insert the message in one Update.
func BenchmarkCreateMessage(b *testing.B) {
	ctx := context.Background()
	s := memory.New()
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	const channels = 64
	require.NoError(b, s.Update(ctx, func(tx chat.Tx) error {
		for i := 0; i < channels; i++ {
			c := &chat.Channel{ChannelID: fmt.Sprintf("c%02d", i), Type: chat.ChannelTypeStandard, DisplayName: "c",
				Metadata: map[string]any{"k": "v"}, Tags: []string{"t"}, CreatedAt: chat.NewTime(now), UpdatedAt: chat.NewTime(now)}
			if err := tx.CreateChannel(ctx, c); err != nil {
				return err
			}
		}
		return nil
	}))
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = fmt.Sprintf("%024x", i)
	}
	chIDs := make([]string, channels)
	for i := range chIDs {
		chIDs[i] = fmt.Sprintf("c%02d", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		channelID := chIDs[i%channels]
		err := s.Update(ctx, func(tx chat.Tx) error {
			c, err := tx.NextSegment(ctx, channelID, now)
			if err != nil {
				return err
			}
			return tx.CreateMessage(ctx, &chat.Message{
				MessageID: ids[i], ChannelID: channelID, UserID: "u", Type: chat.MessageTypeText,
				Data: map[string]any{"text": "hello, world"}, Tags: []string{"x"},
				CreatedAt: c.LastActivity, UpdatedAt: c.LastActivity, ChannelSegment: c.MessageCount,
			})
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

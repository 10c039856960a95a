package memory_test

import (
	"context"
	"fmt"
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
	require.Error(t, err)
	err = s.View(ctx, func(tx chat.Tx) error {
		_, err := tx.GetChannel(ctx, "c")
		return err
	})
	require.ErrorIs(t, err, chat.ErrNotFound)
}

// A Tx used after its transaction ended fails instead of touching state.
func TestTxAfterEnd(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	var kept chat.Tx
	require.NoError(t, s.Update(ctx, func(tx chat.Tx) error { kept = tx; return nil }))
	require.Error(t, kept.CreateChannel(ctx, &chat.Channel{ChannelID: "c"}))
	_, err := kept.GetChannel(ctx, "c")
	require.Error(t, err)
	require.NotErrorIs(t, err, chat.ErrNotFound)
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

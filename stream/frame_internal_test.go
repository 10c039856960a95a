package stream

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
)

// TestFrameEncodedOnce: every subscriber of an event receives the same
// encoded bytes (one encoding per event, not per subscriber), and an idle
// subscription holds no queue buffer.
func TestFrameEncodedOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc, err := chat.New(ctx, memory.New(), chat.Config{})
	require.NoError(t, err)
	admin, _, err := svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	_, err = svc.CreateChannel(ctx, admin.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice"}})
	require.NoError(t, err)
	h := New(svc, Config{})
	require.NoError(t, h.Start(ctx))
	defer func() { _ = h.Stop(context.Background()) }()
	a, err := h.Subscribe(ctx, Filter{Admin: true}, nil)
	require.NoError(t, err)
	b, err := h.Subscribe(ctx, Filter{UserID: "alice"}, nil)
	require.NoError(t, err)
	require.Nil(t, a.queue)
	_, err = svc.CreateMessage(ctx, "alice", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: chat.TextData("hi")})
	require.NoError(t, err)
	fa, err := a.Next(ctx)
	require.NoError(t, err)
	fb, err := b.Next(ctx)
	require.NoError(t, err)
	require.Equal(t, chat.EventMessageDidCreate, fa.Event)
	ja, jb := fa.JSON(), fb.JSON()
	require.JSONEq(t, string(mustJSON(Frame{ID: fa.ID, Event: fa.Event, Data: fa.Data, CreatedAt: fa.CreatedAt})), string(ja))
	require.Same(t, &ja[0], &jb[0], "each subscriber has its own encoding")
	a.qmu.Lock()
	defer a.qmu.Unlock()
	require.Nil(t, a.queue, "a drained queue keeps its buffer")
}

// TestFrameEncodedOnFirstUse: a hub's frame is encoded only when a
// subscriber first asks for its bytes (an event no subscriber receives
// costs no encoding), and every later call, from any goroutine, returns
// those same bytes.
func TestFrameEncodedOnFirstUse(t *testing.T) {
	f := newFrame("7", chat.EventMessageDidCreate, []byte(`{"a": [1, 2]}`), chat.NewTime(time.Unix(1, 0)))
	require.Nil(t, f.wire.b, "encoded before anyone asked")
	got := make(chan []byte, 4)
	for range 4 {
		go func() { got <- f.JSON() }()
	}
	first := <-got
	require.JSONEq(t, `{"id":"7","event":"message.didCreate","data":{"a":[1,2]},"createdAt":"1970-01-01T00:00:01.000Z"}`, string(first))
	for range 3 {
		require.Same(t, &first[0], &(<-got)[0])
	}
	copied := *f
	require.Same(t, &first[0], &copied.JSON()[0], "a copy of the frame shares its encoding")
}

package chat_test

import (
	"context"
	"regexp"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
)

// opStore records the operation name of every transaction.
type opStore struct {
	chat.Store
	mu  sync.Mutex
	ops []string
}

func (s *opStore) record(ctx context.Context, kind string) {
	s.mu.Lock()
	s.ops = append(s.ops, kind+":"+chat.Operation(ctx))
	s.mu.Unlock()
}

func (s *opStore) Update(ctx context.Context, fn func(tx chat.Tx) error) error {
	s.record(ctx, "update")
	return s.Store.Update(ctx, fn)
}

func (s *opStore) View(ctx context.Context, fn func(tx chat.Tx) error) error {
	s.record(ctx, "view")
	return s.Store.View(ctx, fn)
}

func (s *opStore) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.ops
	s.ops = nil
	return out
}

// TestOperationNames: every transaction the Service runs carries the name
// of the Service method that runs it, the same name on every call (a small
// fixed set of label values), whatever the input.
func TestOperationNames(t *testing.T) {
	st := &opStore{Store: memory.New()}
	e := newEnvStore(t, st)
	st.take()

	e.channel("room-1", "u1")
	require.Contains(t, st.take(), "update:CreateChannel")
	e.mustPost(e.admin, "room-1", "hello")
	require.Contains(t, st.take(), "update:CreateMessage")
	_, err := e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "room-1"})
	require.NoError(t, err)
	require.Contains(t, st.take(), "view:QueryMessages")
	_, err = e.svc.GetChannel(e.ctx, e.admin, "no such room")
	require.Equal(t, chat.CodeNotFound, chat.ErrorCode(err))
	require.Contains(t, st.take(), "view:GetChannel")

	// Other input, same names.
	e.channel("another room with a long name", "u2", "u3")
	e.mustPost(e.admin, "another room with a long name", "more")
	for _, op := range st.take() {
		require.Regexp(t, regexp.MustCompile(`^(view|update):[A-Za-z]+$`), op)
		require.NotContains(t, op, "room")
	}

	// A name set by the caller is kept by a store wrapper; none is "".
	require.Equal(t, "webhook.claim", chat.Operation(chat.WithOperation(context.Background(), "webhook.claim")))
	require.Equal(t, "", chat.Operation(context.Background()))
}

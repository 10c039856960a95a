package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/postgres"
)

// Tests of predicted appends (predict.go): the store answers AppendMessage
// from the channel row it last saw and checks the prediction when the
// statement reaches the server.

// twoStores opens two stores over one fresh schema, as two processes would.
func twoStores(t *testing.T) (*postgres.Store, *postgres.Store) {
	t.Helper()
	schema := newSchema(t)
	open := func() *postgres.Store {
		s, err := postgres.Open(context.Background(), testDSN(t), &postgres.Options{Schema: schema, MaxOpenConns: 4})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	return open(), open()
}

// post appends a message and returns what AppendMessage returned.
func postTo(t *testing.T, s *postgres.Store, id, channelID string) *chat.Channel {
	t.Helper()
	var c *chat.Channel
	ctx := ctxT(t)
	update(t, s, func(tx chat.Tx) error {
		m := message(id, channelID, "u", 0)
		var err error
		c, err = chat.AppendMessage(ctx, tx, m, time.Now())
		if err == nil && m.ChannelSegment != c.MessageCount {
			err = fmt.Errorf("segment %d, channel messageCount %d", m.ChannelSegment, c.MessageCount)
		}
		return err
	})
	return c
}

func getChannel(t *testing.T, s *postgres.Store, id string) *chat.Channel {
	t.Helper()
	var c *chat.Channel
	ctx := ctxT(t)
	view(t, s, func(tx chat.Tx) error {
		var err error
		c, err = tx.GetChannel(ctx, id)
		return err
	})
	return c
}

// Whatever another process did to the channel between two appends of
// this store, the second append returns the row as stored and the message
// gets the next segment.
func TestPredictedAppendSeesOtherProcesses(t *testing.T) {
	t.Parallel()
	a, b := twoStores(t)
	ctx := ctxT(t)
	update(t, a, func(tx chat.Tx) error { return tx.CreateChannel(ctx, channel("x", at(0))) })
	steps := []struct {
		name string
		by   func(i int)
	}{
		{"another process posts", func(i int) { postTo(t, b, fmt.Sprintf("b%d", i), "x") }},
		{"another process adds a member (memberCount, no version bump)", func(i int) {
			update(t, b, func(tx chat.Tx) error {
				return tx.PutChannelUser(ctx, &chat.ChannelUser{ChannelID: "x", UserID: fmt.Sprintf("u%d", i),
					Membership: chat.MembershipMember, CreatedAt: at(0), UpdatedAt: at(0)})
			})
		}},
		{"another process renames the channel", func(i int) {
			update(t, b, func(tx chat.Tx) error {
				c, err := tx.GetChannel(ctx, "x")
				if err != nil {
					return err
				}
				c.DisplayName = fmt.Sprintf("name %d", i)
				return tx.UpdateChannel(ctx, c)
			})
		}},
		{"nothing", func(int) {}},
	}
	for i := 0; i < 3; i++ {
		for _, st := range steps {
			postTo(t, a, fmt.Sprintf("a%d-%s", i, st.name), "x") // a knows the row now
			st.by(i)
			got := postTo(t, a, fmt.Sprintf("a%d-%s-after", i, st.name), "x")
			want := getChannel(t, a, "x")
			require.Equal(t, want, got, "after %q the append returns the stored row", st.name)
		}
	}
	ms := gapless(t, a, "x")
	require.EqualValues(t, len(ms), getChannel(t, a, "x").MessageCount)
}

// gapless returns the messages of the channel, checking that their
// segments run from 1 without a gap.
func gapless(t *testing.T, s *postgres.Store, channelID string) []*chat.Message {
	t.Helper()
	ctx := ctxT(t)
	var ms []*chat.Message
	view(t, s, func(tx chat.Tx) error {
		var err error
		ms, err = tx.QueryMessages(ctx, chat.MessageFilter{ChannelID: channelID})
		return err
	})
	for j, m := range ms {
		require.EqualValues(t, j+1, m.ChannelSegment, "gapless")
	}
	return ms
}

// A function that fails after a predicted append leaves nothing behind,
// alone or in a batch, and the store's next prediction is still right.
func TestPredictedAppendUndone(t *testing.T) {
	t.Parallel()
	s, _ := openLaneStore(t, postgres.Options{MaxOpenConns: 8})
	ctx := ctxT(t)
	update(t, s, func(tx chat.Tx) error { return tx.CreateChannel(ctx, channel("y", at(0))) })
	postTo(t, s, "first", "y")
	boom := errors.New("boom")
	for round := 0; round < 3; round++ {
		err := runGroup(8, func(w int) error {
			err := s.Update(ctx, func(tx chat.Tx) error {
				_, err := chat.AppendMessage(ctx, tx, message(fmt.Sprintf("r%d-w%d", round, w), "y", "u", 0), time.Now())
				if err == nil && w%3 == 0 {
					err = boom
				}
				return err
			})
			if w%3 == 0 {
				if !errors.Is(err, boom) {
					return fmt.Errorf("writer %d: %v, want boom", w, err)
				}
				return nil
			}
			return err
		})
		require.NoError(t, err)
	}
	// A duplicate id found only when the pending statement runs: the
	// Update runs again on the plain path, which reports the conflict.
	err := s.Update(ctx, func(tx chat.Tx) error {
		_, err := chat.AppendMessage(ctx, tx, message("first", "y", "u", 0), time.Now())
		return err
	})
	require.Equal(t, chat.CodeConflict, chat.ErrorCode(err), "%v", err)
	c := postTo(t, s, "last", "y")
	ms := gapless(t, s, "y")
	for _, m := range ms {
		require.NotRegexp(t, `-w[0369]$`, m.MessageID, "a failed call's message is not stored")
	}
	require.Len(t, ms, 2+3*5)
	require.EqualValues(t, len(ms), c.MessageCount)
	require.Equal(t, getChannel(t, s, "y"), c)
}

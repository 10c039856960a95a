package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// chat.AppendMessage runs the adapter's MessageAppender when it has one
// (Postgres: one statement) and NextSegment + CreateMessage otherwise; both
// must behave the same.
var appendCases = []tcase{
	{"SegmentsAndFields", testAppendMessage},
	{"Comment", testAppendComment},
	{"ClosedChannel", testAppendClosed},
	{"NotFoundAndConflict", testAppendErrors},
	{"Concurrent", testAppendConcurrent},
}

func appendMsg(e *env, m *chat.Message, now time.Time) (*chat.Channel, error) {
	var c *chat.Channel
	err := e.s.Update(e.ctx, func(tx chat.Tx) error {
		var err error
		c, err = chat.AppendMessage(e.ctx, tx, m, now)
		return err
	})
	return c, err
}

func testAppendMessage(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)), newChannel("other", at(0)))
	e.createMessages(newMessage("old", "c", "u", 5)) // segments need not start at the count
	for i := int64(1); i <= 3; i++ {
		now := at(i * 1000)
		m := fullMessage()
		m.MessageID = fmt.Sprintf("m%d", i)
		m.ChannelSegment = 99 // overwritten
		c, err := appendMsg(e, m, now.Time.Add(400*time.Microsecond))
		require.NoError(t, err)
		require.Equal(t, i, c.MessageCount)
		require.Equal(t, i, m.ChannelSegment, "m.ChannelSegment is set")
		require.False(t, c.IsClosed)
		require.True(t, now.Equal(c.LastActivity.Time), "lastActivity = now (ms): %v", c.LastActivity)
		require.True(t, now.Equal(c.UpdatedAt.Time), "updatedAt = now (ms): %v", c.UpdatedAt)
		require.Equal(t, cChannel(t, c), cChannel(t, e.channel("c")), "returns the updated channel")
		want := fullMessage()
		want.MessageID, want.ChannelSegment = m.MessageID, i
		require.Equal(t, cMessage(t, want), cMessage(t, e.message(m.MessageID)))
	}
	require.EqualValues(t, 0, e.channel("other").MessageCount)
	plain := newMessage("plain", "other", "u", 0)
	plain.Data = nil
	_, err := appendMsg(e, plain, base)
	require.NoError(t, err)
	want := newMessage("plain", "other", "u", 0)
	want.Data, want.ChannelSegment = nil, 1
	require.Equal(t, cMessage(t, want), cMessage(t, e.message("plain")))
}

func testAppendComment(t *testing.T, e *env) {
	e.createChannels(newChannel("c", at(0)))
	_, err := appendMsg(e, newMessage("p", "c", "u", 0), base)
	require.NoError(t, err)
	// A comment leaves its parent as it is...
	m := newMessage("r0", "c", "u", 0)
	m.ParentID = "p"
	_, err = appendMsg(e, m, base)
	require.NoError(t, err)
	require.Zero(t, e.message("p").ChildrenNumber)
	require.Equal(t, "p", e.message("r0").ParentID)
	// ...and SetChildrenNumber after it, in its transaction, writes the
	// parent's count (Postgres: within the append's statement when it was
	// held back), with or without a read after it.
	for i := 1; i < 4; i++ {
		e.update(func(tx chat.Tx) error {
			if p, ok := tx.(chat.PostPrefetcher); ok && i < 3 {
				if err := p.PrefetchPost(e.ctx, "c", "u"); err != nil {
					return err
				}
			}
			m := newMessage(fmt.Sprintf("r%d", i), "c", "u", 0)
			m.ParentID = "p"
			if _, err := chat.AppendMessage(e.ctx, tx, m, base); err != nil {
				return err
			}
			if err := tx.SetChildrenNumber(e.ctx, "p", 10*i); err != nil {
				return err
			}
			if i == 2 {
				p, err := tx.GetMessage(e.ctx, "p")
				require.NoError(t, err)
				require.Equal(t, 10*i, p.ChildrenNumber)
			}
			return nil
		})
		require.Equal(t, 10*i, e.message("p").ChildrenNumber)
		require.Zero(t, e.message(fmt.Sprintf("r%d", i)).ChildrenNumber)
	}
	require.EqualValues(t, 5, e.channel("c").MessageCount)
}

func testAppendClosed(t *testing.T, e *env) {
	closed := newChannel("closed", at(0))
	closed.IsClosed = true
	e.createChannels(closed)
	errClosed := errors.New("closed")
	err := e.s.Update(e.ctx, func(tx chat.Tx) error {
		c, err := chat.AppendMessage(e.ctx, tx, newMessage("m", "closed", "u", 0), base)
		if err != nil {
			return err
		}
		require.True(t, c.IsClosed, "the returned channel says it is closed")
		return errClosed
	})
	require.ErrorIs(t, err, errClosed)
	require.EqualValues(t, 0, e.channel("closed").MessageCount, "the increment is undone")
	_, err = readErr(e, func(tx chat.Tx) (*chat.Message, error) { return tx.GetMessage(e.ctx, "m") })
	requireNotFound(t, err, "no message stored in a closed channel")
}

func testAppendErrors(t *testing.T, e *env) {
	_, err := appendMsg(e, newMessage("m", "missing", "u", 0), base)
	requireNotFound(t, err, "AppendMessage to a missing channel")
	e.createChannels(newChannel("c", at(0)))
	_, err = appendMsg(e, newMessage("m", "c", "u", 0), base)
	require.NoError(t, err)
	_, err = appendMsg(e, newMessage("m", "c", "u", 0), base)
	requireConflict(t, err, "duplicate message id")
	require.EqualValues(t, 1, e.channel("c").MessageCount, "the failed append changed nothing")
	ms := read(e, func(tx chat.Tx) ([]*chat.Message, error) {
		return tx.QueryMessages(e.ctx, chat.MessageFilter{ChannelID: "c"})
	})
	require.Equal(t, []string{"m"}, messageIDs(ms))
}

// 8 goroutines x 25 appends to one channel, each in its own Update, store
// messages with the distinct, gapless segments 1..200.
func testAppendConcurrent(t *testing.T, e *env) {
	const workers, each = 8, 25
	e.createChannels(newChannel("c", at(0)))
	var mu sync.Mutex
	var got []int64
	err := group(workers, func(w int) error {
		for i := 0; i < each; i++ {
			m := newMessage(fmt.Sprintf("w%d-%d", w, i), "c", "u", 0)
			if _, err := appendMsg(e, m, base); err != nil {
				return err
			}
			mu.Lock()
			got = append(got, m.ChannelSegment)
			mu.Unlock()
		}
		return nil
	})
	require.NoError(t, err)
	requireGapless(t, e, got, workers*each)
	ms := read(e, func(tx chat.Tx) ([]*chat.Message, error) {
		return tx.QueryMessages(e.ctx, chat.MessageFilter{ChannelID: "c"})
	})
	require.Len(t, ms, workers*each)
	for i, m := range ms {
		require.EqualValues(t, i+1, m.ChannelSegment)
	}
}

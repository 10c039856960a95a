package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

var eventCases = []tcase{
	{"AppendRead", testEventsAppendRead},
	{"Rollback", testEventsRollback},
	{"Retention", testEventsRetention},
	{"CommitOrder", testEventsCommitOrder},
	{"Watcher", testEventsWatcher},
}

func logEvent(name, channelID string, ms int64, userIDs ...string) *chat.Event {
	return &chat.Event{Name: name, ChannelID: channelID, UserIDs: userIDs,
		Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, ms)), CreatedAt: at(ms)}
}

func (e *env) appendEvents(es ...*chat.Event) {
	e.t.Helper()
	e.update(func(tx chat.Tx) error { return tx.AppendEvents(e.ctx, es) })
}

func (e *env) readEvents(after int64, limit int) []*chat.Event {
	e.t.Helper()
	return read(e, func(tx chat.Tx) ([]*chat.Event, error) { return tx.ReadEvents(e.ctx, after, limit) })
}

func (e *env) lastEventID() int64 {
	e.t.Helper()
	return read(e, func(tx chat.Tx) (int64, error) { return tx.LastEventID(e.ctx) })
}

func testEventsAppendRead(t *testing.T, e *env) {
	require.Equal(t, int64(0), e.lastEventID())
	require.Empty(t, e.readEvents(0, 10))
	a, b := logEvent("channel.didAddUsers", "c1", 1, "u1", "u2"), logEvent("user.didUpdate", "", 2, "u3")
	e.appendEvents(a, b)
	require.Greater(t, a.ID, int64(0))
	require.Equal(t, a.ID+1, b.ID)
	c := logEvent("message.didCreate", "c1", 3)
	e.appendEvents(c)
	require.Greater(t, c.ID, b.ID)
	require.Equal(t, c.ID, e.lastEventID())

	got := e.readEvents(0, 10)
	require.Len(t, got, 3)
	require.Equal(t, a.ID, got[0].ID)
	require.Equal(t, "channel.didAddUsers", got[0].Name)
	require.Equal(t, "c1", got[0].ChannelID)
	require.Equal(t, []string{"u1", "u2"}, got[0].UserIDs)
	require.JSONEq(t, `{"n":1}`, string(got[0].Data))
	require.True(t, at(1).Equal(got[0].CreatedAt.Time), "createdAt %v", got[0].CreatedAt)
	require.Equal(t, "", got[1].ChannelID)
	require.Equal(t, []string{"u3"}, got[1].UserIDs)
	require.Empty(t, got[2].UserIDs)

	after := e.readEvents(a.ID, 1)
	require.Len(t, after, 1)
	require.Equal(t, b.ID, after[0].ID)
	require.Empty(t, e.readEvents(c.ID, 10))
}

func testEventsRollback(t *testing.T, e *env) {
	e.appendEvents(logEvent("a", "c", 1))
	boom := fmt.Errorf("boom")
	err := e.s.Update(e.ctx, func(tx chat.Tx) error {
		if err := tx.AppendEvents(e.ctx, []*chat.Event{logEvent("b", "c", 2)}); err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	got := e.readEvents(0, 10)
	require.Len(t, got, 1)
	require.Equal(t, "a", got[0].Name)
	next := logEvent("c", "c", 3)
	e.appendEvents(next)
	require.Greater(t, next.ID, got[0].ID)
}

// testEventsRetention: deletion is bounded, takes the oldest first, and
// never lowers LastEventID, so ids are not reused after the newest events
// were deleted.
func testEventsRetention(t *testing.T, e *env) {
	for i := int64(0); i < 5; i++ {
		e.appendEvents(logEvent("e", "c", i*1000))
	}
	last := e.lastEventID()
	var n int
	e.update(func(tx chat.Tx) (err error) { n, err = tx.DeleteEventsBefore(e.ctx, at(3000).Time, 2); return })
	require.Equal(t, 2, n)
	e.update(func(tx chat.Tx) (err error) { n, err = tx.DeleteEventsBefore(e.ctx, at(3000).Time, 2); return })
	require.Equal(t, 1, n, "only one more event is older than the cut")
	got := e.readEvents(0, 10)
	require.Len(t, got, 2)
	require.JSONEq(t, `{"n":3000}`, string(got[0].Data))
	e.update(func(tx chat.Tx) (err error) { n, err = tx.DeleteEventsBefore(e.ctx, at(10000).Time, 0); return })
	require.Equal(t, 2, n)
	require.Equal(t, last, e.lastEventID())
	next := logEvent("e", "c", 6000)
	e.appendEvents(next)
	require.Greater(t, next.ID, last)
}

// testEventsCommitOrder: while writers append concurrently, a reader that
// follows the log never finds an id below one it has already seen. Ids of
// committed events are contiguous (no deletes here), so each read must
// continue exactly where the last one ended: a missing id would mean a
// smaller id became visible after a larger one.
func testEventsCommitOrder(t *testing.T, e *env) {
	const writers, each = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				err := e.s.Update(e.ctx, func(tx chat.Tx) error {
					return tx.AppendEvents(e.ctx, []*chat.Event{logEvent("e", "c", int64(i)), logEvent("f", "c", int64(i))})
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var last int64
	seen := 0
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		var got []*chat.Event
		require.NoError(t, e.s.View(e.ctx, func(tx chat.Tx) (err error) { got, err = tx.ReadEvents(e.ctx, last, 0); return }))
		for _, ev := range got {
			require.Equal(t, last+1, ev.ID, "event ids must become visible in order")
			last = ev.ID
			seen++
		}
	}
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, writers*each*2, seen)
}

func testEventsWatcher(t *testing.T, e *env) {
	w, ok := e.s.(chat.OutboxWatcher)
	require.True(t, ok, "every adapter signals appended events through chat.OutboxWatcher")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := w.WatchOutbox(ctx)
	require.NoError(t, err)
	e.appendEvents(logEvent("e", "c", 1))
	select {
	case _, ok := <-ch:
		require.True(t, ok)
	case <-time.After(5 * time.Second):
		require.Fail(t, "no signal within 5s of appending an event")
	}
}

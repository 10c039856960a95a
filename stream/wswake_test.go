package stream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/stream"
)

// wsReader reads one WebSocket stream and records the ids of the events
// it receives, in order.
type wsReader struct {
	name  string
	round int // the first round whose events it must receive
	mu    sync.Mutex
	ids   []int64
	err   error
	got   chan struct{} // holds a signal after an id was recorded
}

func (r *wsReader) read(ctx context.Context, c *websocket.Conn) {
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			r.mu.Lock()
			r.err = err
			r.mu.Unlock()
			return
		}
		var f stream.Frame
		if err := json.Unmarshal(b, &f); err != nil || f.ID == "" {
			r.mu.Lock()
			r.err = fmt.Errorf("frame %s: %v", b, err)
			r.mu.Unlock()
			return
		}
		v, _ := strconv.ParseInt(f.ID, 10, 64)
		r.mu.Lock()
		r.ids = append(r.ids, v)
		r.mu.Unlock()
		select {
		case r.got <- struct{}{}:
		default:
		}
	}
}

// has reports whether the reader received id, and its error if it ended.
func (r *wsReader) has(id int64) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ids) > 0 && r.ids[len(r.ids)-1] >= id, r.err
}

// TestWebSocketWriterWakeups hunts lost wake-ups of the on-demand
// WebSocket writer: a frame queued just as the writer finds the queue
// empty and exits, or just before the first writer starts after the
// upgrade. Many connections receive bursts of 1-3 events posted back to
// back, each burst when every writer has just written the previous one
// (so writers are deciding to exit); new connections open while events
// are posted. After each burst every connection must receive its last
// event, and every connection receives the log without gap from its
// first event on. Run under -race with GOMAXPROCS 1, 2 and 4.
func TestWebSocketWriterWakeups(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		t.Run("GOMAXPROCS="+strconv.Itoa(procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			writerWakeups(t)
		})
	}
}

func writerWakeups(t *testing.T) {
	e := newEnv(t, memory.New(), stream.Config{MaxStreamsPerCaller: -1}) // many connections of one caller
	e.channel("c", "alice")
	url := wsServer(t, e)
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()

	var (
		mu      sync.Mutex
		readers []*wsReader
		wg      sync.WaitGroup
	)
	t.Cleanup(wg.Wait) // after cancel: the readers end with ctx
	// dial opens a connection; it may run in a goroutine of its own, so it
	// reports what went wrong rather than failing the test.
	dial := func(name string, round int) error {
		c, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			return err
		}
		mu.Lock()
		t.Cleanup(func() { c.CloseNow() })
		mu.Unlock()
		_, hello, err := c.Read(ctx)
		if err != nil {
			return err
		}
		var f stream.Frame
		if err := json.Unmarshal(hello, &f); err != nil || f.Event != stream.EventDidConnect {
			return fmt.Errorf("%s: first frame %s", name, hello)
		}
		r := &wsReader{name: name, round: round, got: make(chan struct{}, 1)}
		mu.Lock()
		readers = append(readers, r)
		mu.Unlock()
		wg.Add(1)
		go func() { defer wg.Done(); r.read(ctx, c) }()
		return nil
	}
	for i := range 40 {
		require.NoError(t, dial("first-"+strconv.Itoa(i), 0))
	}

	post := func() int64 {
		_, err := e.svc.CreateMessage(e.ctx, "alice", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: chat.TextData("x")})
		require.NoError(t, err)
		last, err := e.svc.LastEventID(e.ctx)
		require.NoError(t, err)
		return last
	}

	const rounds = 150
	for round := range rounds {
		// Connections opened while this round's events are posted: their
		// first writer starts right after the upgrade, as frames queue.
		var dials sync.WaitGroup
		errs := make(chan error, 4)
		if round%10 == 0 {
			for i := range 4 {
				dials.Add(1)
				go func() { defer dials.Done(); errs <- dial(fmt.Sprintf("late-%d-%d", round, i), round+1) }()
			}
		}
		var last int64
		for range 1 + round%3 {
			last = post()
		}
		dials.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		// Every connection must receive the round's last event (those
		// opened during the round, from the next round on); a lost
		// wake-up leaves it queued with no writer.
		mu.Lock()
		rs := append([]*wsReader(nil), readers...)
		mu.Unlock()
		wait, stop := context.WithTimeout(ctx, 10*time.Second)
		for _, r := range rs {
			for r.round <= round {
				ok, err := r.has(last)
				require.NoError(t, err, "round %d: connection %s ended", round, r.name)
				if ok {
					break
				}
				select {
				case <-r.got:
				case <-wait.Done():
					stop()
					r.mu.Lock()
					n := len(r.ids)
					r.mu.Unlock()
					t.Fatalf("round %d: connection %s stalled before event %d (received %d events)", round, r.name, last, n)
				}
			}
		}
		stop()
	}
	// No gap, no repeat: from its first event on, each connection
	// received consecutive ids (the log holds only this channel's
	// messages, all admitted by an admin stream).
	for _, r := range readers {
		r.mu.Lock()
		for i := 1; i < len(r.ids); i++ {
			require.Equal(t, r.ids[i-1]+1, r.ids[i], "connection %s: ids %d then %d", r.name, r.ids[i-1], r.ids[i])
		}
		r.mu.Unlock()
	}
}

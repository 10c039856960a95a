package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// gatedConn is a server connection whose write of the stream.didConnect
// frame waits for a gate, and which records every write after it.
type gatedConn struct {
	net.Conn
	l *gatedListener
}

func (c *gatedConn) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(EventDidConnect)) {
		close(c.l.helloWriting)
		<-c.l.gate
		return c.Conn.Write(p)
	}
	c.l.mu.Lock()
	if c.l.hello {
		c.l.after = append(c.l.after, bytes.Clone(p))
	}
	c.l.mu.Unlock()
	return c.Conn.Write(p)
}

type gatedListener struct {
	net.Listener
	helloWriting chan struct{} // closed when the hello's write starts
	gate         chan struct{} // closed to let it go on
	mu           sync.Mutex
	hello        bool     // the hello was written
	after        [][]byte // the writes after it
}

func (l *gatedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &gatedConn{Conn: c, l: l}, nil
}

// TestWebSocketWritesQueuedFramesTogether: frames queued while the
// connection's writer is busy go to the connection in one write (one
// system call, full TCP segments), not one write per frame. The hello's
// write is held while five messages are queued; once it goes on, the
// writer finds the five and writes them at once, and the client reads
// each as a frame of its own, in order.
func TestWebSocketWritesQueuedFramesTogether(t *testing.T) {
	e := newIndexEnv(t)
	e.channel("c", "alice")
	l := &gatedListener{helloWriting: make(chan struct{}), gate: make(chan struct{})}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := e.h.ServeEvents(w, r, Caller{UserID: e.admin, Admin: true}); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l.Listener = ln
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)

	type dialed struct {
		c   *websocket.Conn
		err error
	}
	dc := make(chan dialed, 1)
	go func() {
		c, _, err := websocket.Dial(e.ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
		dc <- dialed{c, err}
	}()
	<-l.helloWriting
	// The subscription is live (its hello is being written): queue five
	// messages and wait until all five are in its queue.
	e.h.mu.Lock()
	var sub *Subscription
	for s := range e.h.all {
		sub = s
	}
	e.h.mu.Unlock()
	require.NotNil(t, sub)
	for _, text := range []string{"m1", "m2", "m3", "m4", "m5"} {
		e.post("alice", "c", text)
	}
	wait, stop := context.WithTimeout(e.ctx, 10*time.Second)
	defer stop()
	for sub.queued() < 5 {
		select {
		case <-wait.Done():
			t.Fatalf("%d frames queued, want 5", sub.queued())
		case <-time.After(time.Millisecond):
		}
	}
	l.mu.Lock()
	l.hello = true
	l.mu.Unlock()
	close(l.gate)

	d := <-dc
	require.NoError(t, d.err)
	defer d.c.CloseNow()
	_, b, err := d.c.Read(e.ctx)
	require.NoError(t, err)
	require.Contains(t, string(b), EventDidConnect)
	for _, want := range []string{"m1", "m2", "m3", "m4", "m5"} {
		_, b, err := d.c.Read(e.ctx)
		require.NoError(t, err)
		var f Frame
		require.NoError(t, json.Unmarshal(b, &f))
		var data chat.MessageEventData
		require.NoError(t, json.Unmarshal(f.Data, &data))
		text, _ := data.Messages[0].Text()
		require.Equal(t, want, text)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Equal(t, 1, len(l.after), "writes after the hello: the five queued frames in one")
	require.Equal(t, 5, bytes.Count(l.after[0], []byte(chat.EventMessageDidCreate)))
}

// TestHeldWriterKeepsOrder: what is written while held (by the stream's
// writer or by the WebSocket's reader, such as a pong) reaches the
// connection in order, in one write at release; a release with nothing
// kept writes nothing; past maxHeld the kept bytes go out on the way.
func TestHeldWriterKeepsOrder(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	w := &heldWriter{conn: a}
	got := make(chan []byte, 10)
	go func() {
		buf := make([]byte, 2*maxHeld)
		for {
			n, err := b.Read(buf)
			if err != nil {
				close(got)
				return
			}
			got <- bytes.Clone(buf[:n])
		}
	}()
	_, err := w.Write([]byte("direct"))
	require.NoError(t, err)
	require.Equal(t, "direct", string(<-got))

	w.hold()
	for _, s := range []string{"one,", "pong,", "two"} {
		_, err := w.Write([]byte(s))
		require.NoError(t, err)
	}
	require.NoError(t, w.release())
	require.Equal(t, "one,pong,two", string(<-got))
	require.NoError(t, w.release()) // nothing held: nothing written
	require.Equal(t, 2, w.writes)

	w.hold()
	big := bytes.Repeat([]byte("x"), maxHeld-1)
	_, err = w.Write(big)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { _, err := w.Write([]byte("yz")); done <- err }()
	require.Equal(t, big, <-got) // written out to make room
	require.NoError(t, <-done)
	require.NoError(t, w.release())
	require.Equal(t, "yz", string(<-got))
	require.Equal(t, 4, w.writes)
}

package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/httpapi"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/stream"
)

type streamFixture struct {
	svc   *chat.Service
	srv   *httptest.Server
	token string
	admin string
}

func newStreamFixture(t *testing.T, cfg stream.Config) *streamFixture {
	t.Helper()
	ctx := context.Background()
	svc, err := chat.New(ctx, memory.New(), chat.Config{})
	require.NoError(t, err)
	a, token, err := svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	hub := stream.New(svc, cfg)
	require.NoError(t, hub.Start(ctx))
	srv := httptest.NewServer(httpapi.New(svc, httpapi.Config{Events: hub}))
	t.Cleanup(func() {
		_ = hub.Stop(ctx)
		srv.Close()
	})
	_, err = svc.CreateChannel(ctx, a.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice"}})
	require.NoError(t, err)
	return &streamFixture{svc: svc, srv: srv, token: token, admin: a.UserID}
}

func (f *streamFixture) post(t *testing.T, text string) {
	t.Helper()
	_, err := f.svc.CreateMessage(context.Background(), "alice", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: chat.TextData(text)})
	require.NoError(t, err)
}

type wireFrame struct {
	ID        string          `json:"id"`
	Event     string          `json:"event"`
	Data      json.RawMessage `json:"data"`
	CreatedAt string          `json:"createdAt"`
}

func readWS(t *testing.T, ctx context.Context, c *websocket.Conn) wireFrame {
	t.Helper()
	typ, b, err := c.Read(ctx)
	require.NoError(t, err)
	require.Equal(t, websocket.MessageText, typ)
	var f wireFrame
	require.NoError(t, json.Unmarshal(b, &f))
	return f
}

func TestEventsWebSocket(t *testing.T) {
	t.Parallel()
	f := newStreamFixture(t, stream.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/events"

	// No token: 401 before any upgrade.
	_, resp, err := websocket.Dial(ctx, url, nil)
	require.Error(t, err)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + f.token}}})
	require.NoError(t, err)
	defer c.CloseNow()
	hello := readWS(t, ctx, c)
	require.Equal(t, "stream.didConnect", hello.Event)
	require.JSONEq(t, `{"userId":"`+f.admin+`","resumed":false}`, string(hello.Data))
	f.post(t, "hi")
	m := readWS(t, ctx, c)
	require.Equal(t, chat.EventMessageDidCreate, m.Event)
	require.NotEmpty(t, m.ID)
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, m.CreatedAt)
	c.Close(websocket.StatusNormalClosure, "")

	// A ticket opens the stream once, and resumes after the last id.
	var tk struct {
		Ticket    string `json:"ticket"`
		ExpiresAt string `json:"expiresAt"`
	}
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/events/ticket", nil)
	req.Header.Set("Authorization", "Bearer "+f.token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.NoError(t, json.NewDecoder(res.Body).Decode(&tk))
	res.Body.Close()
	f.post(t, "while away")
	c2, _, err := websocket.Dial(ctx, url+"?after="+m.ID+"&ticket="+tk.Ticket, nil)
	require.NoError(t, err)
	defer c2.CloseNow()
	hello = readWS(t, ctx, c2)
	require.JSONEq(t, `{"userId":"`+f.admin+`","resumed":true}`, string(hello.Data))
	away := readWS(t, ctx, c2)
	var d chat.MessageEventData
	require.NoError(t, json.Unmarshal(away.Data, &d))
	text, _ := d.Messages[0].Text()
	require.Equal(t, "while away", text)

	_, resp, err = websocket.Dial(ctx, url+"?ticket="+tk.Ticket, nil)
	require.Error(t, err, "a ticket is single use")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	// An after that is not an event id: 400 naming it.
	_, resp, err = websocket.Dial(ctx, url+"?after=x", &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + f.token}}})
	require.Error(t, err)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// TestEventsWebSocketTooSlow: a client that stops reading is closed with
// 4008 once its queue overflows.
func TestEventsWebSocketTooSlow(t *testing.T) {
	t.Parallel()
	f := newStreamFixture(t, stream.Config{QueueSize: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/events"
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + f.token}}})
	require.NoError(t, err)
	defer c.CloseNow()
	readWS(t, ctx, c)
	// The client reads nothing more: once the socket buffers hold what
	// they can (far less than the 30 MB posted here), the server's writes
	// block, the queue of 3 fills and the hub closes the stream.
	big := strings.Repeat("x", 15000)
	for i := 0; i < 2000; i++ {
		f.post(t, big)
	}
	for {
		_, _, err := c.Read(ctx)
		if err != nil {
			require.Equal(t, stream.CloseTooSlow, websocket.CloseStatus(err), "err %v", err)
			return
		}
	}
}

func TestEventsSSE(t *testing.T) {
	t.Parallel()
	f := newStreamFixture(t, stream.Config{})
	f.post(t, "one")
	first, err := f.svc.LastEventID(context.Background())
	require.NoError(t, err)
	f.post(t, "two")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+f.token)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", jsonInt(first))
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	sc := bufio.NewScanner(res.Body)
	var lines []string
	for len(lines) < 5 && sc.Scan() {
		if sc.Text() != "" {
			lines = append(lines, sc.Text())
		}
	}
	require.Equal(t, "event: stream.didConnect", lines[0])
	require.Contains(t, lines[1], `"resumed":true`)
	require.Equal(t, "id: "+jsonInt(first+1), lines[2])
	require.Equal(t, "event: message.didCreate", lines[3])
	require.True(t, strings.HasPrefix(lines[4], "data: {"))
	require.Contains(t, lines[4], `"text":"two"`)
}

func jsonInt(v int64) string { b, _ := json.Marshal(v); return string(b) }

// TestEventsEndUser: an end user's stream (user token, then a ticket of
// that user) carries its channels' events, not others'.
func TestEventsEndUser(t *testing.T) {
	t.Parallel()
	f := newStreamFixture(t, stream.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := f.svc.CreateChannel(ctx, f.admin, chat.CreateChannelInput{ChannelID: "elsewhere", Type: chat.ChannelTypeStandard, UserIDs: []string{"bob"}})
	require.NoError(t, err)
	ut, err := f.svc.IssueUserToken(ctx, "", "alice", time.Hour)
	require.NoError(t, err)

	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/events/ticket", nil)
	req.Header.Set("Authorization", "Bearer "+ut.Token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	var tk struct{ Ticket string }
	require.NoError(t, json.NewDecoder(res.Body).Decode(&tk))
	res.Body.Close()

	url := "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/events"
	for _, opts := range []struct {
		query string
		dial  *websocket.DialOptions
	}{
		{"", &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + ut.Token}}}},
		{"?ticket=" + tk.Ticket, nil},
	} {
		c, _, err := websocket.Dial(ctx, url+opts.query, opts.dial)
		require.NoError(t, err)
		hello := readWS(t, ctx, c)
		require.JSONEq(t, `{"userId":"alice","resumed":false}`, string(hello.Data))
		_, err = f.svc.CreateMessage(ctx, "bob", chat.CreateMessageInput{ChannelID: "elsewhere", Type: chat.MessageTypeText, Data: chat.TextData("not for alice")})
		require.NoError(t, err)
		f.post(t, "for alice")
		m := readWS(t, ctx, c)
		var d chat.MessageEventData
		require.NoError(t, json.Unmarshal(m.Data, &d))
		text, _ := d.Messages[0].Text()
		require.Equal(t, "for alice", text)
		c.Close(websocket.StatusNormalClosure, "")
	}
}

// TestEventsSSEPing: an idle SSE stream carries ping comments.
func TestEventsSSEPing(t *testing.T) {
	t.Parallel()
	f := newStreamFixture(t, stream.Config{PingInterval: 10 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+f.token)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if sc.Text() == ": ping" {
			return
		}
	}
	t.Fatalf("no ping before the stream ended: %v", sc.Err())
}

package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/console"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/stream"
)

// newLivePanel is newPanel with the event stream: the channel pages are
// live from a running hub, whose stream checks the session every ping.
func newLivePanel(t *testing.T, ping time.Duration) *panel {
	t.Helper()
	return newPanelWith(t, func(svc *chat.Service, cfg *console.Config) {
		hub := stream.New(svc, stream.Config{})
		require.NoError(t, hub.Start(context.Background()))
		t.Cleanup(func() { _ = hub.Stop(context.Background()) })
		cfg.Events, cfg.EventPing = hub, ping
	})
}

// newPanelWith is newPanel with the configuration set by fn; the Service
// and the panel share the fake clock.
func newPanelWith(t *testing.T, fn func(svc *chat.Service, cfg *console.Config)) *panel {
	t.Helper()
	ctx := context.Background()
	clk := &fakeClock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	svc, err := chat.New(ctx, memory.New(), chat.Config{AdminPasswordCost: bcrypt.MinCost, Now: clk.now})
	require.NoError(t, err)
	root, _, err := svc.CreateAdminWithPassword(ctx, "", "root", "", rootPassword)
	require.NoError(t, err)
	cfg := console.Config{
		Now:        clk.now,
		ClientAddr: func(r *http.Request) string { return r.Header.Get("X-Test-Addr") },
	}
	fn(svc, &cfg)
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", console.New(svc, cfg)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &panel{t: t, svc: svc, srv: srv, clock: clk, root: root}
}

// sse is one open event stream: what it received, line by line grouped
// into messages (comments kept as messages of their own).
type sse struct {
	res  *http.Response
	msgs chan sseMsg
}

type sseMsg struct {
	ID      string
	Comment string
	Frame   stream.Frame
}

// open connects to path as b with the EventSource's Accept header and
// extra headers; the stream is read in the background until it ends,
// when msgs is closed.
func (b *browser) open(path string, hdr map[string]string) *sse {
	t := b.p.t
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", b.p.srv.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := b.c.Do(req)
	require.NoError(t, err)
	s := &sse{res: res, msgs: make(chan sseMsg, 100)}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		close(s.msgs)
		return s
	}
	go func() {
		defer close(s.msgs)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		var m sseMsg
		var data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if data != "" {
					if json.Unmarshal([]byte(data), &m.Frame) != nil {
						m.Frame.Event = "unreadable: " + data
					}
				}
				if data != "" || m.Comment != "" {
					s.msgs <- m
				}
				m, data = sseMsg{}, ""
			case strings.HasPrefix(line, ":"):
				m.Comment = strings.TrimSpace(line[1:])
			case strings.HasPrefix(line, "id: "):
				m.ID = line[4:]
			case strings.HasPrefix(line, "data: "):
				data += line[6:]
			default:
				m.Frame.Event = "unexpected line: " + line
			}
		}
	}()
	return s
}

// next returns the next message that is not a comment; ok is false when
// the stream ended. A stream that stays silent for a minute fails the
// test rather than hang it.
func (s *sse) next(t *testing.T) (sseMsg, bool) {
	t.Helper()
	for {
		select {
		case m, ok := <-s.msgs:
			if !ok {
				return m, false
			}
			if m.Comment != "" {
				continue
			}
			return m, true
		case <-time.After(time.Minute):
			t.Fatal("no message from the stream for a minute")
		}
	}
}

// ends waits until the stream ends.
func (s *sse) ends(t *testing.T) {
	t.Helper()
	for {
		if _, ok := s.next(t); !ok {
			return
		}
	}
}

func (p *panel) post(user, channel, text string) chat.Message {
	ml, err := p.svc.CreateMessage(context.Background(), user, chat.CreateMessageInput{
		ChannelID: channel, Type: chat.MessageTypeText, Data: map[string]any{"text": text}})
	require.NoError(p.t, err)
	return ml.Messages[0]
}

func TestChannelEventStream(t *testing.T) {
	t.Parallel()
	p := newLivePanel(t, time.Hour)
	ctx := context.Background()
	for _, id := range []string{"lobby", "other"} {
		_, err := p.svc.CreateChannel(ctx, p.root.UserID, chat.CreateChannelInput{
			ChannelID: id, Type: chat.ChannelTypeStandard, UserIDs: []string{"alice"}})
		require.NoError(t, err)
	}
	b := p.browser("10.1.0.1")

	// Signed out: an event stream gets 401, a page load the sign-in page.
	s := b.open("/admin/channels/lobby/events", nil)
	require.Equal(t, http.StatusUnauthorized, s.res.StatusCode)
	require.NotEqual(t, "text/event-stream", s.res.Header.Get("Content-Type"))
	res, _ := b.get("/admin/channels/lobby/events")
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/admin/signin", res.Header.Get("Location"))

	b.signedIn()
	_, page := b.get("/admin/channels/lobby")
	require.Contains(t, page, `data-events="/admin/channels/lobby/events"`)

	s = b.open("/admin/channels/lobby/events", nil)
	require.Equal(t, http.StatusOK, s.res.StatusCode)
	require.Equal(t, "text/event-stream", s.res.Header.Get("Content-Type"))
	require.Contains(t, s.res.Header.Get("Content-Security-Policy"), "connect-src 'self'")
	m, ok := s.next(t)
	require.True(t, ok)
	require.Equal(t, stream.EventDidConnect, m.Frame.Event)
	require.Empty(t, m.ID)
	require.JSONEq(t, `{"userId":"`+p.root.UserID+`","resumed":false}`, string(m.Frame.Data))

	// Only the events of this channel arrive: the message in "other",
	// created first, would come first.
	p.post("alice", "other", "elsewhere")
	first := p.post("alice", "lobby", "hello lobby")
	m, ok = s.next(t)
	require.True(t, ok)
	require.Equal(t, "message.didCreate", m.Frame.Event)
	require.Equal(t, m.Frame.ID, m.ID, "the SSE id is the event id")
	var data struct {
		Messages []chat.Message `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(m.Frame.Data, &data))
	require.Len(t, data.Messages, 1)
	require.Equal(t, first.MessageID, data.Messages[0].MessageID)
	require.Equal(t, "lobby", data.Messages[0].ChannelID)
	lastID := m.ID

	// Reconnecting with Last-Event-ID resumes after it: what happened in
	// between arrives, once, after stream.didConnect with resumed true.
	s.res.Body.Close()
	s.ends(t)
	p.post("alice", "other", "elsewhere again")
	missed := p.post("alice", "lobby", "while away")
	s = b.open("/admin/channels/lobby/events", map[string]string{"Last-Event-ID": lastID})
	require.Equal(t, http.StatusOK, s.res.StatusCode)
	m, ok = s.next(t)
	require.True(t, ok)
	require.Equal(t, stream.EventDidConnect, m.Frame.Event)
	require.JSONEq(t, `{"userId":"`+p.root.UserID+`","resumed":true}`, string(m.Frame.Data))
	m, ok = s.next(t)
	require.True(t, ok)
	require.Equal(t, "message.didCreate", m.Frame.Event)
	require.NoError(t, json.Unmarshal(m.Frame.Data, &data))
	require.Len(t, data.Messages, 1)
	require.Equal(t, missed.MessageID, data.Messages[0].MessageID)
	// A deletion in the channel arrives live too.
	require.NoError(t, p.svc.DeleteMessage(ctx, p.root.UserID, missed.MessageID))
	m, ok = s.next(t)
	require.True(t, ok)
	require.Equal(t, "message.didDelete", m.Frame.Event)
	s.res.Body.Close()

	// An id that is not an event id is refused.
	for _, bad := range []string{"abc", "-3", "99999999"} {
		s = b.open("/admin/channels/lobby/events", map[string]string{"Last-Event-ID": bad})
		require.Equal(t, http.StatusBadRequest, s.res.StatusCode, bad)
	}
	s = b.open("/admin/channels/lobby/events?after=x", nil)
	require.Equal(t, http.StatusBadRequest, s.res.StatusCode)
}

func TestChannelEventStreamEndsWithTheSession(t *testing.T) {
	t.Parallel()
	p := newLivePanel(t, 20*time.Millisecond)
	_, err := p.svc.CreateChannel(context.Background(), p.root.UserID, chat.CreateChannelInput{ChannelID: "lobby", Type: chat.ChannelTypeStandard})
	require.NoError(t, err)

	// Pings arrive, and do not keep an idle session alive.
	b := p.browser("10.1.0.2")
	b.signedIn()
	s := b.open("/admin/channels/lobby/events", nil)
	require.Equal(t, http.StatusOK, s.res.StatusCode)
	pings := 0
	for pings < 3 {
		m, ok := <-s.msgs
		require.True(t, ok, "the stream lives while the session does")
		if m.Comment == "ping" {
			pings++
		}
	}
	p.clock.add(chat.DefaultAdminSessionIdle + time.Second)
	s.ends(t)
	res, _ := b.get("/admin/channels/lobby")
	require.Equal(t, http.StatusSeeOther, res.StatusCode, "the session expired")

	// Signing out ends the stream of that session.
	token := b.signedIn()
	s = b.open("/admin/channels/lobby/events", nil)
	require.Equal(t, http.StatusOK, s.res.StatusCode)
	m, ok := s.next(t)
	require.True(t, ok)
	require.Equal(t, stream.EventDidConnect, m.Frame.Event)
	res, _ = b.post("/admin/signout", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	s.ends(t)
	s = b.open("/admin/channels/lobby/events", nil)
	require.Equal(t, http.StatusUnauthorized, s.res.StatusCode, "and reconnecting is refused")
}

func TestChannelPagePollsWithoutEvents(t *testing.T) {
	t.Parallel()
	// A nil *stream.Hub (an embedder's hub variable left unset) is no hub.
	p := newPanelWith(t, func(_ *chat.Service, cfg *console.Config) {
		var none *stream.Hub
		cfg.Events = none
	})
	_, err := p.svc.CreateChannel(context.Background(), p.root.UserID, chat.CreateChannelInput{ChannelID: "lobby", Type: chat.ChannelTypeStandard})
	require.NoError(t, err)
	b := p.browser("10.1.0.3")
	b.signedIn()
	res, page := b.get("/admin/channels/lobby")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.NotContains(t, page, "data-events")
	require.Contains(t, page, `data-live="/admin/channels/lobby/messages"`)
	s := b.open("/admin/channels/lobby/events", nil)
	require.Equal(t, http.StatusNotFound, s.res.StatusCode)
}

// TestLiveRequestsDoNotExtendTheSession: what an open channel page asks
// for by itself (the message list, the event stream) is served while the
// session lasts but does not extend it; a page load does.
func TestLiveRequestsDoNotExtendTheSession(t *testing.T) {
	t.Parallel()
	p := newLivePanel(t, time.Hour)
	_, err := p.svc.CreateChannel(context.Background(), p.root.UserID, chat.CreateChannelInput{ChannelID: "lobby", Type: chat.ChannelTypeStandard})
	require.NoError(t, err)
	b := p.browser("10.1.0.4")
	b.signedIn()
	fetch := map[string]string{"X-Requested-With": "fetch"}
	for i := 0; i < 3; i++ {
		p.clock.add(9 * time.Minute)
		res, _ := b.do("GET", "/admin/channels/lobby/messages", nil, fetch)
		require.Equal(t, http.StatusOK, res.StatusCode, "within the idle time")
		s := b.open("/admin/channels/lobby/events", nil)
		require.Equal(t, http.StatusOK, s.res.StatusCode)
		s.res.Body.Close()
	}
	p.clock.add(4 * time.Minute) // 31 minutes after the last page load
	res, _ := b.do("GET", "/admin/channels/lobby/messages", nil, fetch)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode, "the refreshes did not keep the session alive")

	// A page load does extend it.
	b.signedIn()
	p.clock.add(20 * time.Minute)
	res, _ = b.get("/admin/channels/lobby")
	require.Equal(t, http.StatusOK, res.StatusCode)
	p.clock.add(20 * time.Minute)
	res, _ = b.do("GET", "/admin/channels/lobby/messages", nil, fetch)
	require.Equal(t, http.StatusOK, res.StatusCode, "20 minutes after a page load")
}

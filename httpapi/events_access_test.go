package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
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

// process is one server process: a Service, its hub and the API over it.
type process struct {
	svc *chat.Service
	srv *httptest.Server
}

// startProcess serves the API with an event stream over st; clk is the
// Service's clock.
func startProcess(t *testing.T, st chat.Store, clk *testClock, cfg stream.Config) *process {
	t.Helper()
	ctx := context.Background()
	svc, err := chat.New(ctx, st, chat.Config{Now: clk.Now})
	require.NoError(t, err)
	hub := stream.New(svc, cfg)
	require.NoError(t, hub.Start(ctx))
	srv := httptest.NewServer(httpapi.New(svc, httpapi.Config{Events: hub}))
	t.Cleanup(func() {
		_ = hub.Stop(ctx)
		srv.Close()
	})
	return &process{svc: svc, srv: srv}
}

// accessEnv is one process on a memory store with an admin "ops" and the
// channel c of alice and bob.
type accessEnv struct {
	*process
	ctx   context.Context
	clk   *testClock
	token string // ops's
	admin string // ops's user
}

func newAccessEnv(t *testing.T, cfg stream.Config) *accessEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	clk := &testClock{t: time.Now()}
	p := startProcess(t, memory.New(), clk, cfg)
	a, token, err := p.svc.CreateAdmin(ctx, "", "ops", "")
	require.NoError(t, err)
	_, err = p.svc.CreateChannel(ctx, a.UserID, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice", "bob"}})
	require.NoError(t, err)
	return &accessEnv{process: p, ctx: ctx, clk: clk, token: token, admin: a.UserID}
}

func (p *process) post(t *testing.T, text string) {
	t.Helper()
	_, err := p.svc.CreateMessage(context.Background(), "bob", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: chat.TextData(text)})
	require.NoError(t, err)
}

func (p *process) userToken(t *testing.T, userID string, ttl time.Duration) string {
	t.Helper()
	ut, err := p.svc.IssueUserToken(context.Background(), "", userID, ttl)
	require.NoError(t, err)
	return ut.Token
}

// lastID returns the id of the log's last event.
func (p *process) lastID(t *testing.T) int64 {
	t.Helper()
	id, err := p.svc.LastEventID(context.Background())
	require.NoError(t, err)
	return id
}

// wsDial opens a WebSocket stream with token (none when empty) and the
// query, and reads its stream.didConnect.
func (p *process) wsDial(t *testing.T, ctx context.Context, token, query string) *websocket.Conn {
	t.Helper()
	c, resp, err := p.wsTry(ctx, token, query)
	require.NoError(t, err, "status %v", resp)
	t.Cleanup(func() { c.CloseNow() })
	require.Equal(t, stream.EventDidConnect, readWS(t, ctx, c).Event)
	return c
}

func (p *process) wsTry(ctx context.Context, token, query string) (*websocket.Conn, *http.Response, error) {
	var opts *websocket.DialOptions
	if token != "" {
		opts = &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}}
	}
	return websocket.Dial(ctx, "ws"+strings.TrimPrefix(p.srv.URL, "http")+"/events"+query, opts)
}

// wsRefused asserts that opening a WebSocket stream is refused with
// status before any upgrade, and returns the response.
func (p *process) wsRefused(t *testing.T, ctx context.Context, token, query string, status int) *http.Response {
	t.Helper()
	c, resp, err := p.wsTry(ctx, token, query)
	if err == nil {
		c.CloseNow()
	}
	require.Error(t, err, "the stream opened")
	require.NotNil(t, resp)
	require.Equal(t, status, resp.StatusCode)
	return resp
}

// wsClosed reads c until it ends and returns the close code and reason.
func wsClosed(t *testing.T, ctx context.Context, c *websocket.Conn) (websocket.StatusCode, string) {
	t.Helper()
	for {
		_, _, err := c.Read(ctx)
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		require.True(t, errors.As(err, &ce), "the stream ended without a close frame: %v", err)
		return ce.Code, ce.Reason
	}
}

// sseStream is an open SSE stream.
type sseStream struct {
	res *http.Response
	sc  *bufio.Scanner
}

// sseOpen opens an SSE stream with token and the query, and reads its
// stream.didConnect.
func (p *process) sseOpen(t *testing.T, ctx context.Context, token, query string) *sseStream {
	t.Helper()
	res := p.sseTry(t, ctx, token, query)
	require.Equal(t, http.StatusOK, res.StatusCode)
	s := &sseStream{res: res, sc: bufio.NewScanner(res.Body)}
	t.Cleanup(func() { res.Body.Close() })
	ev, _, ok := s.next()
	require.True(t, ok)
	require.Equal(t, stream.EventDidConnect, ev)
	return s
}

func (p *process) sseTry(t *testing.T, ctx context.Context, token, query string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.srv.URL+"/events"+query, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return res
}

// next returns the next event's name and data; ok is false when the
// response ended.
func (s *sseStream) next() (event, data string, ok bool) {
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "" && event != "":
			return event, data, true
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
	return "", "", false
}

// closed reads s to its end: the last event must be stream.didClose,
// whose reason it returns, and the response must end after it.
func (s *sseStream) closed(t *testing.T) string {
	t.Helper()
	var last, data string
	for {
		ev, d, ok := s.next()
		if !ok {
			break
		}
		last, data = ev, d
	}
	require.Equal(t, "stream.didClose", last, "the last event")
	var cd struct {
		Code   int    `json:"code"`
		Reason string `json:"reason"`
	}
	require.NoError(t, json.Unmarshal([]byte(data), &cd))
	return cd.Reason
}

// ticket asks POST /events/ticket with token.
func (p *process) ticket(t *testing.T, token string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.srv.URL+"/events/ticket", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var tk struct{ Ticket string }
	require.NoError(t, json.NewDecoder(res.Body).Decode(&tk))
	return tk.Ticket
}

// text reads the next WebSocket frame, which must be a message, and
// returns its text.
func wsText(t *testing.T, ctx context.Context, c *websocket.Conn) string {
	t.Helper()
	f := readWS(t, ctx, c)
	require.Equal(t, chat.EventMessageDidCreate, f.Event, "frame %s", f.Data)
	var d chat.MessageEventData
	require.NoError(t, json.Unmarshal(f.Data, &d))
	s, _ := d.Messages[0].Text()
	return s
}

// TestEventsRevokeUserTokens: revoking a user's tokens closes the streams
// opened with them (WebSocket 4001 "token revoked", directly or through a
// ticket; SSE stream.didClose "revoked"), and only those: another user's
// stream and an admin's go on, and see no internal event. A ticket issued
// before the revocation opens nothing; a token minted after it streams,
// even when it resumes from before the revocation.
func TestEventsRevokeUserTokens(t *testing.T) {
	t.Parallel()
	e := newAccessEnv(t, stream.Config{})
	old := e.userToken(t, "alice", time.Hour)
	ws := e.wsDial(t, e.ctx, old, "")
	viaTicket := e.wsDial(t, e.ctx, "", "?ticket="+e.ticket(t, old))
	sse := e.sseOpen(t, e.ctx, old, "")
	spare := e.ticket(t, old)
	bob := e.wsDial(t, e.ctx, e.userToken(t, "bob", time.Hour), "")
	admin := e.wsDial(t, e.ctx, e.token, "")
	before := e.lastID(t)

	r, err := http.NewRequest(http.MethodPost, e.srv.URL+"/users/alice/tokens/revoke", nil)
	require.NoError(t, err)
	r.Header.Set("Authorization", "Bearer "+e.token)
	res, err := http.DefaultClient.Do(r)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)

	for _, c := range []*websocket.Conn{ws, viaTicket} {
		code, reason := wsClosed(t, e.ctx, c)
		require.Equal(t, websocket.StatusCode(4001), code)
		require.Equal(t, "token revoked", reason)
	}
	require.Equal(t, "revoked", sse.closed(t))
	e.wsRefused(t, e.ctx, "", "?ticket="+spare, http.StatusUnauthorized)
	e.wsRefused(t, e.ctx, old, "", http.StatusUnauthorized)

	// A token minted after the revocation streams, from before it too:
	// the revocation it replays does not concern it.
	fresh := e.userToken(t, "alice", time.Hour)
	resumed := e.wsDial(t, e.ctx, fresh, "?after="+jsonInt(before))
	e.post(t, "after the revocation")
	require.Equal(t, "after the revocation", wsText(t, e.ctx, resumed))
	// The others go on, and the internal event reaches no one.
	require.Equal(t, "after the revocation", wsText(t, e.ctx, bob))
	require.Equal(t, "after the revocation", wsText(t, e.ctx, admin))
}

// TestEventsTokenExpiry: a stream ends when the user token that opened it
// expires (its exp plus the leeway), directly or through a ticket: 4001
// "token expired", SSE stream.didClose "expired"; a ticket issued under a
// token that has expired since opens nothing.
func TestEventsTokenExpiry(t *testing.T) {
	t.Parallel()
	e := newAccessEnv(t, stream.Config{})
	short := e.userToken(t, "alice", time.Second)
	spare := e.ticket(t, short)
	long := e.userToken(t, "alice", time.Hour)
	// The token is accepted until exp plus 30 s of leeway: from here, for
	// at most a second.
	e.clk.Set(e.clk.Now().Add(chat.UserTokenLeeway))
	ws := e.wsDial(t, e.ctx, short, "")
	viaTicket := e.wsDial(t, e.ctx, "", "?ticket="+e.ticket(t, short))
	sse := e.sseOpen(t, e.ctx, short, "")
	other := e.wsDial(t, e.ctx, long, "")
	for _, c := range []*websocket.Conn{ws, viaTicket} {
		code, reason := wsClosed(t, e.ctx, c)
		require.Equal(t, websocket.StatusCode(4001), code)
		require.Equal(t, "token expired", reason)
	}
	require.Equal(t, "expired", sse.closed(t))

	e.clk.Set(e.clk.Now().Add(2 * time.Second)) // the ticket is valid 60 s, its token no longer
	e.wsRefused(t, e.ctx, "", "?ticket="+spare, http.StatusUnauthorized)
	e.post(t, "still here")
	require.Equal(t, "still here", wsText(t, e.ctx, other))
}

// TestEventsAdminRevoke: revoking an admin account closes its streams
// (4001 "admin revoked", SSE stream.didClose "revoked") and refuses its
// tickets; another admin's stream goes on.
func TestEventsAdminRevoke(t *testing.T) {
	t.Parallel()
	e := newAccessEnv(t, stream.Config{})
	_, tok, err := e.svc.CreateAdmin(e.ctx, "", "ops2", "")
	require.NoError(t, err)
	ws := e.wsDial(t, e.ctx, tok, "")
	viaTicket := e.wsDial(t, e.ctx, "", "?ticket="+e.ticket(t, tok))
	sse := e.sseOpen(t, e.ctx, tok, "")
	spare := e.ticket(t, tok)
	other := e.wsDial(t, e.ctx, e.token, "")

	require.NoError(t, e.svc.RevokeAdmin(e.ctx, "", "ops2"))
	for _, c := range []*websocket.Conn{ws, viaTicket} {
		code, reason := wsClosed(t, e.ctx, c)
		require.Equal(t, websocket.StatusCode(4001), code)
		require.Equal(t, "admin revoked", reason)
	}
	require.Equal(t, "revoked", sse.closed(t))
	e.wsRefused(t, e.ctx, "", "?ticket="+spare, http.StatusUnauthorized)
	e.post(t, "ops still sees this")
	require.Equal(t, "ops still sees this", wsText(t, e.ctx, other))
}

// TestEventsAdminRotate: rotating an admin's token closes the streams of
// the old token and refuses its tickets; a stream of the new token,
// opened after the rotation, streams, from before it too.
func TestEventsAdminRotate(t *testing.T) {
	t.Parallel()
	e := newAccessEnv(t, stream.Config{})
	ws := e.wsDial(t, e.ctx, e.token, "")
	sse := e.sseOpen(t, e.ctx, e.token, "")
	spare := e.ticket(t, e.token)
	before := e.lastID(t)

	tok, err := e.svc.RotateAdmin(e.ctx, "", "ops")
	require.NoError(t, err)
	code, reason := wsClosed(t, e.ctx, ws)
	require.Equal(t, websocket.StatusCode(4001), code)
	require.Equal(t, "admin revoked", reason)
	require.Equal(t, "revoked", sse.closed(t))
	e.wsRefused(t, e.ctx, "", "?ticket="+spare, http.StatusUnauthorized)

	fresh := e.wsDial(t, e.ctx, tok, "?after="+jsonInt(before))
	viaTicket := e.wsDial(t, e.ctx, "", "?after="+jsonInt(before)+"&ticket="+e.ticket(t, tok))
	e.post(t, "after the rotation")
	require.Equal(t, "after the rotation", wsText(t, e.ctx, fresh))
	require.Equal(t, "after the rotation", wsText(t, e.ctx, viaTicket))
}

// TestEventsStreamCap: a user or an admin account has at most
// MaxStreamsPerCaller streams open (WebSocket and SSE together); one more
// is 429 with code 400311 and Retry-After, before any upgrade; closing
// one frees a slot; other callers are not counted against it.
func TestEventsStreamCap(t *testing.T) {
	t.Parallel()
	e := newAccessEnv(t, stream.Config{}) // the default cap, 10
	for _, token := range []string{e.userToken(t, "alice", time.Hour), e.token} {
		var first *websocket.Conn
		for i := range 10 {
			if i%2 == 0 {
				c := e.wsDial(t, e.ctx, token, "")
				if first == nil {
					first = c
				}
			} else {
				e.sseOpen(t, e.ctx, token, "")
			}
		}
		res := e.wsRefused(t, e.ctx, token, "", http.StatusTooManyRequests)
		require.NotEmpty(t, res.Header.Get("Retry-After"))
		var body struct{ Code int }
		require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
		require.Equal(t, 400311, body.Code)
		sse := e.sseTry(t, e.ctx, token, "")
		require.Equal(t, http.StatusTooManyRequests, sse.StatusCode)
		require.NotEmpty(t, sse.Header.Get("Retry-After"))
		sse.Body.Close()
		// A ticket of the same caller counts against the same slots.
		e.wsRefused(t, e.ctx, "", "?ticket="+e.ticket(t, token), http.StatusTooManyRequests)

		require.NoError(t, first.Close(websocket.StatusNormalClosure, ""))
		require.Eventually(t, func() bool {
			c, _, err := e.wsTry(e.ctx, token, "")
			if err != nil {
				return false
			}
			t.Cleanup(func() { c.CloseNow() })
			return true
		}, 10*time.Second, 5*time.Millisecond, "a closed stream frees its slot")
	}
	e.wsDial(t, e.ctx, e.userToken(t, "bob", time.Hour), "")
}

// TestEventsTicketAccess: a ticket opens a stream only while the access
// it was issued under is valid: not after the user's tokens were revoked,
// nor after its admin was revoked or rotated; a ticket issued under a
// token minted after the revocation opens one.
func TestEventsTicketAccess(t *testing.T) {
	t.Parallel()
	e := newAccessEnv(t, stream.Config{})
	_, tok2, err := e.svc.CreateAdmin(e.ctx, "", "ops2", "")
	require.NoError(t, err)
	user := e.ticket(t, e.userToken(t, "alice", time.Hour))
	rotated := e.ticket(t, e.token)
	revoked := e.ticket(t, tok2)

	require.NoError(t, e.svc.RevokeUserTokens(e.ctx, e.admin, "alice"))
	_, err = e.svc.RotateAdmin(e.ctx, "", "ops")
	require.NoError(t, err)
	require.NoError(t, e.svc.RevokeAdmin(e.ctx, "", "ops2"))
	for _, tk := range []string{user, rotated, revoked} {
		e.wsRefused(t, e.ctx, "", "?ticket="+tk, http.StatusUnauthorized)
	}
	e.wsDial(t, e.ctx, "", "?ticket="+e.ticket(t, e.userToken(t, "alice", time.Hour)))
}

// TestEventsBanSSE: a globally banned user's SSE stream receives its
// user.didGlobalBan, then a last stream.didClose "banned", and ends.
func TestEventsBanSSE(t *testing.T) {
	t.Parallel()
	e := newAccessEnv(t, stream.Config{})
	sse := e.sseOpen(t, e.ctx, e.userToken(t, "alice", time.Hour), "")
	require.NoError(t, e.svc.GlobalBan(e.ctx, e.admin, "alice", false))
	ev, _, ok := sse.next()
	require.True(t, ok)
	require.Equal(t, chat.EventUserDidGlobalBan, ev)
	require.Equal(t, "banned", sse.closed(t))
}

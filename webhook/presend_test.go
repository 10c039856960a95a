package webhook_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/webhook"
	"github.com/stretchr/testify/require"
)

const hookSecret = "presend-secret"

// hookServer is a local pre-send endpoint over TLS. It checks both
// signatures of every request and answers with what answer returns
// (nil: hang until the caller gives up).
type hookServer struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []chat.PreSendMessage
	badSig int
	answer func(m chat.PreSendMessage) (status int, body string)
}

func newHookServer(t *testing.T, answer func(m chat.PreSendMessage) (int, string)) *hookServer {
	h := &hookServer{answer: answer}
	h.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		okSHA1 := webhook.Verify([]byte(hookSecret), body, r.Header.Get(webhook.DefaultSignatureHeader))
		errStd := webhook.VerifyStandard([]byte(hookSecret), r.Header, body, time.Now(), 0)
		var m chat.PreSendMessage
		jerr := json.Unmarshal(body, &m)
		h.mu.Lock()
		if !okSHA1 || errStd != nil || jerr != nil {
			h.badSig++
		}
		h.got = append(h.got, m)
		h.mu.Unlock()
		if !okSHA1 || errStd != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		status, out := h.answer(m)
		if status == 0 {
			<-r.Context().Done() // hang until the caller gives up
			return
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, out)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// calls returns the requests received, after checking that every one
// was signed.
func (h *hookServer) calls(t *testing.T) []chat.PreSendMessage {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	require.Zero(t, h.badSig, "requests with a bad signature")
	return append([]chat.PreSendMessage(nil), h.got...)
}

// hookEnv is a Service on the memory store with the pre-send hook of srv.
type hookEnv struct {
	t       *testing.T
	ctx     context.Context
	svc     *chat.Service
	admin   string
	mu      sync.Mutex
	results map[string]int
}

func newHookEnv(t *testing.T, h *hookServer, mod func(*webhook.PreSendConfig)) *hookEnv {
	t.Helper()
	e := &hookEnv{t: t, ctx: context.Background(), results: map[string]int{}}
	pool := x509.NewCertPool()
	pool.AddCert(h.srv.Certificate())
	cfg := webhook.PreSendConfig{
		URL:          h.srv.URL,
		Secret:       hookSecret,
		AllowPrivate: true,        // the endpoint is on 127.0.0.1
		Timeout:      time.Minute, // only the hanging endpoint reaches a timeout
		TLSConfig:    &tls.Config{RootCAs: pool},
		Logger:       slog.New(slog.DiscardHandler),
		OnResult: func(r string) {
			e.mu.Lock()
			e.results[r]++
			e.mu.Unlock()
		},
	}
	if mod != nil {
		mod(&cfg)
	}
	hook, err := webhook.NewPreSendHook(cfg)
	require.NoError(t, err)
	st := memory.New()
	t.Cleanup(func() { _ = st.Close() })
	e.svc, err = chat.New(e.ctx, st, chat.Config{PreSendHook: hook})
	require.NoError(t, err)
	a, _, err := e.svc.CreateAdmin(e.ctx, "", "root", "")
	require.NoError(t, err)
	e.admin = a.UserID
	_, err = e.svc.CreateChannel(e.ctx, e.admin, chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"alice"}})
	require.NoError(t, err)
	return e
}

func (e *hookEnv) result() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{}
	for k, v := range e.results {
		out[k] = v
	}
	return out
}

func (e *hookEnv) post(text string) (*chat.MessageList, error) {
	return e.svc.CreateMessage(e.ctx, "alice", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: map[string]any{"text": text}})
}

// state is what a refused message must leave unchanged: the channel's
// messages and the event log.
func (e *hookEnv) state() (int, int64) {
	e.t.Helper()
	l, err := e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c", IncludeDeleted: true, Last: 100})
	require.NoError(e.t, err)
	ev, err := e.svc.RecentEvents(e.ctx, 1)
	require.NoError(e.t, err)
	var last int64
	if len(ev) > 0 {
		last = ev[0].ID
	}
	return len(l.Messages), last
}

func fixed(status int, body string) func(chat.PreSendMessage) (int, string) {
	return func(chat.PreSendMessage) (int, string) { return status, body }
}

func TestPreSendHookAllow(t *testing.T) {
	t.Parallel()
	h := newHookServer(t, fixed(200, `{"action":"allow"}`))
	e := newHookEnv(t, h, nil)
	out, err := e.post("hello")
	require.NoError(t, err)
	m := out.Messages[0]
	require.Zero(t, m.FlagCount)
	calls := h.calls(t)
	require.Len(t, calls, 1)
	// The hook saw the message as it was stored.
	require.Equal(t, chat.PreSendMessage{MessageID: m.MessageID, ChannelID: "c", UserID: "alice", Type: chat.MessageTypeText,
		Data: map[string]any{"text": "hello"}, Tags: []string{}}, calls[0])
	require.Equal(t, map[string]int{webhook.PreSendResultAllow: 1}, e.result())
}

func TestPreSendHookReject(t *testing.T) {
	t.Parallel()
	h := newHookServer(t, fixed(200, `{"action":"reject","reason":"spam detected"}`))
	e := newHookEnv(t, h, nil)
	n, last := e.state()
	_, err := e.post("buy now")
	var ce *chat.Error
	require.True(t, errors.As(err, &ce), "%v", err)
	require.Equal(t, chat.CodePreSendRejected, ce.Code)
	require.Contains(t, ce.Message, "spam detected")
	n2, last2 := e.state()
	require.Equal(t, n, n2, "no message stored")
	require.Equal(t, last, last2, "no event logged")
	require.Equal(t, map[string]int{webhook.PreSendResultReject: 1}, e.result())
}

func TestPreSendHookFlag(t *testing.T) {
	t.Parallel()
	h := newHookServer(t, fixed(200, `{"action":"flag","reason":"looks rude"}`))
	e := newHookEnv(t, h, nil)
	out, err := e.post("hmm")
	require.NoError(t, err)
	m := out.Messages[0]
	require.Equal(t, 1, m.FlagCount)
	require.NotZero(t, m.Hashflag.Bits)
	got, err := e.svc.GetMessage(e.ctx, e.admin, m.MessageID)
	require.NoError(t, err)
	require.Equal(t, 1, got.Messages[0].FlagCount, "the flag is stored")
	ev, err := e.svc.RecentEvents(e.ctx, 2)
	require.NoError(t, err)
	require.Equal(t, chat.EventMessageDidFlag, ev[0].Name)
	require.Equal(t, chat.EventMessageDidCreate, ev[1].Name)
	var d chat.PreSendFlagEventData
	require.NoError(t, json.Unmarshal(ev[0].Data, &d))
	require.True(t, d.PreSendHook)
	require.Equal(t, "looks rude", d.Reason)
	require.Empty(t, d.FlaggerID)

	// A user flagging it too adds a second flag: the hook's takes no
	// user's place.
	f, err := e.svc.FlagMessage(e.ctx, e.admin, m.MessageID)
	require.NoError(t, err)
	require.Equal(t, 2, f.Messages[0].FlagCount)

	// An edit the hook flags again adds nothing: the message has its flag.
	data := map[string]any{"text": "hmm!"}
	u, err := e.svc.UpdateMessage(e.ctx, "alice", chat.UpdateMessageInput{MessageID: m.MessageID, Data: &data})
	require.NoError(t, err)
	require.Equal(t, 2, u.Messages[0].FlagCount)
	require.Equal(t, map[string]int{webhook.PreSendResultFlag: 2}, e.result())
}

func TestPreSendHookEdit(t *testing.T) {
	t.Parallel()
	h := newHookServer(t, func(m chat.PreSendMessage) (int, string) {
		if m.Data["text"] == "bad" {
			return 200, `{"action":"reject","reason":"no"}`
		}
		return 200, `{"action":"allow"}`
	})
	e := newHookEnv(t, h, nil)
	out, err := e.post("fine")
	require.NoError(t, err)
	m := out.Messages[0]
	_, last := e.state()
	data := map[string]any{"text": "bad"}
	_, err = e.svc.UpdateMessage(e.ctx, "alice", chat.UpdateMessageInput{MessageID: m.MessageID, Data: &data})
	require.Equal(t, chat.CodePreSendRejected, chat.ErrorCode(err))
	got, err := e.svc.GetMessage(e.ctx, e.admin, m.MessageID)
	require.NoError(t, err)
	require.Equal(t, "fine", got.Messages[0].Data["text"], "the refused edit changed nothing")
	require.Nil(t, got.Messages[0].EditedAt)
	_, last2 := e.state()
	require.Equal(t, last, last2)
	calls := h.calls(t)
	require.Len(t, calls, 2)
	require.True(t, calls[1].Edit)
	require.Equal(t, m.MessageID, calls[1].MessageID)
	require.Equal(t, "bad", calls[1].Data["text"])
}

// A message the rules refuse never reaches the hook.
func TestPreSendHookAfterRules(t *testing.T) {
	t.Parallel()
	h := newHookServer(t, fixed(200, `{"action":"allow"}`))
	e := newHookEnv(t, h, nil)
	_, err := e.svc.CreateMessage(e.ctx, "mallory", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: map[string]any{"text": "hi"}})
	require.Equal(t, chat.CodePermissionDenied, chat.ErrorCode(err))
	_, err = e.svc.CreateMessage(e.ctx, "alice", chat.CreateMessageInput{ChannelID: "nope", Type: chat.MessageTypeText, Data: map[string]any{"text": "hi"}})
	require.Error(t, err)
	require.Empty(t, h.calls(t))
	require.Empty(t, e.result())
}

// Without a usable answer the policy decides: allow by default, reject
// when configured; each outcome is counted.
func TestPreSendHookFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		status int
		body   string
	}{
		{"hang", 0, ""},
		{"500", 500, `{"action":"allow"}`},
		{"garbage", 200, `<html>`},
		{"unknown action", 200, `{"action":"maybe"}`},
	}
	for _, c := range cases {
		for _, reject := range []bool{false, true} {
			name := c.name + "/allow"
			if reject {
				name = c.name + "/reject"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				h := newHookServer(t, fixed(c.status, c.body))
				e := newHookEnv(t, h, func(cfg *webhook.PreSendConfig) {
					cfg.RejectOnError = reject
					if c.status == 0 {
						cfg.Timeout = 50 * time.Millisecond
					}
				})
				n, last := e.state()
				out, err := e.post("hello")
				if c.status == 0 {
					// The hook may time out before the request even
					// reached the endpoint (a slow TLS handshake): the
					// outcome is the same.
					require.LessOrEqual(t, len(h.calls(t)), 1)
				} else {
					require.Len(t, h.calls(t), 1)
				}
				if reject {
					require.Equal(t, chat.CodePreSendRejected, chat.ErrorCode(err))
					n2, last2 := e.state()
					require.Equal(t, n, n2)
					require.Equal(t, last, last2)
					require.Equal(t, map[string]int{webhook.PreSendResultErrorRejected: 1}, e.result())
					return
				}
				require.NoError(t, err)
				require.Zero(t, out.Messages[0].FlagCount)
				require.Equal(t, map[string]int{webhook.PreSendResultErrorAllowed: 1}, e.result())
			})
		}
	}
}

func TestNewPreSendHookRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []webhook.PreSendConfig{
		{URL: "https://hook.example.com/check"},                            // no secret
		{URL: "http://hook.example.com/check", Secret: "k"},                // not https
		{URL: "https://127.0.0.1/check", Secret: "k"},                      // loopback
		{URL: "https://10.1.2.3/check", Secret: "k"},                       // private
		{URL: "/check", Secret: "k"},                                       // not absolute
		{URL: "ftp://hook.example.com/x", Secret: "k", AllowPrivate: true}, // scheme
	} {
		_, err := webhook.NewPreSendHook(c)
		require.Error(t, err, "%+v", c)
	}
	_, err := webhook.NewPreSendHook(webhook.PreSendConfig{URL: "https://hook.example.com/check", Secret: "k"})
	require.NoError(t, err)
	_, err = webhook.NewPreSendHook(webhook.PreSendConfig{URL: "http://127.0.0.1:9/check", Secret: "k", AllowPrivate: true})
	require.NoError(t, err)
}

package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/stretchr/testify/require"
)

func envelope(t *testing.T, id, event string, data any) []byte {
	t.Helper()
	raw, err := json.Marshal(data)
	require.NoError(t, err)
	b, err := json.Marshal(chat.Envelope{RequestID: id, WebhookID: "wh1", Event: event, Data: raw})
	require.NoError(t, err)
	return b
}

func signedRequest(secret, body []byte, ts time.Time) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(DefaultSignatureHeader, Sign(secret, body))
	var env chat.Envelope
	_ = json.Unmarshal(body, &env)
	req.Header.Set(HeaderID, env.RequestID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set(HeaderSignature, SignStandard(secret, env.RequestID, ts, body))
	return req
}

func TestReceiver(t *testing.T) {
	t.Parallel()
	secret := []byte("topsecret")
	var got []*Event
	h := NewReceiver(secret, func(ctx context.Context, ev *Event) error {
		got = append(got, ev)
		if ev.Event == "fail.please" {
			return errors.New("boom")
		}
		return nil
	})
	serve := func(req *http.Request) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	now := time.Now()
	msg := chat.MessageEventData{
		Messages: []chat.Message{{MessageID: "m1", ChannelID: "c1", UserID: "u1", Type: "text", Data: map[string]any{"text": "hi"}}},
		Users:    []chat.User{{UserID: "u1", DisplayName: "U One"}},
	}
	body := envelope(t, "r1", chat.EventMessageDidCreate, msg)
	w := serve(signedRequest(secret, body, now))
	require.Equal(t, http.StatusNoContent, w.Code)
	require.Len(t, got, 1)
	ev := got[0]
	require.Equal(t, "r1", ev.RequestID)
	require.Equal(t, "wh1", ev.WebhookID)
	require.Equal(t, chat.EventMessageDidCreate, ev.Event)
	m, err := ev.Message()
	require.NoError(t, err)
	require.Equal(t, "m1", m.Messages[0].MessageID)
	require.Equal(t, "hi", m.Messages[0].Data["text"])
	require.Equal(t, "U One", m.Users[0].DisplayName)
	_, err = ev.Channel()
	require.Error(t, err, "a message event has no channel data")

	// Tampered body, wrong secret, missing header: 401 and fn not called.
	tampered := signedRequest(secret, body, now)
	tampered.Body = httptestBody(bytes.Replace(body, []byte("hi"), []byte("ho"), 1))
	require.Equal(t, http.StatusUnauthorized, serve(tampered).Code)
	require.Equal(t, http.StatusUnauthorized, serve(signedRequest([]byte("other"), body, now)).Code)
	noSig := signedRequest(secret, body, now)
	noSig.Header.Del(DefaultSignatureHeader)
	require.Equal(t, http.StatusUnauthorized, serve(noSig).Code)
	require.Len(t, got, 1)

	// Signed garbage is 400; a failing handler 500; GET 405.
	garbage := []byte("not json")
	require.Equal(t, http.StatusBadRequest, serve(signedRequest(secret, garbage, now)).Code)
	require.Equal(t, http.StatusInternalServerError, serve(signedRequest(secret, envelope(t, "r2", "fail.please", map[string]any{}), now)).Code)
	require.Equal(t, http.StatusMethodNotAllowed, serve(httptest.NewRequest(http.MethodGet, "/hook", nil)).Code)
}

func httptestBody(b []byte) *readCloser { return &readCloser{bytes.NewReader(b)} }

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

func TestReceiverOptions(t *testing.T) {
	t.Parallel()
	secret, old := []byte("new-secret"), []byte("old-secret")
	calls := 0
	fn := func(context.Context, *Event) error { calls++; return nil }
	now := time.Unix(1_700_000_000, 0)
	body := envelope(t, "r1", chat.EventUserDidUpdate, chat.UserEventData{Users: []chat.User{{UserID: "u"}}})

	t.Run("header name", func(t *testing.T) {
		h := NewReceiver(secret, fn, WithSignatureHeader("X-Eko-Signature"))
		req := signedRequest(secret, body, now)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		require.Equal(t, http.StatusUnauthorized, w.Code, "signature is looked for in X-Eko-Signature")
		req = signedRequest(secret, body, now)
		req.Header.Set("X-Eko-Signature", req.Header.Get(DefaultSignatureHeader))
		w = httptest.NewRecorder()
		h.ServeHTTP(w, req)
		require.Equal(t, http.StatusNoContent, w.Code)
	})
	t.Run("max body", func(t *testing.T) {
		h := NewReceiver(secret, fn, WithMaxBodyBytes(16))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, signedRequest(secret, body, now))
		require.Equal(t, http.StatusRequestEntityTooLarge, w.Code)
	})
	t.Run("standard signature and replay window", func(t *testing.T) {
		h := NewReceiver(secret, fn, WithStandardSignature(time.Minute), WithClock(func() time.Time { return now }))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, signedRequest(secret, body, now.Add(-30*time.Second)))
		require.Equal(t, http.StatusNoContent, w.Code)
		w = httptest.NewRecorder()
		h.ServeHTTP(w, signedRequest(secret, body, now.Add(-2*time.Minute)))
		require.Equal(t, http.StatusUnauthorized, w.Code, "replayed after the tolerance")
		req := signedRequest(secret, body, now)
		req.Header.Del(HeaderSignature)
		w = httptest.NewRecorder()
		h.ServeHTTP(w, req)
		require.Equal(t, http.StatusUnauthorized, w.Code)
	})
	t.Run("rotation", func(t *testing.T) {
		h := NewReceiver(secret, fn, WithSecrets(old))
		for _, s := range [][]byte{secret, old} {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, signedRequest(s, body, now))
			require.Equal(t, http.StatusNoContent, w.Code)
		}
	})
}

func TestEventAccessors(t *testing.T) {
	t.Parallel()
	period := int64(60000)
	cases := []struct {
		event string
		data  any
		check func(t *testing.T, ev *Event)
	}{
		{chat.EventChannelDidAddUsers, chat.ChannelEventData{Channel: chat.Channel{ChannelID: "c1"}, UserIDs: []string{"u2"}, AdderID: "u1"},
			func(t *testing.T, ev *Event) {
				d, err := ev.Channel()
				require.NoError(t, err)
				require.Equal(t, "c1", d.Channel.ChannelID)
				require.Equal(t, []string{"u2"}, d.UserIDs)
				require.Equal(t, "u1", d.AdderID)
			}},
		{chat.EventChannelDidMute, chat.ChannelEventData{Channel: chat.Channel{ChannelID: "c1"}, MutePeriod: &period},
			func(t *testing.T, ev *Event) {
				d, err := ev.Channel()
				require.NoError(t, err)
				require.Equal(t, period, *d.MutePeriod)
			}},
		{chat.EventUserDidGlobalBan, chat.UserEventData{Users: []chat.User{{UserID: "u1", IsGlobalBan: true}}},
			func(t *testing.T, ev *Event) {
				d, err := ev.User()
				require.NoError(t, err)
				require.True(t, d.Users[0].IsGlobalBan)
				_, err = ev.Message()
				require.Error(t, err)
			}},
		{chat.EventReactionDidAdd, chat.ReactionEventData{Reactions: []chat.Reaction{{ReactionName: "like", ReferenceID: "m1"}}},
			func(t *testing.T, ev *Event) {
				d, err := ev.Reaction()
				require.NoError(t, err)
				require.Equal(t, "like", d.Reactions[0].ReactionName)
				_, err = ev.User()
				require.Error(t, err)
			}},
		{chat.EventMessageDidFlag, chat.MessageEventData{FlaggerID: "u9"},
			func(t *testing.T, ev *Event) {
				d, err := ev.Message()
				require.NoError(t, err)
				require.Equal(t, "u9", d.FlaggerID)
				_, err = ev.Reaction()
				require.Error(t, err)
			}},
		{chat.EventMessageDidUpdate, chat.MessageEventData{EditorID: "u7", Messages: []chat.Message{{MessageID: "m1", Data: map[string]any{"text": "edited"}}}},
			func(t *testing.T, ev *Event) {
				d, err := ev.Message()
				require.NoError(t, err)
				require.Equal(t, "u7", d.EditorID)
				require.Empty(t, d.FlaggerID)
				require.Equal(t, "edited", d.Messages[0].Data["text"])
				_, err = ev.Channel()
				require.Error(t, err)
			}},
	}
	for _, tc := range cases {
		t.Run(tc.event, func(t *testing.T) {
			var ev Event
			require.NoError(t, json.Unmarshal(envelope(t, "r", tc.event, tc.data), &ev))
			tc.check(t, &ev)
		})
	}
	bad := &Event{Event: chat.EventMessageDidCreate, Data: json.RawMessage(`{"messages":"nope"}`)}
	_, err := bad.Message()
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "message.didCreate"))
}

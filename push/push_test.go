package push

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/webhook"
)

func TestTruncateCountsCharacters(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"", 5, ""},
		{"abc", 5, "abc"},
		{"abcdef", 3, "abc"},
		{"héllo", 2, "hé"},
		{"日本語テキスト", 3, "日本語"},
		{"👍👍👍", 2, "👍👍"},
		{"abc", 0, ""},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, Truncate(tc.in, tc.n), tc.in)
	}
	long := strings.Repeat("é", 150) // 300 bytes
	got := Truncate(long, MaxBodyText)
	require.Equal(t, MaxBodyText, utf8.RuneCountInString(got))
	require.True(t, utf8.ValidString(got))
}

func TestForMessage(t *testing.T) {
	t.Parallel()
	n := ForMessage("General", "Ada", strings.Repeat("ü", 120), "ch1", "m1")
	require.Equal(t, "General", n.Title)
	require.Equal(t, "Ada: "+strings.Repeat("ü", 100), n.Body)
	require.Equal(t, map[string]string{"channelId": "ch1", "messageId": "m1"}, n.Data)
	require.Equal(t, "Ada", ForMessage("General", "Ada", "", "ch1", "m1").Body)
}

func TestErrorKinds(t *testing.T) {
	t.Parallel()
	for _, k := range []Kind{Gone, Retry, Permanent} {
		err := fmt.Errorf("wrapped: %w", &Error{Kind: k, Provider: FCM})
		require.Equal(t, k, KindOf(err))
		require.Equal(t, k == Gone, errors.Is(err, ErrGone))
		require.Equal(t, k == Retry, errors.Is(err, ErrRetry))
		require.Equal(t, k == Permanent, errors.Is(err, ErrPermanent))
	}
	require.Equal(t, Retry, KindOf(context.DeadlineExceeded))
	require.Equal(t, Permanent, KindOf(errors.New("other")))
	_, ok := RetryAfter(&Error{Kind: Retry})
	require.False(t, ok)
	d, ok := RetryAfter(&Error{Kind: Retry, RetryAfter: time.Minute})
	require.True(t, ok)
	require.Equal(t, time.Minute, d)
	require.Equal(t, "push firebase: gone (HTTP 404): UNREGISTERED",
		(&Error{Kind: Gone, Provider: FCM, Status: 404, Reason: "UNREGISTERED"}).Error())
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	require.Equal(t, 120*time.Second, parseRetryAfter("120", now))
	require.Equal(t, 90*time.Second, parseRetryAfter(now.Add(90*time.Second).Format(http.TimeFormat), now))
	require.Zero(t, parseRetryAfter("", now))
	require.Zero(t, parseRetryAfter("-3", now))
	require.Zero(t, parseRetryAfter("soon", now))
	require.Zero(t, parseRetryAfter(now.Add(-time.Hour).Format(http.TimeFormat), now))
}

type recordSender struct{ got []Device }

func (r *recordSender) Send(_ context.Context, d Device, _ Notification) error {
	r.got = append(r.got, d)
	return nil
}

func TestMux(t *testing.T) {
	t.Parallel()
	apn, fcm := &recordSender{}, &recordSender{}
	m := Mux{APNs: apn, FCM: fcm}
	require.NoError(t, m.Send(context.Background(), Device{Provider: APNs, Token: "a"}, Notification{}))
	require.NoError(t, m.Send(context.Background(), Device{Provider: FCM, Token: "f"}, Notification{}))
	err := m.Send(context.Background(), Device{Provider: WebPush, Token: "{}"}, Notification{})
	require.ErrorIs(t, err, ErrPermanent)
	require.Equal(t, []Device{{Provider: APNs, Token: "a"}}, apn.got)
	require.Equal(t, []Device{{Provider: FCM, Token: "f"}}, fcm.got)
}

func TestCheckDevice(t *testing.T) {
	t.Parallel()
	keys := `"keys":{"p256dh":"` + rfcUAPublic + `","auth":"` + rfcAuth + `"}`
	ok := []struct {
		in      Device
		private bool
		want    string
	}{
		{Device{APNs, "ABCDEF0123"}, false, "abcdef0123"},
		{Device{FCM, "dGVzdA:APA91b-x_y"}, false, "dGVzdA:APA91b-x_y"},
		{Device{WebPush, `{"endpoint":"https://push.example.net/w/1","expirationTime":null,` + keys + `}`}, false,
			`{"endpoint":"https://push.example.net/w/1",` + keys + `}`},
		{Device{WebPush, `{"endpoint":"http://127.0.0.1:9/w",` + keys + `}`}, true,
			`{"endpoint":"http://127.0.0.1:9/w",` + keys + `}`},
	}
	for _, tc := range ok {
		got, err := CheckDevice(tc.in, tc.private)
		require.NoError(t, err, tc.in.Token)
		require.Equal(t, tc.want, got.Token)
		if tc.in.Provider == WebPush {
			require.True(t, json.Valid([]byte(got.Token)))
		}
	}
	bad := []struct {
		in      Device
		field   string
		blocked bool
	}{
		{Device{"sms", "x"}, "provider", false},
		{Device{APNs, ""}, "token", false},
		{Device{APNs, "not-hex"}, "token", false},
		{Device{FCM, "has space"}, "token", false},
		{Device{WebPush, "not json"}, "token", false},
		{Device{WebPush, `{"endpoint":"http://push.example.net/w",` + keys + `}`}, "token", false},
		{Device{WebPush, `{"endpoint":"ftp://push.example.net/w",` + keys + `}`}, "token", false},
		{Device{WebPush, `{"endpoint":"https://127.0.0.1/w",` + keys + `}`}, "token", true},
		{Device{WebPush, `{"endpoint":"https://169.254.169.254/w",` + keys + `}`}, "token", true},
		{Device{WebPush, `{"endpoint":"https://push.example.net/w","keys":{"p256dh":"AAAA","auth":"` + rfcAuth + `"}}`}, "token", false},
		{Device{WebPush, `{"endpoint":"https://push.example.net/w","keys":{"p256dh":"` + rfcUAPublic + `","auth":"AAAA"}}`}, "token", false},
	}
	for _, tc := range bad {
		_, err := CheckDevice(tc.in, false)
		require.Error(t, err, tc.in.Token)
		var ce *chat.Error
		require.ErrorAs(t, err, &ce, tc.in.Token)
		require.Equal(t, chat.CodeBadRequest, ce.Code, tc.in.Token)
		require.Equal(t, []chat.Detail{chat.FieldError{Field: tc.field}}, ce.Detail, tc.in.Token)
		require.Equal(t, tc.blocked, errors.Is(err, webhook.ErrBlockedAddress), tc.in.Token)
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	m, err := New(Config{})
	require.NoError(t, err)
	require.Empty(t, m)
	k, err := GenerateVAPIDKey()
	require.NoError(t, err)
	m, err = New(Config{
		APNs:    &APNsConfig{Key: mustP8(t), KeyID: "k", TeamID: "t", Topic: "x"},
		WebPush: &WebPushConfig{VAPIDKey: k, Subject: "mailto:ops@example.com"},
	})
	require.NoError(t, err)
	require.IsType(t, &APNsSender{}, m[APNs])
	require.IsType(t, &WebPushSender{}, m[WebPush])
	require.Nil(t, m[FCM])
	_, err = New(Config{FCM: &FCMConfig{}})
	require.Error(t, err)
}

func TestNetworkFailureIsRetry(t *testing.T) {
	t.Parallel()
	s, p, base := newWebPush(t)
	// A listener that accepts and closes every connection at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	err = s.Send(context.Background(), Device{Provider: WebPush, Token: p.subscription("https://" + ln.Addr().String() + "/w")},
		ForMessage("c", "s", "t", "ch", "m"))
	require.ErrorIs(t, err, ErrRetry)
	var pe *Error
	require.ErrorAs(t, err, &pe)
	require.Zero(t, pe.Status)
	require.NoError(t, s.Send(context.Background(), Device{Provider: WebPush, Token: p.subscription(base)},
		ForMessage("c", "s", "t", "ch", "m")), "the sender still works")
}

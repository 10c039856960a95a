package chat_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestDetailJSON checks that each detail type marshals to the object the
// API has always sent (written out here as the maps it used to be) and
// that ParseDetail reads it back into the same value.
func TestDetailJSON(t *testing.T) {
	cases := []struct {
		d    chat.Detail
		wire any
	}{
		{chat.FieldError{Field: "channelId"}, map[string]string{"field": "channelId"}},
		{chat.FieldError{Field: "userIds", UserIDs: []string{"a", "b"}}, map[string]any{"field": "userIds", "userIds": []string{"a", "b"}}},
		{chat.UserRef{UserID: "bob"}, map[string]string{"userId": "bob"}},
		{chat.RuleRef{RuleID: "darn"}, map[string]string{"ruleId": "darn"}},
		{chat.RefusedLink{URL: "https://evil.io/x?a=<b>&c"}, map[string]string{"url": "https://evil.io/x?a=<b>&c"}},
		{chat.RetryAfter{Wait: 10 * time.Second}, map[string]any{"retryAfter": 10, "retryAfterMs": int64(10_000)}},
		{chat.RetryAfter{Wait: 5200 * time.Millisecond}, map[string]any{"retryAfter": 6, "retryAfterMs": int64(5200)}},
		{chat.RetryAfter{Wait: time.Millisecond}, map[string]any{"retryAfter": 1, "retryAfterMs": int64(1)}},
		{chat.AllowedMethods{Allow: []string{"GET", "PUT"}}, map[string]any{"allow": []string{"GET", "PUT"}}},
		{chat.AllowedMethods{}, map[string]any{"allow": []string(nil)}},
		{chat.RawDetail(`{"other":1}`), map[string]any{"other": 1}},
	}
	for _, c := range cases {
		got, err := json.Marshal(c.d)
		require.NoError(t, err)
		want, err := json.Marshal(c.wire)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "%T", c.d)
		back, err := chat.ParseDetail(got)
		require.NoError(t, err)
		require.Equal(t, c.d, back, "%s", got)
	}
	_, err := chat.ParseDetail([]byte("{not json"))
	require.Error(t, err)
	d, err := chat.ParseDetail([]byte(`"d"`))
	require.NoError(t, err)
	require.Equal(t, chat.RawDetail(`"d"`), d)
	d, err = chat.ParseDetail([]byte(`{"field":7}`))
	require.NoError(t, err)
	require.Equal(t, chat.RawDetail(`{"field":7}`), d, "a known key with another type stays raw")
}

// TestErrorDetailAs checks that errors.As reaches an Error's detail items
// and its cause, through wrapping.
func TestErrorDetailAs(t *testing.T) {
	cause := errors.New("disk on fire")
	err := error(&chat.Error{Code: chat.CodeBlacklisted, Message: "no", Detail: []chat.Detail{chat.RuleRef{RuleID: "darn"}}, Err: cause})
	err = errors.Join(errors.New("context"), err)
	var r chat.RuleRef
	require.ErrorAs(t, err, &r)
	require.Equal(t, "darn", r.RuleID)
	var f chat.FieldError
	require.False(t, errors.As(err, &f))
	require.ErrorIs(t, err, cause)
	require.ErrorIs(t, err, chat.ErrBlacklisted)

	e := chat.InvalidField("options.limit", "must be %d-%d", 1, 100)
	require.Equal(t, "options.limit: must be 1-100", e.Error())
	require.ErrorAs(t, e, &f)
	require.Equal(t, "options.limit", f.Field)
}

// TestMessageData checks the typed views of Message.Data.
func TestMessageData(t *testing.T) {
	m := chat.Message{Type: chat.MessageTypeText, Data: chat.TextData("hello")}
	text, ok := m.Text()
	require.True(t, ok)
	require.Equal(t, "hello", text)
	_, ok = m.Image()
	require.False(t, ok)

	type poll struct {
		Question string   `json:"question"`
		Options  []string `json:"options"`
		Votes    int      `json:"votes"`
	}
	data, err := chat.CustomData(poll{"lunch?", []string{"yes", "no"}, 3})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"question": "lunch?", "options": []any{"yes", "no"}, "votes": float64(3)}, data)
	m = chat.Message{Type: chat.MessageTypeCustom, Data: data}
	_, ok = m.Text()
	require.False(t, ok)
	var p poll
	require.NoError(t, m.DecodeData(&p))
	require.Equal(t, poll{"lunch?", []string{"yes", "no"}, 3}, p)
	_, err = chat.CustomData([]int{1})
	require.ErrorIs(t, err, chat.ErrBadRequest)

	// A deleted image has data {} and no image view.
	m = chat.Message{Type: chat.MessageTypeImage, IsDeleted: true, Data: map[string]any{}}
	_, ok = m.Image()
	require.False(t, ok)
}

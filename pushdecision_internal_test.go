package chat

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The push decision is a function of the members' devices and levels,
// mentions, presence and blocks.
func TestPushRecipients(t *testing.T) {
	t.Parallel()
	tg := func(user, device string, own, ch NotificationLevel) *PushTarget {
		return &PushTarget{UserID: user, DeviceID: device, UserLevel: own, ChannelLevel: ch}
	}
	targets := []*PushTarget{
		tg("ann", "a1", "", ""),                        // the author
		tg("bob", "b1", "", ""),                        // all by default
		tg("bob", "b2", "", ""),                        // one push per device
		tg("cat", "c1", NotifyMentions, ""),            // mentions only
		tg("dan", "d1", NotifyNone, NotifyAll),         // the channel's level wins
		tg("eve", "e1", NotifyAll, NotifyNone),         // the channel's level wins
		tg("fay", "f1", NotifyAll, NotifyMentions),     // mentions in this channel
		tg("gus", "g1", NotifyMentions, NotifyDefault), // default: the user's own
		tg("hal", "h1", "", ""),                        // online
		tg("ivy", "i1", "", ""),                        // blocks the author
		tg("jon", "j1", NotifyNone, ""),                // none, even when mentioned
	}
	ids := func(ts []*PushTarget) []string {
		out := []string{}
		for _, t := range ts {
			out = append(out, t.DeviceID)
		}
		return out
	}
	set := func(ids ...string) map[string]bool {
		m := map[string]bool{}
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	online, blockers := set("hal"), set("ivy")
	cases := []struct {
		name      string
		comment   bool
		mentioned map[string]bool
		want      []string
	}{
		{"plain message", false, nil, []string{"b1", "b2", "d1"}},
		{"mentions", false, set("cat", "fay", "gus", "jon", "hal", "ivy", "ann"), []string{"b1", "b2", "c1", "d1", "f1", "g1"}},
		{"comment", true, nil, []string{}},
		{"comment with mentions", true, set("bob", "cat", "eve"), []string{"b1", "b2", "c1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, ids(pushRecipients("ann", c.comment, targets, c.mentioned, online, blockers)))
		})
	}
	require.Equal(t, []string{"h1", "i1"}, ids(pushRecipients("ann", false, targets[8:10], nil, nil, nil)),
		"offline and not blocking: pushed")
}

func TestPushBody(t *testing.T) {
	t.Parallel()
	s := &Service{}
	long := ""
	for range 120 {
		long += "é"
	}
	require.Equal(t, "Ann: hi", s.pushBody("Ann", &Message{Type: MessageTypeText, Data: TextData("hi")}))
	b := s.pushBody("Ann", &Message{Type: MessageTypeText, Data: TextData(long)})
	require.Equal(t, "Ann: "+long[:200], b, "100 characters, not bytes")
	require.Equal(t, "Ann: look", s.pushBody("Ann", &Message{Type: MessageTypeImage, Data: map[string]any{"caption": "look"}}))
	require.Equal(t, "Ann", s.pushBody("Ann", &Message{Type: MessageTypeCustom, Data: map[string]any{"text": "x"}}))
	s.cfg.PushWithoutText = true
	require.Equal(t, "Ann", s.pushBody("Ann", &Message{Type: MessageTypeText, Data: TextData("hi")}))
}

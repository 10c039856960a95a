package chat_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// TestTextReachingTheStore checks that strings which reach the store
// without an id's checks (search text, filter tags, rule ids) are refused
// with CodeBadRequest naming the field when they hold a NUL byte or
// invalid UTF-8, and that the rules are left as they were.
func TestTextReachingTheStore(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.channel("c1", e.admin)
	e.mustPost(e.admin, "c1", "hello")
	_, err := e.svc.AddRules(e.ctx, e.admin, chat.Blacklist, []string{"bad"}, false)
	require.NoError(t, err)
	_, err = e.svc.AddRules(e.ctx, e.admin, chat.Whitelist, []string{"good.example"}, false)
	require.NoError(t, err)
	rules := func() []chat.Rule {
		b, err := e.svc.QueryRules(e.ctx, e.admin, chat.Blacklist, nil)
		require.NoError(t, err)
		w, err := e.svc.QueryRules(e.ctx, e.admin, chat.Whitelist, nil)
		require.NoError(t, err)
		return append(b.Records, w.Records...)
	}
	before := rules()
	require.Len(t, before, 2)
	for _, bad := range []string{"a\x00b", "\xff"} {
		cases := []struct {
			field string
			call  func() error
		}{
			{"search", func() error { _, err := e.svc.QueryUsers(e.ctx, e.admin, chat.UserQuery{Search: bad}); return err }},
			{"tags", func() error {
				_, err := e.svc.QueryChannels(e.ctx, e.admin, chat.ChannelQuery{Tags: []string{"t", bad}})
				return err
			}},
			{"excludeTags", func() error {
				_, err := e.svc.QueryChannels(e.ctx, e.admin, chat.ChannelQuery{ExcludeTags: []string{bad}})
				return err
			}},
			{"tags", func() error {
				_, err := e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c1", Tags: []string{bad}})
				return err
			}},
			{"excludeTags", func() error {
				_, err := e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "c1", ExcludeTags: []string{bad}})
				return err
			}},
			{"regexs", func() error { _, err := e.svc.QueryRules(e.ctx, e.admin, chat.Blacklist, []string{bad}); return err }},
			{"ruleIds", func() error { return e.svc.DeleteRules(e.ctx, e.admin, chat.Blacklist, []string{"bad", bad}) }},
			{"ruleIds", func() error { return e.svc.DeleteRules(e.ctx, e.admin, chat.Whitelist, []string{bad}) }},
			{"ruleId", func() error { _, err := e.svc.UpdateRule(e.ctx, e.admin, chat.Blacklist, bad, "x", false); return err }},
			{"ruleId", func() error {
				_, err := e.svc.UpdateRule(e.ctx, e.admin, chat.Whitelist, "good.example", bad, false)
				return err
			}},
			{"regexs", func() error {
				_, err := e.svc.AddRules(e.ctx, e.admin, chat.Whitelist, []string{bad}, false)
				return err
			}},
		}
		for _, c := range cases {
			err := c.call()
			require.Equal(t, chat.CodeBadRequest, chat.ErrorCode(err), "%s %q: %v", c.field, bad, err)
			require.True(t, strings.HasPrefix(err.Error(), c.field+": "), "%s %q: %v", c.field, bad, err)
		}
	}
	require.Equal(t, before, rules())
}

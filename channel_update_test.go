package chat_test

import (
	"testing"

	chat "github.com/chatengine/chat"
	"github.com/stretchr/testify/require"
)

func TestUpdateChannel(t *testing.T) {
	e := newEnv(t)
	_, err := e.svc.CreateChannel(e.ctx, e.admin, chat.CreateChannelInput{ChannelID: "c", Type: "standard", DisplayName: "Old",
		Metadata: map[string]any{"a": "1", "b": "2"}, Tags: []string{"x"}, UserIDs: []string{"alice"}})
	require.NoError(t, err)

	// Metadata and tags replace; displayName stays when absent.
	out, err := e.svc.UpdateChannel(e.ctx, e.admin, chat.UpdateChannelInput{ChannelID: "c",
		Metadata: &map[string]any{"b": "3"}, Tags: &[]string{"y", "z", "y"}})
	require.NoError(t, err)
	c := out.Channels[0]
	require.Equal(t, "Old", c.DisplayName)
	require.Equal(t, map[string]any{"b": "3"}, c.Metadata)
	require.Equal(t, []string{"y", "z"}, c.Tags)
	require.Equal(t, 1, c.MemberCount, "counters stay")
	got, err := e.svc.GetChannel(e.ctx, e.admin, "c")
	require.NoError(t, err)
	require.Equal(t, c.Metadata, got.Channels[0].Metadata)
	require.Equal(t, c.Tags, got.Channels[0].Tags)

	// Channel queries see the new tags.
	q, err := e.svc.QueryChannels(e.ctx, e.admin, chat.ChannelQuery{Tags: []string{"z"}})
	require.NoError(t, err)
	require.Len(t, q.Channels, 1)
	q, err = e.svc.QueryChannels(e.ctx, e.admin, chat.ChannelQuery{Tags: []string{"x"}})
	require.NoError(t, err)
	require.Empty(t, q.Channels, "the old tag is gone")

	// displayName alone; empty tags and metadata clear them.
	out, err = e.svc.UpdateChannel(e.ctx, e.admin, chat.UpdateChannelInput{ChannelID: "c", DisplayName: ptr("New"),
		Metadata: &map[string]any{}, Tags: &[]string{}})
	require.NoError(t, err)
	require.Equal(t, "New", out.Channels[0].DisplayName)
	require.Equal(t, map[string]any{}, out.Channels[0].Metadata)
	require.Equal(t, []string{}, out.Channels[0].Tags)

	// Refusals change nothing.
	for _, in := range []chat.UpdateChannelInput{
		{ChannelID: "c"},
		{ChannelID: "c", DisplayName: ptr("")},
		{ChannelID: "c", Tags: &[]string{""}},
		{ChannelID: "", DisplayName: ptr("x")},
	} {
		_, err := e.svc.UpdateChannel(e.ctx, e.admin, in)
		requireCode(t, err, chat.CodeBadRequest)
	}
	_, err = e.svc.UpdateChannel(e.ctx, e.admin, chat.UpdateChannelInput{ChannelID: "nope", DisplayName: ptr("x")})
	requireCode(t, err, chat.CodeNotFound)
	got, err = e.svc.GetChannel(e.ctx, e.admin, "c")
	require.NoError(t, err)
	require.Equal(t, "New", got.Channels[0].DisplayName)
	require.NoError(t, e.svc.CloseChannel(e.ctx, e.admin, "c"))
	_, err = e.svc.UpdateChannel(e.ctx, e.admin, chat.UpdateChannelInput{ChannelID: "c", DisplayName: ptr("x")})
	requireCode(t, err, chat.CodeForbidden)
}

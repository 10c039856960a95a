package httpapi_test

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/client"
)

// relationOf returns the channelUser of userID in cus.
func relationOf(t *testing.T, cus []chat.ChannelUser, channelID, userID string) chat.ChannelUser {
	t.Helper()
	for _, cu := range cus {
		if cu.ChannelID == channelID && cu.UserID == userID {
			return cu
		}
	}
	require.Failf(t, "no channelUser", "%s in %s: %+v", userID, channelID, cus)
	return chat.ChannelUser{}
}

// testReadState covers POST /channel/{channelId}/read and the
// readToSegment and unreadCount of channelUsers.
func testReadState(t *testing.T, e *env) {
	c := e.c
	_, bobToken, err := e.svc.CreateAdmin(ctx(t), "", "bob", "bob")
	require.NoError(t, err)
	cb := client.New(e.base, bobToken, client.WithHTTPClient(e.srv.Client()))
	for _, id := range []string{"room", "quiet"} {
		_, err := c.CreateChannel(ctx(t), client.CreateChannelRequest{ChannelID: id, Type: "standard", UserIDs: []string{e.admin, "bob"}})
		require.NoError(t, err)
	}
	// Segments 1-3 bob, 4 the admin, 5-6 bob; 7 bob's comment on 1; 2 deleted.
	var ids []string
	for i, by := range []*client.Client{cb, cb, cb, c, cb, cb} {
		m, err := by.SendText(ctx(t), "room", "m"+string(rune('1'+i)))
		require.NoError(t, err)
		ids = append(ids, m.MessageID)
	}
	_, err = cb.CreateMessage(ctx(t), client.CreateMessageRequest{ChannelID: "room", Type: chat.MessageTypeText,
		Data: chat.TextData("a comment"), ParentID: ids[0]})
	require.NoError(t, err)
	require.NoError(t, c.DeleteMessage(ctx(t), ids[1]))

	got, err := c.GetChannel(ctx(t), "room")
	require.NoError(t, err)
	me := relationOf(t, got.ChannelUsers, "room", e.admin)
	require.EqualValues(t, 0, me.ReadToSegment, "nothing read")
	require.EqualValues(t, 5, me.UnreadCount, "bob's live messages 1, 3, 5, 6, 7")
	bob := relationOf(t, got.ChannelUsers, "room", "bob")
	require.EqualValues(t, 1, bob.UnreadCount, "the admin's message 4")

	// Forward to a segment; backwards is a no-op returning the marker;
	// without a segment, the latest.
	steps := []struct {
		seg            int64
		marker, unread int64
	}{{3, 3, 3}, {2, 3, 3}, {3, 3, 3}, {0, 7, 0}, {5, 7, 0}}
	for _, s := range steps {
		out, err := c.MarkRead(ctx(t), "room", s.seg)
		require.NoError(t, err, "segment %d", s.seg)
		require.Equal(t, "room", out.ChannelID)
		require.Len(t, out.ChannelUsers, 1, "the caller's channelUser alone")
		cu := out.ChannelUsers[0]
		require.Equal(t, e.admin, cu.UserID)
		require.Equal(t, chat.MembershipMember, cu.Membership)
		require.Equal(t, s.marker, cu.ReadToSegment, "segment %d", s.seg)
		require.Equal(t, s.unread, cu.UnreadCount, "segment %d", s.seg)
		require.Equal(t, []string{e.admin}, userIDsOf(out.Users), "the caller side-loaded")
	}

	// The wire: the envelope of channel operations, both fields present.
	r := e.do("POST", "/channel/room/read", "application/json", `{}`)
	require.Equal(t, 200, r.status, "body %s", r.body)
	require.Len(t, r.json["channels"], 1)
	require.Len(t, r.json["users"], 1)
	cus := r.json["channelUsers"].([]any)
	require.Len(t, cus, 1)
	wire := cus[0].(map[string]any)
	require.EqualValues(t, 7, wire["readToSegment"])
	require.EqualValues(t, 0, wire["unreadCount"])
	// Forms and the body-less call work too.
	r = e.form("POST", "/channel/room/read", url.Values{"segment": {"1"}})
	require.Equal(t, 200, r.status, "body %s", r.body)
	r = e.do("POST", "/channel/room/read", "", "")
	require.Equal(t, 200, r.status, "body %s", r.body)

	// Bad segments: 400000 naming the field, nothing changed. Beyond the
	// latest segment is refused rather than clamped.
	_, err = cb.MarkRead(ctx(t), "room", 8)
	ce := requireCode(t, err, chat.CodeBadRequest)
	require.Contains(t, ce.Message, "segment")
	for _, body := range []string{`{"segment":0}`, `{"segment":-1}`, `{"segment":"x"}`, `{"segment":1.5}`, `{"segment":99}`} {
		requireError(t, e.do("POST", "/channel/quiet/read", "application/json", body), chat.CodeBadRequest, "segment")
	}
	got, err = c.GetChannel(ctx(t), "room")
	require.NoError(t, err)
	require.EqualValues(t, 0, relationOf(t, got.ChannelUsers, "room", "bob").ReadToSegment, "unchanged by the refused call")

	// A new message of another member is unread; a channel query by the
	// caller returns its own channelUsers with the counts.
	_, err = cb.SendText(ctx(t), "room", "new")
	require.NoError(t, err)
	list, err := c.QueryChannels(ctx(t), client.QueryChannelsRequest{Filter: chat.ChannelsMember})
	require.NoError(t, err)
	require.Len(t, list.ChannelUsers, 2)
	room := relationOf(t, list.ChannelUsers, "room", e.admin)
	require.Equal(t, []int64{7, 1}, []int64{room.ReadToSegment, room.UnreadCount})
	quiet := relationOf(t, list.ChannelUsers, "quiet", e.admin)
	require.Equal(t, []int64{0, 0}, []int64{quiet.ReadToSegment, quiet.UnreadCount})
	// Own messages are never unread.
	_, err = c.SendText(ctx(t), "quiet", "mine")
	require.NoError(t, err)
	out, err := c.MarkRead(ctx(t), "quiet", 0)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 0}, []int64{out.ChannelUsers[0].ReadToSegment, out.ChannelUsers[0].UnreadCount})
	got, err = cb.GetChannel(ctx(t), "quiet")
	require.NoError(t, err)
	require.EqualValues(t, 1, relationOf(t, got.ChannelUsers, "quiet", "bob").UnreadCount)

	// Members only: a non-member (admins too) is 403/400301 and gets no
	// relation; a banned user 400304; unknown 404; closed 400300.
	_, err = c.CreateChannel(ctx(t), client.CreateChannelRequest{ChannelID: "elsewhere", Type: "standard", UserIDs: []string{"bob"}})
	require.NoError(t, err)
	_, err = c.MarkRead(ctx(t), "elsewhere", 0)
	requireCode(t, err, chat.CodePermissionDenied)
	requireError(t, e.do("POST", "/channel/elsewhere/read", "application/json", `{}`), chat.CodePermissionDenied, "not a member")
	got, err = c.GetChannel(ctx(t), "elsewhere")
	require.NoError(t, err)
	require.Len(t, got.ChannelUsers, 1, "no relation made for the non-member")
	require.NoError(t, c.BanUsers(ctx(t), "room", []string{"bob"}))
	_, err = cb.MarkRead(ctx(t), "room", 0)
	requireCode(t, err, chat.CodeUserBanned)
	_, err = c.MarkRead(ctx(t), "nowhere", 0)
	requireCode(t, err, chat.CodeNotFound)
	require.NoError(t, c.CloseChannel(ctx(t), "quiet"))
	_, err = c.MarkRead(ctx(t), "quiet", 0)
	requireCode(t, err, chat.CodeForbidden)
}

// TestReadStatePostgres runs the read-state case of the suite (which runs
// on memory and SQLite) against the Postgres store.
func TestReadStatePostgres(t *testing.T) {
	t.Parallel()
	testReadState(t, newEnv(t, postgresStore))
}

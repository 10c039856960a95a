package stream_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/stream"
)

// Report events reach admins' streams only: neither the reporter nor the
// reported user receives them, live or on resume, and an admin filtered
// by channel does not either (a report is about no channel's stream).
func TestReportEventsAdminsOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memory.New(), stream.Config{})
	e.channel("mine", "alice", "bob")
	alice := e.subscribe(stream.Filter{UserID: "alice"}, nil)
	bob := e.subscribe(stream.Filter{UserID: "bob"}, nil)
	admin := e.subscribe(stream.Filter{Admin: true}, nil)
	scoped := e.subscribe(stream.Filter{Admin: true, ChannelIDs: []string{"mine"}}, nil)

	e.post("bob", "mine", "buy now")
	before := next(t, alice)
	require.Equal(t, "buy now", text(t, before))
	require.Equal(t, "buy now", text(t, next(t, bob)))
	require.Equal(t, "buy now", text(t, next(t, admin)))
	require.Equal(t, "buy now", text(t, next(t, scoped)))
	ms, err := e.svc.QueryMessages(e.ctx, e.admin, chat.MessageQuery{ChannelID: "mine"})
	require.NoError(t, err)
	mid := ms.Messages[0].MessageID

	r1, err := e.svc.CreateReport(e.ctx, "alice", chat.CreateReportInput{TargetType: chat.ReportTargetMessage, TargetID: mid, Reason: "spam"})
	require.NoError(t, err)
	_, err = e.svc.CreateReport(e.ctx, "alice", chat.CreateReportInput{TargetType: chat.ReportTargetUser, TargetID: "bob", Reason: "spam"})
	require.NoError(t, err)
	_, err = e.svc.ResolveReport(e.ctx, e.admin, chat.ResolveReportInput{ReportID: r1.Reports[0].ReportID, Action: chat.ResolveDismiss})
	require.NoError(t, err)
	require.Equal(t, chat.EventReportDidCreate, next(t, admin).Event)
	require.Equal(t, chat.EventReportDidCreate, next(t, admin).Event)
	require.Equal(t, chat.EventReportDidResolve, next(t, admin).Event)

	e.post("bob", "mine", "after")
	for _, s := range []*stream.Subscription{alice, bob, admin, scoped} {
		require.Equal(t, "after", text(t, next(t, s)), "no report event before it")
	}
	// Resuming from before the reports replays the message only.
	after := id(t, before)
	resumed := e.subscribe(stream.Filter{UserID: "alice"}, &after)
	require.Equal(t, "after", text(t, next(t, resumed)))
}

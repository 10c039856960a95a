package chat_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
)

// A purge deletes what existed when it started and ends even while the
// user keeps posting: the messages posted meanwhile stay, and so does
// everything posted after it returned.
func TestPurgeWhileTheUserPosts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, err := chat.New(ctx, memory.New(), chat.Config{PurgeBatch: 7})
	require.NoError(t, err)
	_, _, err = svc.CreateAdmin(ctx, "", "root", "root")
	require.NoError(t, err)
	_, err = svc.CreateChannel(ctx, "root", chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"sp"}})
	require.NoError(t, err)
	post := func() string {
		m, err := svc.CreateMessage(ctx, "sp", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: map[string]any{"text": "spam"}})
		require.NoError(t, err)
		return m.Messages[0].MessageID
	}
	var before []string
	for range 50 {
		before = append(before, post())
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var during []string
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			m, err := svc.CreateMessage(ctx, "sp", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: map[string]any{"text": "more"}})
			if err != nil {
				t.Error(err)
				return
			}
			during = append(during, m.Messages[0].MessageID)
		}
	}()
	res, err := svc.PurgeUserMessages(ctx, "root", chat.PurgeUserMessagesInput{UserID: "sp"})
	stop.Store(true)
	wg.Wait()
	require.NoError(t, err)
	require.GreaterOrEqual(t, res.Deleted, len(before))
	after := post()
	deleted := 0
	for _, id := range before {
		m, err := svc.GetMessage(ctx, "root", id)
		require.NoError(t, err)
		require.True(t, m.Messages[0].IsDeleted, id)
	}
	for _, id := range during {
		m, err := svc.GetMessage(ctx, "root", id)
		require.NoError(t, err)
		if m.Messages[0].IsDeleted {
			deleted++
		}
	}
	// Only posts made before the purge's start time can be in it.
	require.Equal(t, res.Deleted, len(before)+deleted)
	m, err := svc.GetMessage(ctx, "root", after)
	require.NoError(t, err)
	require.False(t, m.Messages[0].IsDeleted)
	// One entry, complete, with the count.
	log, err := svc.QueryAudit(ctx, "root", chat.AuditQuery{Action: chat.AuditUserPurgeMessages})
	require.NoError(t, err)
	require.Len(t, log.Audit, 1)
	require.EqualValues(t, res.Deleted, log.Audit[0].Details["deleted"])
	require.Equal(t, true, log.Audit[0].Details["complete"])
}

// An end user acting with a permission is the actor of its entries; a
// user may not read the log, check messages or purge.
func TestAuditActorIsTheUser(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx
	_, err := e.svc.PutRoles(ctx, e.admin, []string{"mod"}, []string{chat.PermBanUser, chat.PermManageMessages})
	require.NoError(t, err)
	roles := []string{"mod"}
	_, err = e.svc.UpdateUser(ctx, e.admin, chat.UpdateUserInput{UserID: "mo", Roles: &roles})
	require.NoError(t, err)
	e.channel("c", "mo", "x")
	m, err := e.svc.CreateMessage(ctx, "x", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: map[string]any{"text": "hi"}})
	require.NoError(t, err)
	require.NoError(t, e.svc.DeleteMessage(ctx, "mo", m.Messages[0].MessageID))
	require.NoError(t, e.svc.BanUsers(ctx, "mo", "c", []string{"x"}))
	log, err := e.svc.QueryAudit(ctx, e.admin, chat.AuditQuery{ActorID: "mo"})
	require.NoError(t, err)
	require.Len(t, log.Audit, 2)
	require.Equal(t, chat.AuditChannelBanUsers, log.Audit[0].Action)
	require.Equal(t, chat.AuditMessageDelete, log.Audit[1].Action)
	require.Equal(t, "x", log.Audit[1].Details["authorId"])
	_, err = e.svc.QueryAudit(ctx, "mo", chat.AuditQuery{})
	require.Equal(t, chat.CodePermissionDenied, chat.ErrorCode(err))
	_, err = e.svc.CheckMessage(ctx, "mo", "x", chat.CreateMessageInput{ChannelID: "c", Type: chat.MessageTypeText, Data: map[string]any{"text": "hi"}})
	require.Equal(t, chat.CodePermissionDenied, chat.ErrorCode(err))
	_, err = e.svc.PurgeUserMessages(ctx, "mo", chat.PurgeUserMessagesInput{UserID: "x"})
	require.Equal(t, chat.CodePermissionDenied, chat.ErrorCode(err))
}

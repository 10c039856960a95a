package chat_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
)

// Admins resolving one report at once: one resolution wins, the others
// are CodeConflict, and the log holds one report.resolve entry.
func TestResolveReportOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, err := chat.New(ctx, memory.New(), chat.Config{})
	require.NoError(t, err)
	for _, name := range []string{"a1", "a2", "a3", "a4"} {
		_, _, err = svc.CreateAdmin(ctx, "", name, name)
		require.NoError(t, err)
	}
	_, err = svc.CreateChannel(ctx, "a1", chat.CreateChannelInput{ChannelID: "c", Type: chat.ChannelTypeStandard, UserIDs: []string{"u", "v"}})
	require.NoError(t, err)
	rl, err := svc.CreateReport(ctx, "u", chat.CreateReportInput{TargetType: chat.ReportTargetUser, TargetID: "v", Reason: "spam"})
	require.NoError(t, err)
	id := rl.Reports[0].ReportID
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i, admin := range []string{"a1", "a2", "a3", "a4"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = svc.ResolveReport(ctx, admin, chat.ResolveReportInput{ReportID: id, Action: chat.ResolveDismiss})
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		} else {
			require.Equal(t, chat.CodeConflict, chat.ErrorCode(err), "%v", err)
		}
	}
	require.Equal(t, 1, won)
	log, err := svc.QueryAudit(ctx, "a1", chat.AuditQuery{Action: chat.AuditReportResolve})
	require.NoError(t, err)
	require.Len(t, log.Audit, 1)
	rl, err = svc.GetReport(ctx, "a1", id)
	require.NoError(t, err)
	require.Equal(t, log.Audit[0].ActorID, rl.Reports[0].Resolution.ActorID)
}

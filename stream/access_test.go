package stream_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/store/memory"
	"github.com/chatengine/chat/stream"
)

// TestSubscribeWithAccess: a Go subscription made with an Access ends
// with it (ErrRevoked, ErrAdminRevoked), is refused once it is no longer
// valid (CodeUnauthorized), and must be the subscriber's own
// (CodeBadRequest); one without an Access is not concerned.
func TestSubscribeWithAccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t, memory.New(), stream.Config{})
	ut, err := e.svc.IssueUserToken(e.ctx, "", "alice", time.Hour)
	require.NoError(t, err)
	ua, err := e.svc.UserTokenAccess(ut.Token)
	require.NoError(t, err)
	ops2, tok2, err := e.svc.CreateAdmin(e.ctx, "", "ops2", "")
	require.NoError(t, err)
	aa := chat.AdminAccess(ops2)

	_, err = e.hub.Subscribe(e.ctx, stream.Filter{UserID: "bob", Access: &ua}, nil)
	require.Equal(t, chat.CodeBadRequest, chat.ErrorCode(err), "another user's access: %v", err)
	_, err = e.hub.Subscribe(e.ctx, stream.Filter{Admin: true, Access: &ua}, nil)
	require.Equal(t, chat.CodeBadRequest, chat.ErrorCode(err), "a user's access for an admin stream: %v", err)

	user := e.subscribe(stream.Filter{UserID: "alice", Access: &ua}, nil)
	plain := e.subscribe(stream.Filter{UserID: "alice"}, nil)
	admin := e.subscribe(stream.Filter{Admin: true, UserID: ops2.UserID, Access: &aa}, nil)

	require.NoError(t, e.svc.RevokeUserTokens(e.ctx, e.admin, "alice"))
	_, err = user.Next(e.ctx)
	require.ErrorIs(t, err, stream.ErrRevoked)
	_, err = e.hub.Subscribe(e.ctx, stream.Filter{UserID: "alice", Access: &ua}, nil)
	require.Equal(t, chat.CodeUnauthorized, chat.ErrorCode(err), "a revoked access: %v", err)

	_, err = e.svc.RotateAdmin(e.ctx, "", "ops2")
	require.NoError(t, err)
	_, err = admin.Next(e.ctx)
	require.ErrorIs(t, err, stream.ErrAdminRevoked)
	_, err = e.hub.Subscribe(e.ctx, stream.Filter{Admin: true, Access: &aa}, nil)
	require.Equal(t, chat.CodeUnauthorized, chat.ErrorCode(err), "a rotated admin's access: %v", err)
	_, err = e.svc.Authenticate(e.ctx, tok2)
	require.Equal(t, chat.CodeUnauthorized, chat.ErrorCode(err))

	e.channel("later", "alice")
	f := next(t, plain)
	require.Equal(t, chat.EventChannelDidCreate, f.Event, "no internal event, and still open")
	ctx, cancel := context.WithTimeout(e.ctx, time.Millisecond)
	defer cancel()
	_, err = plain.Next(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

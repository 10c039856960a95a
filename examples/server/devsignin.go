package main

import (
	"context"
	"time"

	chat "github.com/chatengine/chat"
)

// devSignInTTL is the lifetime of the tokens of -unsafe-dev-sign-in.
const devSignInTTL = 24 * time.Hour

// devSignIn mints a user token for whatever user id the chat page sends
// (-unsafe-dev-sign-in): development only.
func devSignIn(svc *chat.Service) func(ctx context.Context, userID string) (*chat.UserToken, error) {
	return func(ctx context.Context, userID string) (*chat.UserToken, error) {
		return svc.IssueUserToken(ctx, "", userID, devSignInTTL)
	}
}

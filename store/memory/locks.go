package memory

import (
	"context"

	chat "github.com/chatengine/chat"
)

// The methods of chat.LockStore read as the matching Get methods: one
// transaction runs at a time under the store's lock, so no row can change
// between a read and a write of the same transaction.

func (t *tx) LockChannel(ctx context.Context, channelID string) (*chat.Channel, error) {
	return t.GetChannel(ctx, channelID)
}
func (t *tx) LockChannelUser(ctx context.Context, channelID, userID string) (*chat.ChannelUser, error) {
	return t.GetChannelUser(ctx, channelID, userID)
}
func (t *tx) LockChannelUsers(ctx context.Context, channelID string, userIDs []string) ([]*chat.ChannelUser, error) {
	return t.GetChannelUsers(ctx, channelID, userIDs)
}
func (t *tx) LockMessage(ctx context.Context, messageID string) (*chat.Message, error) {
	return t.GetMessage(ctx, messageID)
}
func (t *tx) LockUser(ctx context.Context, userID string) (*chat.User, error) {
	return t.GetUser(ctx, userID)
}
func (t *tx) LockWebhook(ctx context.Context, webhookID string) (*chat.Webhook, error) {
	return t.GetWebhook(ctx, webhookID)
}
func (t *tx) LockReport(ctx context.Context, reportID string) (*chat.Report, error) {
	return t.GetReport(ctx, reportID)
}

package client

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"net/url"

	chat "github.com/chatengine/chat"
)

// CreateWebhook registers a receiver for the named events (every event
// when empty) and returns it with its secret, shown only here (POST
// /webhooks, ext).
func (c *Client) CreateWebhook(ctx context.Context, rawURL string, events []string) (*chat.Webhook, error) {
	in := struct {
		URL    string   `json:"url"`
		Events []string `json:"events,omitempty"`
	}{rawURL, events}
	return c.oneWebhook(ctx, "/webhooks", in)
}

func (c *Client) oneWebhook(ctx context.Context, path string, in any) (*chat.Webhook, error) {
	var out chat.WebhookList
	if err := c.do(ctx, http.MethodPost, path, nil, in, &out); err != nil {
		return nil, err
	}
	if len(out.Webhooks) != 1 {
		return nil, errors.New("chat api: expected one webhook in the response")
	}
	return &out.Webhooks[0], nil
}

// ListWebhooks returns every webhook, without secrets (GET /webhooks, ext).
func (c *Client) ListWebhooks(ctx context.Context) (*chat.WebhookList, error) {
	var out chat.WebhookList
	return &out, c.do(ctx, http.MethodGet, "/webhooks", nil, nil, &out)
}

// DeleteWebhook deletes a webhook (DELETE /webhooks/{webhookId}, ext).
func (c *Client) DeleteWebhook(ctx context.Context, webhookID string) error {
	return c.action(ctx, http.MethodDelete, "/webhooks/"+esc(webhookID), nil)
}

// RotateWebhookSecret gives a webhook a new secret and returns it (POST
// /webhooks/{webhookId}/secret, ext).
func (c *Client) RotateWebhookSecret(ctx context.Context, webhookID string) (*chat.Webhook, error) {
	return c.oneWebhook(ctx, "/webhooks/"+esc(webhookID)+"/secret", struct{}{})
}

// ListDeliveries returns a webhook's deliveries, newest first, with their
// attempts (GET /webhooks/{webhookId}/deliveries, ext). limit 0 means 10;
// token continues the listing.
func (c *Client) ListDeliveries(ctx context.Context, webhookID string, limit int, token string) (*chat.DeliveryList, error) {
	q := query{}
	q.int("limit", limit)
	q.str("token", token)
	var out chat.DeliveryList
	return &out, c.do(ctx, http.MethodGet, "/webhooks/"+esc(webhookID)+"/deliveries", url.Values(q), nil, &out)
}

// Deliveries iterates over every delivery of a webhook, newest first.
func (c *Client) Deliveries(ctx context.Context, webhookID string, limit int) iter.Seq2[chat.DeliveryInfo, error] {
	return pages(func(token string) ([]chat.DeliveryInfo, *chat.Paging, error) {
		out, err := c.ListDeliveries(ctx, webhookID, limit, token)
		if err != nil {
			return nil, nil, err
		}
		return out.Deliveries, out.Paging, nil
	})
}

// Redeliver schedules a delivery again now, with the same requestId (POST
// /webhooks/{webhookId}/deliveries/{requestId}/redeliver, ext).
func (c *Client) Redeliver(ctx context.Context, webhookID, requestID string) error {
	return c.action(ctx, http.MethodPost, "/webhooks/"+esc(webhookID)+"/deliveries/"+esc(requestID)+"/redeliver", struct{}{})
}

package httpapi

import (
	"net/http"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/webhook"
)

// createWebhook serves POST /webhooks: 201 with {"webhooks":[webhook]},
// the only response that shows the secret besides a rotation.
func (h *handler) createWebhook(w http.ResponseWriter, r *http.Request) error {
	p, err := h.decode(w, r)
	if err != nil {
		return err
	}
	rawURL, events := p.str("url"), p.strs("events")
	if err := p.Err(); err != nil {
		return err
	}
	if rawURL != "" {
		if err := webhook.CheckURL(rawURL, h.cfg.AllowPrivateWebhooks); err != nil {
			return err
		}
	}
	hook, err := h.svc.CreateWebhook(r.Context(), actor(r), rawURL, events)
	if err != nil {
		return err
	}
	out := &chat.WebhookList{Webhooks: []chat.Webhook{*hook}}
	normalize(out)
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// listWebhooks serves GET /webhooks (secrets are not shown).
func (h *handler) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	out, err := h.svc.ListWebhooks(r.Context(), actor(r))
	return h.reply(w, out, err)
}

// deleteWebhook serves DELETE /webhooks/{webhookId}.
func (h *handler) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := pathParam(r, "webhookId")
	if err != nil {
		return err
	}
	return h.done(w, h.svc.DeleteWebhook(r.Context(), actor(r), id))
}

// rotateWebhookSecret serves POST /webhooks/{webhookId}/secret:
// {"webhooks":[webhook]} with the new secret.
func (h *handler) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) error {
	id, err := pathParam(r, "webhookId")
	if err != nil {
		return err
	}
	hook, err := h.svc.RotateWebhookSecret(r.Context(), actor(r), id)
	if err != nil {
		return err
	}
	return h.reply(w, &chat.WebhookList{Webhooks: []chat.Webhook{*hook}}, nil)
}

// listDeliveries serves GET /webhooks/{webhookId}/deliveries.
func (h *handler) listDeliveries(w http.ResponseWriter, r *http.Request) error {
	id, p, err := h.pathAndParams(w, r, "webhookId")
	if err != nil {
		return err
	}
	limit, token := p.integer("limit"), p.str("token")
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.ListDeliveries(r.Context(), actor(r), id, limit, token)
	return h.reply(w, out, err)
}

// redeliver serves POST /webhooks/{webhookId}/deliveries/{requestId}/redeliver.
func (h *handler) redeliver(w http.ResponseWriter, r *http.Request) error {
	id, err := pathParam(r, "webhookId")
	if err != nil {
		return err
	}
	req, err := pathParam(r, "requestId")
	if err != nil {
		return err
	}
	return h.done(w, h.svc.Redeliver(r.Context(), actor(r), id, req))
}

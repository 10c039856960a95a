package console

import (
	"net/http"
	"net/url"

	chat "github.com/chatengine/chat"
)

// webhooksRoutes serves the webhooks: registration (the secret is shown
// once), secret rotation, deletion, and each webhook's delivery log with
// redelivery.
func (h *handler) webhooksRoutes(rt *router) {
	rt.get("/webhooks", h.webhooks)
	rt.post("/webhooks", func(q *req) {
		w, err := h.svc.CreateWebhook(q.r.Context(), q.actor(), q.form("url"), list(q.form("events")))
		if err != nil {
			q.done("/webhooks", err, "")
			return
		}
		h.showSecret(q, w, "Webhook registered. Copy its secret now: it is shown only this once.")
	})
	rt.post("/webhooks/{id}/secret", func(q *req) {
		w, err := h.svc.RotateWebhookSecret(q.r.Context(), q.actor(), q.pathID("id"))
		if err != nil {
			q.done("/webhooks", err, "")
			return
		}
		h.showSecret(q, w, "New secret made; the old one no longer signs deliveries. Copy it now: it is shown only this once.")
	})
	rt.post("/webhooks/{id}/delete", func(q *req) {
		if !q.confirmed() {
			q.fail("/webhooks", "Deleting a webhook drops its pending deliveries: tick the box to confirm.")
			return
		}
		q.done("/webhooks", h.svc.DeleteWebhook(q.r.Context(), q.actor(), q.pathID("id")), "Webhook deleted.")
	})
	rt.get("/webhooks/{id}", h.deliveries)
	rt.post("/webhooks/{id}/deliveries/{rid}/redeliver", func(q *req) {
		id := q.pathID("id")
		err := h.svc.Redeliver(q.r.Context(), q.actor(), id, q.pathID("rid"))
		q.done("/webhooks/"+esc(id), err, "Delivery queued again.")
	})
}

type webhooksView struct {
	Webhooks []chat.Webhook
	Secret   *chat.Webhook // the webhook whose secret is shown once
	Error    string
}

func (h *handler) webhookList(q *req) webhooksView {
	var v webhooksView
	wl, err := h.svc.ListWebhooks(q.r.Context(), q.actor())
	if err != nil {
		v.Error = h.human(err)
	} else {
		v.Webhooks = wl.Webhooks
	}
	return v
}

func (h *handler) webhooks(q *req) {
	q.render(http.StatusOK, "webhooks", "webhooks", "Webhooks", h.webhookList(q))
}

// showSecret answers the POST itself with the secret, so that it never
// travels in a redirect, a cookie or a later page.
func (h *handler) showSecret(q *req, w *chat.Webhook, text string) {
	v := h.webhookList(q)
	v.Secret = w
	q.h.renderPage(q.w, q.r, http.StatusOK, "webhooks", view{
		Title: "Webhooks", Nav: "webhooks", Admin: q.admin, CSRF: q.sess.CSRFToken, Data: v,
		Flash: &flash{Kind: "ok", Text: text},
	})
}

type deliveriesView struct {
	Webhook    chat.Webhook
	Deliveries []chat.DeliveryInfo
	Next       string
	Error      string
}

func (h *handler) deliveries(q *req) {
	id := q.pathID("id")
	var v deliveriesView
	wl, err := h.svc.ListWebhooks(q.r.Context(), q.actor())
	if err == nil {
		err = chat.Errorf(chat.CodeNotFound, "webhook %q not found", id)
		for _, w := range wl.Webhooks {
			if w.WebhookID == id {
				v.Webhook, err = w, nil
			}
		}
	}
	if err != nil {
		q.render(http.StatusNotFound, "message", "webhooks", "Webhook not found", h.human(err))
		return
	}
	dl, err := h.svc.ListDeliveries(q.r.Context(), q.actor(), id, 20, q.form("token"))
	if err != nil {
		v.Error = h.human(err)
	} else {
		v.Deliveries = dl.Deliveries
		if dl.Paging != nil && dl.Paging.Next != "" {
			v.Next = h.cfg.Prefix + "/webhooks/" + esc(id) + "?token=" + url.QueryEscape(dl.Paging.Next)
		}
	}
	q.render(http.StatusOK, "deliveries", "webhooks", "Deliveries of "+v.Webhook.URL, v)
}

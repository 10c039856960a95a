package chat

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/url"
	"strings"
)

// WebhookList is the response of the webhook listing.
type WebhookList struct {
	Webhooks []Webhook `json:"webhooks"`
}

// DeliveryInfo is a delivery with its attempts.
type DeliveryInfo struct {
	Delivery
	AttemptLog []DeliveryAttempt `json:"attemptLog"`
}

// DeliveryList is the response of the deliveries log.
type DeliveryList struct {
	Deliveries []DeliveryInfo `json:"deliveries"`
	Paging     *Paging        `json:"paging,omitempty"`
}

func newSecret() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return "whsec_" + base64.StdEncoding.EncodeToString(b[:])
}

func (s *Service) checkWebhookURL(raw string) error {
	if raw == "" {
		return invalid("url", "is required")
	}
	if len(raw) > 2048 || hasControl(raw) {
		return invalid("url", "must be at most 2048 characters without control characters")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return invalid("url", "must be an http or https URL without credentials")
	}
	if s.cfg.WebhookURLCheck != nil {
		if err := s.cfg.WebhookURLCheck(raw); err != nil {
			return invalid("url", "%s", err.Error())
		}
	}
	return nil
}

func checkEventNames(events []string) ([]string, error) {
	known := map[string]bool{}
	for _, e := range EventNames {
		known[e] = true
	}
	for _, e := range events {
		if !known[e] {
			return nil, invalid("events", "unknown event %s (known: %s)", quote(e), strings.Join(EventNames, ", "))
		}
	}
	return dedupe(events), nil
}

// CreateWebhook registers a receiver for the named events (all events when
// empty) and returns it with its secret, shown only here. Errors:
// CodeBadRequest (bad URL, unknown event).
func (s *Service) CreateWebhook(ctx context.Context, actorID, rawURL string, eventNames []string) (*Webhook, error) {
	if err := s.allow(ctx, actorID, actWebhooks, ""); err != nil {
		return nil, err
	}
	return s.createWebhook(ctx, actorID, rawURL, eventNames, "")
}

func (s *Service) createWebhook(ctx context.Context, actorID, rawURL string, eventNames []string, secret string) (*Webhook, error) {
	if err := s.checkWebhookURL(rawURL); err != nil {
		return nil, err
	}
	evs, err := checkEventNames(eventNames)
	if err != nil {
		return nil, err
	}
	if secret == "" {
		secret = newSecret()
	}
	now := s.Now()
	w := &Webhook{WebhookID: s.newID(), URL: rawURL, Events: emptyIfNil(evs), Secret: secret, CreatedAt: now, UpdatedAt: now}
	err = s.update(ctx, func(tx Tx, _ *events) error {
		if err := tx.CreateWebhook(ctx, w); err != nil {
			return err
		}
		return s.audit(ctx, tx, actorID, AuditWebhookCreate, AuditTargetWebhook, w.WebhookID, "",
			map[string]any{"url": w.URL, "events": stringsAny(w.Events)})
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// EnsureWebhook makes sure a webhook for rawURL with the given secret
// exists (the example server's static webhook): it updates the secret and
// re-enables an existing registration for the URL, or creates one.
// actorID as in CreateAdmin. Errors: CodeBadRequest (bad URL, empty
// secret).
func (s *Service) EnsureWebhook(ctx context.Context, actorID, rawURL, secret string) (*Webhook, error) {
	if secret == "" {
		return nil, invalid("secret", "is required")
	}
	if err := s.checkWebhookURL(rawURL); err != nil {
		return nil, err
	}
	var found *Webhook
	now := s.Now()
	err := s.update(ctx, func(tx Tx, _ *events) error {
		hs, err := tx.ListWebhooks(ctx)
		if err != nil {
			return err
		}
		for _, h := range hs {
			if h.URL != rawURL {
				continue
			}
			// The list was read without locks: hold the row to write it.
			if h, err = tx.LockWebhook(ctx, h.WebhookID); ErrorCode(err) == CodeNotFound {
				continue // deleted since
			} else if err != nil {
				return err
			}
			if h.URL == rawURL {
				h.Secret, h.IsDisabled, h.DisabledReason, h.UpdatedAt = secret, false, "", now
				h.Events = emptyIfNil(h.Events)
				found = h
				if err := tx.UpdateWebhook(ctx, h); err != nil {
					return err
				}
				return s.audit(ctx, tx, actorID, AuditWebhookUpdate, AuditTargetWebhook, h.WebhookID, "",
					map[string]any{"url": h.URL, "events": stringsAny(h.Events)})
			}
		}
		return nil
	})
	if err != nil || found != nil {
		return found, err
	}
	return s.createWebhook(ctx, actorID, rawURL, nil, secret)
}

// ListWebhooks returns every webhook without secrets. Errors: only the
// store's (CodeUnavailable, CodeInternal).
func (s *Service) ListWebhooks(ctx context.Context, actorID string) (*WebhookList, error) {
	if err := s.allow(ctx, actorID, actWebhooks, ""); err != nil {
		return nil, err
	}
	out := &WebhookList{Webhooks: []Webhook{}}
	err := s.view(ctx, func(tx Tx) error {
		hs, err := tx.ListWebhooks(ctx)
		for _, h := range hs {
			h.Secret = ""
			h.Events = emptyIfNil(h.Events)
			out.Webhooks = append(out.Webhooks, *h)
		}
		return err
	})
	return out, err
}

// DeleteWebhook deletes a webhook and its pending deliveries. Errors:
// CodeNotFound.
func (s *Service) DeleteWebhook(ctx context.Context, actorID, webhookID string) error {
	if err := s.allow(ctx, actorID, actWebhooks, ""); err != nil {
		return err
	}
	return s.update(ctx, func(tx Tx, _ *events) error {
		if err := tx.DeleteWebhook(ctx, webhookID); err != nil {
			return notFound(err, "webhook", webhookID)
		}
		return s.audit(ctx, tx, actorID, AuditWebhookDelete, AuditTargetWebhook, webhookID, "", nil)
	})
}

// RotateWebhookSecret gives a webhook a new secret, returned only here,
// and re-enables it. Errors: CodeNotFound.
func (s *Service) RotateWebhookSecret(ctx context.Context, actorID, webhookID string) (*Webhook, error) {
	if err := s.allow(ctx, actorID, actWebhooks, ""); err != nil {
		return nil, err
	}
	now := s.Now()
	var w *Webhook
	err := s.update(ctx, func(tx Tx, _ *events) error {
		var err error
		w, err = tx.LockWebhook(ctx, webhookID)
		if err != nil {
			return notFound(err, "webhook", webhookID)
		}
		w.Secret, w.IsDisabled, w.DisabledReason, w.UpdatedAt = newSecret(), false, "", now
		w.Events = emptyIfNil(w.Events)
		if err := tx.UpdateWebhook(ctx, w); err != nil {
			return err
		}
		return s.audit(ctx, tx, actorID, AuditWebhookRotate, AuditTargetWebhook, webhookID, "", nil)
	})
	return w, err
}

// DisableWebhook disables a webhook, recording why (its disabledReason),
// with a webhook.disable audit entry in the same transaction by actorID:
// "" for the server's operator (the webhook dispatcher passes it for a
// receiver that answered 410 Gone), as in CreateAdmin. A webhook already
// disabled stays as it is, with no entry. Errors: CodeNotFound,
// CodeBadRequest (an empty reason).
func (s *Service) DisableWebhook(ctx context.Context, actorID, webhookID, reason string) error {
	if reason == "" {
		return invalid("reason", "is required")
	}
	now := s.Now()
	return s.update(ctx, func(tx Tx, _ *events) error {
		w, err := tx.LockWebhook(ctx, webhookID)
		if err != nil {
			return notFound(err, "webhook", webhookID)
		}
		if w.IsDisabled {
			return nil
		}
		w.IsDisabled, w.DisabledReason, w.UpdatedAt = true, reason, now
		w.Events = emptyIfNil(w.Events)
		if err := tx.UpdateWebhook(ctx, w); err != nil {
			return notFound(err, "webhook", webhookID)
		}
		return s.audit(ctx, tx, actorID, AuditWebhookDisable, AuditTargetWebhook, webhookID, "",
			map[string]any{"reason": reason})
	})
}

// ListDeliveries returns a webhook's deliveries, newest first, with their
// attempts. Token continues the listing. Errors: CodeNotFound,
// CodeBadRequest.
func (s *Service) ListDeliveries(ctx context.Context, actorID, webhookID string, limit int, token string) (*DeliveryList, error) {
	if err := s.allow(ctx, actorID, actWebhooks, ""); err != nil {
		return nil, err
	}
	limit, err := s.pageSize("limit", limit, s.lim.DefaultPage)
	if err != nil {
		return nil, err
	}
	qh := queryHash(webhookID)
	before := ""
	if token != "" {
		tok, err := s.decodeToken("token", token, "deliveries", qh)
		if err != nil {
			return nil, err
		}
		before = tok.ID
	}
	out := &DeliveryList{Deliveries: []DeliveryInfo{}, Paging: &Paging{}}
	err = s.view(ctx, func(tx Tx) error {
		if _, err := tx.GetWebhook(ctx, webhookID); err != nil {
			return notFound(err, "webhook", webhookID)
		}
		ds, err := tx.ListDeliveries(ctx, webhookID, before, limit+1)
		if err != nil {
			return err
		}
		more := len(ds) > limit
		if more {
			ds = ds[:limit]
		}
		for _, d := range ds {
			as, err := tx.ListAttempts(ctx, d.RequestID)
			if err != nil {
				return err
			}
			info := DeliveryInfo{Delivery: *d, AttemptLog: make([]DeliveryAttempt, 0, len(as))}
			for _, a := range as {
				info.AttemptLog = append(info.AttemptLog, *a)
			}
			out.Deliveries = append(out.Deliveries, info)
		}
		if more {
			out.Paging.Next = s.encodeToken(pageToken{K: "deliveries", Q: qh, D: "n", ID: ds[len(ds)-1].RequestID})
		}
		return nil
	})
	return out, err
}

// Redeliver schedules a delivery again now, with the same requestId (a
// delivered or failed one too). Errors: CodeNotFound.
func (s *Service) Redeliver(ctx context.Context, actorID, webhookID, requestID string) error {
	if err := s.allow(ctx, actorID, actWebhooks, ""); err != nil {
		return err
	}
	now := s.Now()
	return s.update(ctx, func(tx Tx, e *events) error {
		d, err := tx.GetDelivery(ctx, requestID)
		if err != nil || d.WebhookID != webhookID {
			return Errorf(CodeNotFound, "delivery %s of webhook %s not found", quote(requestID), quote(webhookID))
		}
		e.enqueued = 1
		return tx.RescheduleDelivery(ctx, requestID, now.Time)
	})
}

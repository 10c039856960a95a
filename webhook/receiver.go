package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
)

// DefaultMaxBodyBytes is the largest delivery body a receiver accepts
// unless WithMaxBodyBytes says otherwise.
const DefaultMaxBodyBytes = 4 << 20

// Event is a decoded delivery: the envelope of every event, plus typed
// accessors for its data. RequestID is the same on every attempt of a
// delivery, so a receiver that remembers the ids it processed handles each
// event once.
type Event struct {
	RequestID string          `json:"requestId"`
	WebhookID string          `json:"webhookId"`
	Event     string          `json:"event"`
	Data      json.RawMessage `json:"data"`
}

// decodeData decodes the event's data into v when the event name starts
// with prefix.
func (e *Event) decodeData(prefix, kind string, v any) error {
	if !strings.HasPrefix(e.Event, prefix) {
		return fmt.Errorf("webhook: event %q carries no %s data", e.Event, kind)
	}
	if err := json.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("webhook: decoding %s data of %q: %w", kind, e.Event, err)
	}
	return nil
}

// Message returns the data of a message event (message.didCreate,
// message.didDelete, message.didFlag, message.didUpdate); other events
// are an error.
func (e *Event) Message() (*chat.MessageEventData, error) {
	var v chat.MessageEventData
	if err := e.decodeData("message.", "message", &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// Channel returns the data of a channel event (channel.didCreate,
// channel.didJoin, channel.didAddUsers and the other channel.* events);
// other events are an error.
func (e *Event) Channel() (*chat.ChannelEventData, error) {
	var v chat.ChannelEventData
	if err := e.decodeData("channel.", "channel", &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// User returns the data of a user event (user.didUpdate,
// user.didGlobalBan, user.didGlobalUnban); other events are an error.
func (e *Event) User() (*chat.UserEventData, error) {
	var v chat.UserEventData
	if err := e.decodeData("user.", "user", &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// Reaction returns the data of a reaction event (reaction.didAdd,
// reaction.didRemove); other events are an error.
func (e *Event) Reaction() (*chat.ReactionEventData, error) {
	var v chat.ReactionEventData
	if err := e.decodeData("reaction.", "reaction", &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// Report returns the data of a report event (report.didCreate,
// report.didResolve); other events are an error.
func (e *Event) Report() (*chat.ReportEventData, error) {
	var v chat.ReportEventData
	if err := e.decodeData("report.", "report", &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// ReceiverOption configures NewReceiver.
type ReceiverOption func(*receiver)

// WithSignatureHeader names the header holding "sha1=<hex>". Default
// "X-Service-Signature".
func WithSignatureHeader(name string) ReceiverOption {
	return func(r *receiver) { r.header = name }
}

// WithMaxBodyBytes bounds the request body; larger ones get 413. Default
// DefaultMaxBodyBytes (4 MiB).
func WithMaxBodyBytes(n int64) ReceiverOption {
	return func(r *receiver) { r.maxBody = n }
}

// WithStandardSignature also requires valid Standard Webhooks headers
// (webhook-id, webhook-timestamp, webhook-signature) whose timestamp is
// within tolerance of the receiver's clock (DefaultTolerance when 0). This
// refuses replays of captured deliveries older than the tolerance.
func WithStandardSignature(tolerance time.Duration) ReceiverOption {
	return func(r *receiver) { r.standard, r.tolerance = true, tolerance }
}

// WithClock sets the clock the Standard Webhooks timestamp is checked
// against. Default time.Now.
func WithClock(now func() time.Time) ReceiverOption {
	return func(r *receiver) { r.now = now }
}

// WithSecrets accepts deliveries signed with any of these secrets too,
// which lets a receiver keep working while a webhook's secret is rotated.
func WithSecrets(secrets ...[]byte) ReceiverOption {
	return func(r *receiver) { r.secrets = append(r.secrets, secrets...) }
}

type receiver struct {
	secrets   [][]byte
	fn        func(ctx context.Context, ev *Event) error
	header    string
	maxBody   int64
	standard  bool
	tolerance time.Duration
	now       func() time.Time
}

// NewReceiver returns an http.Handler for the receiving side of webhooks.
// For each POST it reads the body (at most the limit, else 413), verifies
// the signature header against secret (401 when it does not match), decodes
// the envelope (400 when it is not one), calls fn with the request's
// context, and answers 204 No Content, or 500 when fn returns an error, so
// that the delivery is retried. Other methods get 405. Deliveries are at
// least once: fn should treat an ev.RequestID it has seen as done.
func NewReceiver(secret []byte, fn func(ctx context.Context, ev *Event) error, opts ...ReceiverOption) http.Handler {
	r := &receiver{
		secrets: [][]byte{secret},
		fn:      fn,
		header:  DefaultSignatureHeader,
		maxBody: DefaultMaxBodyBytes,
		now:     time.Now,
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, r.maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "cannot read body", http.StatusBadRequest)
		return
	}
	if !r.verify(req.Header, body) {
		http.Error(w, "invalid signature", http.StatusUnauthorized)
		return
	}
	var ev Event
	if err := json.Unmarshal(body, &ev); err != nil || ev.RequestID == "" || ev.Event == "" {
		http.Error(w, "not a webhook envelope", http.StatusBadRequest)
		return
	}
	if err := r.fn(req.Context(), &ev); err != nil {
		http.Error(w, "handler failed", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) verify(h http.Header, body []byte) bool {
	sig := h.Get(r.header)
	for _, s := range r.secrets {
		if !Verify(s, body, sig) {
			continue
		}
		if !r.standard || VerifyStandard(s, h, body, r.now(), r.tolerance) == nil {
			return true
		}
	}
	return false
}

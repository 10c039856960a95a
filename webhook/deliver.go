package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	chat "github.com/chatengine/chat"
)

// maxErrorLen bounds the error text recorded with an attempt.
const maxErrorLen = 512

// snippetLen is how much of a failed response body goes into the error.
const snippetLen = 200

// attempt POSTs one claimed delivery and returns what to record.
func (d *Dispatcher) attempt(ctx context.Context, it item) *result {
	dl := it.d
	start := d.cfg.Now()
	r := &result{d: dl, attempt: chat.DeliveryAttempt{
		RequestID: dl.RequestID,
		WebhookID: dl.WebhookID,
		Event:     dl.Event,
		Attempt:   dl.Attempts + 1,
		At:        chat.NewTime(start),
	}}
	switch {
	case it.hook == nil:
		r.state, r.next, r.attempt.Error = chat.DeliveryFailed, start, "webhook deleted"
		return r
	case it.hook.IsDisabled:
		r.state, r.next, r.attempt.Error = chat.DeliveryFailed, start, truncate("webhook disabled: "+it.hook.DisabledReason)
		return r
	}

	status, retryAfter, errText := d.post(ctx, it.hook, dl, start, &r.attempt)
	if ctx.Err() != nil {
		r.abandon = true
		return r
	}
	r.attempt.StatusCode, r.attempt.Error = status, truncate(errText)
	now := d.cfg.Now()
	switch {
	case status >= 200 && status < 300:
		r.state, r.next = chat.DeliveryDelivered, now
	case status == http.StatusGone:
		r.state, r.next = chat.DeliveryFailed, now
		r.disable = "receiver answered 410 Gone at " + chat.NewTime(now).UTC().Format(time.RFC3339)
	default:
		if delay, ok := d.retryDelay(r.attempt.Attempt, retryAfter); ok {
			r.state, r.next = chat.DeliveryPending, now.Add(delay)
		} else {
			r.state, r.next = chat.DeliveryFailed, now
		}
	}
	return r
}

// post sends the delivery and returns the response status (0 when none),
// the Retry-After the receiver asked for, and the error text of a failure.
// It sets a.LatencyMs to the time until the response status arrived.
func (d *Dispatcher) post(ctx context.Context, h *chat.Webhook, dl *chat.Delivery, now time.Time, a *chat.DeliveryAttempt) (status int, retryAfter time.Duration, errText string) {
	if !d.cfg.AllowPrivate {
		if err := CheckURL(h.URL, false); err != nil {
			return 0, 0, "refused: " + err.Error()
		}
	}
	// The attempt's time runs from its deadline's start, so that an
	// attempt that timed out reports at least the timeout however long
	// the request took to prepare (signing it, on a loaded machine).
	t0 := time.Now()
	rctx, cancel := context.WithDeadline(ctx, t0.Add(d.cfg.Timeout))
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, h.URL, bytes.NewReader(dl.Body))
	if err != nil {
		return 0, 0, "invalid url: " + err.Error()
	}
	secret := []byte(h.Secret)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", d.cfg.UserAgent)
	req.Header.Set(d.cfg.SignatureHeader, Sign(secret, dl.Body))
	req.Header.Set(HeaderID, dl.RequestID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(HeaderSignature, SignStandard(secret, dl.RequestID, now, dl.Body))

	resp, err := d.client.Do(req)
	a.LatencyMs = time.Since(t0).Milliseconds()
	if err != nil {
		return 0, 0, d.describe(rctx, err)
	}
	defer resp.Body.Close()
	// Read at most MaxResponseBytes (so a kept-alive connection can be
	// reused), keeping the start of it for the error text. The rest goes
	// to io.Discard, which reads with buffers of its own pool: io.Copy
	// into a writer that is not a ReaderFrom would allocate 32 KiB per
	// delivery (the larger part of the bytes a create allocates, as a
	// 204's empty body needs none of it).
	body := io.LimitReader(resp.Body, MaxResponseBytes)
	var head [snippetLen]byte
	n, _ := io.ReadFull(body, head[:])
	_, _ = io.Copy(io.Discard, body)
	status = resp.StatusCode
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), d.cfg.Now())
	}
	if status >= 200 && status < 300 {
		return status, 0, ""
	}
	errText = "HTTP " + strconv.Itoa(status)
	if s := cleanSnippet(head[:n]); s != "" {
		errText += ": " + s
	}
	return status, retryAfter, errText
}

// describe turns a transport error into a short, stable error text.
func (d *Dispatcher) describe(rctx context.Context, err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	switch {
	case errors.Is(err, ErrBlockedAddress):
		return "refused: " + err.Error()
	case errors.Is(rctx.Err(), context.DeadlineExceeded):
		return fmt.Sprintf("timeout: no response within %v", d.cfg.Timeout)
	}
	return err.Error()
}

// retryDelay returns the delay before the attempt after attempt number n
// (1-based) failed, and false when n was the last scheduled attempt.
func (d *Dispatcher) retryDelay(n int, retryAfter time.Duration) (time.Duration, bool) {
	if n >= len(d.cfg.Schedule) {
		return 0, false
	}
	delay := d.cfg.Schedule[n]
	if j := d.cfg.Jitter; j > 0 && delay > 0 {
		delay = time.Duration(float64(delay) * (1 + j*(2*rand.Float64()-1)))
	}
	if retryAfter > 0 {
		delay = max(delay, min(retryAfter, d.cfg.MaxRetryAfter))
	}
	return delay, true
}

// parseRetryAfter reads a Retry-After value: delay seconds or an HTTP date.
// It returns 0 when v is empty or malformed.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		if s > int64(1<<62/time.Second) {
			s = int64(1 << 62 / time.Second)
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// cleanSnippet makes a response-body excerpt fit for an error text.
func cleanSnippet(b []byte) string {
	s := strings.ToValidUTF8(string(b), "")
	s = strings.Join(strings.Fields(s), " ")
	return s
}

func truncate(s string) string {
	if len(s) <= maxErrorLen {
		return s
	}
	s = s[:maxErrorLen]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

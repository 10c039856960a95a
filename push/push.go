package push

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Provider names, as a device records them.
const (
	// APNs is Apple Push Notification service (iOS, iPadOS, macOS apps).
	APNs = "apn"
	// FCM is Firebase Cloud Messaging (Android apps, and iOS apps that use it).
	FCM = "firebase"
	// WebPush is the browsers' Web Push service; the device token is the
	// browser's PushSubscription JSON.
	WebPush = "webpush"
)

// MaxBodyText is how many characters (Unicode code points) of a message's
// text a notification body carries.
const MaxBodyText = 100

// Device is where a notification goes: a provider name (APNs, FCM or
// WebPush) and the token the app or browser registered with it.
type Device struct {
	// Provider is APNs, FCM or WebPush.
	Provider string
	// Token is the APNs device token (hex), the FCM registration token, or
	// the Web Push subscription's JSON.
	Token string
}

// Notification is what a device shows: a title, a body, and data the app
// receives with it (for a new message: channelId and messageId).
type Notification struct {
	// Title is the notification's first line.
	Title string
	// Body is its text.
	Body string
	// Data is delivered to the app with the notification, not shown.
	Data map[string]string
}

// Sender delivers one notification to one device. A nil error means the
// provider accepted it. Any other error is an *Error whose Kind says what
// the caller must do: remove the device (Gone), try again later (Retry), or
// give up on this delivery (Permanent). Senders are safe for concurrent use.
type Sender interface {
	Send(ctx context.Context, d Device, n Notification) error
}

// ForMessage builds the notification for a new chat message: the title is
// the channel's display name, the body "<sender>: <text>" with the text cut
// to MaxBodyText characters, and the data carries the channel and message
// IDs. An empty text (a message with only attachments, or a server told to
// send no message text) leaves the sender's name alone as the body.
func ForMessage(channelName, senderName, text, channelID, messageID string) Notification {
	body := senderName
	if text != "" {
		body = senderName + ": " + Truncate(text, MaxBodyText)
	}
	return Notification{
		Title: channelName,
		Body:  body,
		Data:  map[string]string{"channelId": channelID, "messageId": messageID},
	}
}

// Truncate returns the first n characters (Unicode code points, not bytes)
// of s, or s itself when it is no longer. It never splits a UTF-8 sequence.
func Truncate(s string, n int) string {
	if n <= 0 {
		return ""
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// Kind says what a failed delivery asks of the caller.
type Kind int

const (
	// Permanent means this delivery cannot succeed (a payload the provider
	// refuses, a provider that is not configured, credentials it rejects):
	// give it up, keep the device.
	Permanent Kind = iota
	// Retry means the provider or the network failed for now (5xx, 429, a
	// timeout): deliver again later with backoff, no sooner than
	// Error.RetryAfter when it is set.
	Retry
	// Gone means the provider says the token will never work again:
	// remove the device.
	Gone
)

// String returns "permanent", "retry" or "gone".
func (k Kind) String() string {
	switch k {
	case Retry:
		return "retry"
	case Gone:
		return "gone"
	default:
		return "permanent"
	}
}

// Sentinels for errors.Is: every *Error matches the one of its Kind.
var (
	// ErrGone is matched by errors whose Kind is Gone.
	ErrGone = errors.New("push: device is gone")
	// ErrRetry is matched by errors whose Kind is Retry.
	ErrRetry = errors.New("push: temporary failure")
	// ErrPermanent is matched by errors whose Kind is Permanent.
	ErrPermanent = errors.New("push: delivery refused")
)

// Error is a failed delivery.
type Error struct {
	// Kind says what the caller must do.
	Kind Kind
	// Provider is APNs, FCM or WebPush.
	Provider string
	// Status is the provider's HTTP status, 0 when no response came.
	Status int
	// Reason is the provider's reason code (APNs "Unregistered", FCM
	// "UNREGISTERED") or a short description.
	Reason string
	// RetryAfter is the delay the provider asked for (Retry-After), 0 when
	// it named none.
	RetryAfter time.Duration
	// Err is the underlying error (network, encoding), if any.
	Err error
}

// Error describes the failure in one line.
func (e *Error) Error() string {
	s := fmt.Sprintf("push %s: %s", e.Provider, e.Kind)
	if e.Status != 0 {
		s += " (HTTP " + strconv.Itoa(e.Status) + ")"
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's Kind.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrGone:
		return e.Kind == Gone
	case ErrRetry:
		return e.Kind == Retry
	case ErrPermanent:
		return e.Kind == Permanent
	}
	return false
}

// KindOf returns the Kind of err: the Kind of the *Error it wraps, Retry
// for a context error (the caller stopped; deliver later), Permanent for
// anything else. KindOf(nil) is meaningless; check err first.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return Retry
	}
	return Permanent
}

// RetryAfter returns the delay the provider asked for before the next
// attempt, if err carries one.
func RetryAfter(err error) (time.Duration, bool) {
	var e *Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		return e.RetryAfter, true
	}
	return 0, false
}

// Mux is a Sender that hands each device to the sender of its provider
// (keys APNs, FCM, WebPush). A provider without a sender fails with a
// Permanent error, so a deployment that configures only some providers
// gives up the others' deliveries instead of retrying them forever.
type Mux map[string]Sender

// Send delivers n through the sender registered for d.Provider.
func (m Mux) Send(ctx context.Context, d Device, n Notification) error {
	s := m[d.Provider]
	if s == nil {
		return &Error{Kind: Permanent, Provider: d.Provider, Reason: "provider not configured"}
	}
	return s.Send(ctx, d, n)
}

// statusKind maps an HTTP status no provider-specific rule claimed: 429,
// 408 and 5xx are Retry, anything else Permanent.
func statusKind(status int) Kind {
	if status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status >= 500 {
		return Retry
	}
	return Permanent
}

// transportError wraps a failure to get a response (dial, TLS, timeout,
// refused address) as Retry, except an address the SSRF rules refuse,
// which no retry can fix.
func transportError(provider string, err error) error {
	k := Retry
	if blockedAddress(err) {
		k = Permanent
	}
	return &Error{Kind: k, Provider: provider, Err: err}
}

// parseRetryAfter reads a Retry-After header: delay seconds or an HTTP
// date. It returns 0 when the header is absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		if s < 0 {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// Config configures the senders of a deployment. A nil provider config
// leaves that provider without a sender (its deliveries fail Permanent);
// the zero Config makes an empty Mux.
type Config struct {
	// APNs configures the APNs sender. Default nil: none.
	APNs *APNsConfig
	// FCM configures the FCM sender. Default nil: none.
	FCM *FCMConfig
	// WebPush configures the Web Push sender. Default nil: none.
	WebPush *WebPushConfig
}

// New makes the sender of every configured provider and returns them as a
// Mux. It starts no goroutines and makes no request.
func New(cfg Config) (Mux, error) {
	m := Mux{}
	if cfg.APNs != nil {
		s, err := NewAPNs(*cfg.APNs)
		if err != nil {
			return nil, err
		}
		m[APNs] = s
	}
	if cfg.FCM != nil {
		s, err := NewFCM(*cfg.FCM)
		if err != nil {
			return nil, err
		}
		m[FCM] = s
	}
	if cfg.WebPush != nil {
		s, err := NewWebPush(*cfg.WebPush)
		if err != nil {
			return nil, err
		}
		m[WebPush] = s
	}
	return m, nil
}

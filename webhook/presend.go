package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	chat "github.com/chatengine/chat"
)

// DefaultPreSendTimeout is how long a PreSendHook waits for its endpoint's
// answer unless PreSendConfig.Timeout says otherwise.
const DefaultPreSendTimeout = 2 * time.Second

// The results a PreSendHook reports to PreSendConfig.OnResult (the example
// server counts them in chat_presend_hook_total{result}).
const (
	// PreSendResultAllow: the endpoint answered allow.
	PreSendResultAllow = "allow"
	// PreSendResultReject: the endpoint answered reject.
	PreSendResultReject = "reject"
	// PreSendResultFlag: the endpoint answered flag.
	PreSendResultFlag = "flag"
	// PreSendResultErrorAllowed: no usable answer (timeout, transport
	// error, refused address, non-2xx status, unreadable body or unknown
	// action) and the policy let the message through.
	PreSendResultErrorAllowed = "error_allowed"
	// PreSendResultErrorRejected: no usable answer and the policy refused
	// the message.
	PreSendResultErrorRejected = "error_rejected"
)

// PreSendResults lists every result a PreSendHook reports, so that a
// metric can export zeros from the start.
var PreSendResults = []string{PreSendResultAllow, PreSendResultReject, PreSendResultFlag,
	PreSendResultErrorAllowed, PreSendResultErrorRejected}

// PreSendConfig configures a PreSendHook. URL and Secret are required.
type PreSendConfig struct {
	// URL is the endpoint, https; plain http only with AllowPrivate
	// (local development). Required.
	URL string
	// Secret signs every request as webhook deliveries are signed (the
	// sha1= header and the Standard Webhooks headers). Required.
	Secret string
	// SignatureHeader carries the sha1= signature. Default
	// DefaultSignatureHeader.
	SignatureHeader string
	// Timeout bounds one call, from connecting to reading the answer.
	// Default DefaultPreSendTimeout (2 s).
	Timeout time.Duration
	// RejectOnError refuses a message when the endpoint gives no usable
	// answer; by default (false) such a message is allowed.
	RejectOnError bool
	// AllowPrivate lets the hook reach loopback, private, link-local and
	// metadata addresses, and accepts an http URL (local development and
	// tests). Default false.
	AllowPrivate bool
	// TLSConfig, when not nil, is the TLS configuration of the default
	// transport (for example a private root CA). Default: the system's.
	TLSConfig *tls.Config
	// Dialer is the base dialer of the default transport. Default: 10 s
	// connect timeout (the call's Timeout bounds it anyway).
	Dialer *net.Dialer
	// Resolver resolves the endpoint's host name. Default
	// net.DefaultResolver.
	Resolver Resolver
	// UserAgent is sent with every call. Default "chatengine-presend/1".
	UserAgent string
	// OnResult, when not nil, is called after every call with its result
	// (one of PreSendResults); it must be quick (a metrics counter).
	// Default nil.
	OnResult func(result string)
	// Logger receives a warning for every call without a usable answer.
	// Default slog.Default().
	Logger *slog.Logger
	// Now returns the current time (the webhook-timestamp header).
	// Default time.Now.
	Now func() time.Time
}

// PreSendHook is a chat.PreSendHook that asks an HTTPS endpoint: it POSTs
// the chat.PreSendMessage as JSON, signed as webhook deliveries are, and
// reads {"action":"allow"|"reject"|"flag","reason":"..."} from a 2xx
// answer. Without a usable answer within the timeout it applies its
// policy (PreSendConfig.RejectOnError). Its dialer refuses private
// addresses as webhook deliveries do (see Guard). Safe for concurrent
// use.
type PreSendHook struct {
	cfg    PreSendConfig
	client *http.Client
}

var _ chat.PreSendHook = (*PreSendHook)(nil)

// NewPreSendHook checks cfg and returns the hook. It starts nothing.
func NewPreSendHook(cfg PreSendConfig) (*PreSendHook, error) {
	if cfg.Secret == "" {
		return nil, errors.New("webhook: the pre-send hook needs a secret")
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("webhook: pre-send hook URL %q is not an absolute URL", cfg.URL)
	}
	if s := strings.ToLower(u.Scheme); s != "https" && !(s == "http" && cfg.AllowPrivate) {
		return nil, fmt.Errorf("webhook: pre-send hook URL %q must be https", cfg.URL)
	}
	if err := CheckURL(cfg.URL, cfg.AllowPrivate); err != nil {
		return nil, fmt.Errorf("webhook: pre-send hook %w", err)
	}
	if cfg.SignatureHeader == "" {
		cfg.SignatureHeader = DefaultSignatureHeader
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultPreSendTimeout
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "chatengine-presend/1"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	g := &Guard{AllowPrivate: cfg.AllowPrivate, Resolver: cfg.Resolver, Dialer: cfg.Dialer}
	t := &http.Transport{
		Proxy:               nil, // never through an environment proxy
		DialContext:         g.DialContext,
		TLSClientConfig:     cfg.TLSConfig,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: cfg.Timeout,
	}
	return &PreSendHook{cfg: cfg, client: &http.Client{
		Transport: t,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}}, nil
}

// preSendAnswer is the endpoint's answer.
type preSendAnswer struct {
	Action string `json:"action"`
	Reason string `json:"reason"`
}

// PreSend implements chat.PreSendHook.
func (h *PreSendHook) PreSend(ctx context.Context, m *chat.PreSendMessage) chat.PreSendVerdict {
	a, err := h.call(ctx, m)
	if err == nil {
		switch a.Action {
		case chat.PreSendAllow:
			h.report(PreSendResultAllow)
		case chat.PreSendReject:
			h.report(PreSendResultReject)
		case chat.PreSendFlag:
			h.report(PreSendResultFlag)
		default:
			err = fmt.Errorf("unknown action %q", a.Action)
		}
		if err == nil {
			return chat.PreSendVerdict{Action: a.Action, Reason: a.Reason}
		}
	}
	h.cfg.Logger.Warn("pre-send hook gave no usable answer", "url", h.cfg.URL, "messageId", m.MessageID,
		"err", err, "rejectOnError", h.cfg.RejectOnError)
	if h.cfg.RejectOnError {
		h.report(PreSendResultErrorRejected)
		return chat.PreSendVerdict{Action: chat.PreSendReject, Reason: "the message could not be checked; try again later"}
	}
	h.report(PreSendResultErrorAllowed)
	return chat.PreSendVerdict{Action: chat.PreSendAllow}
}

func (h *PreSendHook) report(result string) {
	if h.cfg.OnResult != nil {
		h.cfg.OnResult(result)
	}
}

// call POSTs m and decodes the answer of a 2xx response.
func (h *PreSendHook) call(ctx context.Context, m *chat.PreSendMessage) (*preSendAnswer, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	var idb [12]byte
	_, _ = rand.Read(idb[:])
	id := "presend_" + hex.EncodeToString(idb[:])
	now := h.cfg.Now()
	secret := []byte(h.cfg.Secret)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", h.cfg.UserAgent)
	req.Header.Set(h.cfg.SignatureHeader, Sign(secret, body))
	req.Header.Set(HeaderID, id)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(HeaderSignature, SignStandard(secret, id, now, body))
	resp, err := h.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("timeout: no answer within %v", h.cfg.Timeout)
		}
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("timeout: no answer within %v", h.cfg.Timeout)
		}
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	var a preSendAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("unreadable answer: %w", err)
	}
	return &a, nil
}

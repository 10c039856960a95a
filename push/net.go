package push

import (
	"crypto/tls"
	"errors"
	"net/http"
	"time"

	"github.com/chatengine/chat/webhook"
)

// defaultTimeout bounds one request to a provider when the config names
// no timeout.
const defaultTimeout = 30 * time.Second

// Network says how a sender reaches its provider. The zero value reaches
// public addresses over TLS with the system's roots, 30 s per request.
type Network struct {
	// AllowPrivate lets the sender reach loopback, private and link-local
	// addresses (development and tests); with it, a Web Push endpoint may
	// also be plain http. Default false: such addresses are refused by the
	// same rules as webhooks (package webhook, Guard), checked on every
	// connection after DNS resolution.
	AllowPrivate bool
	// TLSConfig is the TLS client configuration (tests set RootCAs to
	// trust a local stand-in). Default nil: the system's roots.
	TLSConfig *tls.Config
	// Timeout bounds one request, response included. Default 30 s.
	Timeout time.Duration
	// Resolver resolves provider host names. Default net.DefaultResolver.
	Resolver webhook.Resolver
}

// client returns an HTTP client whose connections go through a
// webhook.Guard. With http2Only it speaks nothing but HTTP/2 (APNs
// requires it); otherwise HTTP/2 when the server offers it.
func (n Network) client(http2Only bool) *http.Client {
	g := &webhook.Guard{AllowPrivate: n.AllowPrivate, Resolver: n.Resolver}
	t := &http.Transport{
		Proxy:                 nil, // never route pushes through an environment proxy
		DialContext:           g.DialContext,
		TLSClientConfig:       n.TLSConfig.Clone(),
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	if http2Only {
		var p http.Protocols
		p.SetHTTP2(true)
		t.Protocols = &p
	}
	timeout := n.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	return &http.Client{
		Transport: t,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// blockedAddress reports whether err is a refusal by the SSRF rules.
func blockedAddress(err error) bool {
	return errors.Is(err, webhook.ErrBlockedAddress)
}

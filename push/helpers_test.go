package push

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// clock is a settable clock shared by a sender and its stand-in.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// tlsServer starts a loopback TLS server speaking HTTP/2 (and HTTP/1.1
// when h2 is false, HTTP/1.1 only).
func tlsServer(tb testing.TB, h http.Handler, h2 bool) *httptest.Server {
	tb.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = h2
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	srv.StartTLS()
	tb.Cleanup(srv.Close)
	return srv
}

// trusting returns a Network that reaches srv: loopback allowed, its
// certificate trusted.
func trusting(srv *httptest.Server) Network {
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return Network{AllowPrivate: true, TLSConfig: &tls.Config{RootCAs: pool}}
}

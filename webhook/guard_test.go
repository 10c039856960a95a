package webhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	chat "github.com/chatengine/chat"
	"github.com/stretchr/testify/require"
)

// IPv6 forms that lead to an internal IPv4 address or to a non-global
// range are refused too, by the address check and at dial time.
func TestBlockReasonIPv6Forms(t *testing.T) {
	t.Parallel()
	refused := []string{
		"::ffff:0:7f00:1",                      // IPv4-translated (SIIT) 127.0.0.1
		"::ffff:0:a00:1",                       // IPv4-translated 10.0.0.1
		"::ffff:0:a9fe:a9fe",                   // IPv4-translated 169.254.169.254
		"64:ff9b:1::a00:1",                     // local-use NAT64
		"2001:0:4136:e378:8000:63bf:3fff:fdd2", // Teredo
		"100::1",                               // discard-only
		"::ffff:0.0.0.0", "::0.0.0.0", "64:ff9b::7f00:1", "2002:a9fe:a9fe::1",
	}
	g := &Guard{}
	for _, s := range refused {
		ip := netip.MustParseAddr(s)
		require.NotEmpty(t, blockReason(ip), "%s must be refused", s)
		require.ErrorIs(t, g.Control("tcp6", netip.AddrPortFrom(ip, 443).String(), nil), ErrBlockedAddress, s)
		require.ErrorIs(t, CheckURL("http://["+s+"]/hook", false), ErrBlockedAddress, s)
	}
	for _, s := range []string{"::ffff:0:808:808", "2001:4860:4860::8888", "2001:200::1"} {
		require.Empty(t, blockReason(netip.MustParseAddr(s)), "%s must be allowed", s)
	}
}

// A receiver that answers with a redirect to an internal address gets no
// request there: redirects are never followed, the attempt records the 3xx
// and the delivery is retried at the registered URL.
func TestRedirectToInternalNotFollowed(t *testing.T) {
	t.Parallel()
	var internalHits atomic.Int32
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		internalHits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(internal.Close)
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		rc := newReceiver(t, "k", func(w http.ResponseWriter, r *http.Request, _ string, _ int) bool {
			http.Redirect(w, r, internal.URL+"/latest/meta-data/", code)
			return true
		})
		s := memoryBackend.open(t)
		hook := createHook(t, s, rc.URL, "k")
		start(t, s, testConfig(func(c *Config) { c.Schedule = []time.Duration{0, time.Millisecond} }))
		ids := enqueue(t, s, newDeliveries(t, hook.WebhookID, 1))
		states := waitStates(t, s, ids, 10*time.Second)
		require.Equal(t, chat.DeliveryFailed, states[ids[0]].State)
		_, as := getDelivery(t, s, ids[0])
		require.Equal(t, []int{code, code}, codes(as))
		require.Len(t, rc.hitsOf(ids[0]), 2)
	}
	require.Zero(t, internalHits.Load(), "the redirect target was never contacted")
}

// With the default client, a host name whose DNS answer changes between
// lookups (rebinding) never reaches the internal address: every
// connection re-resolves and re-checks, and no socket is opened to a
// refused address.
func TestGuardRebinding(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	res := resolverFunc(func(_ context.Context, host string) ([]net.IPAddr, error) {
		if n.Add(1)%2 == 1 {
			return []net.IPAddr{{IP: net.ParseIP("93.184.216.34")}}, nil
		}
		return []net.IPAddr{{IP: net.ParseIP("::ffff:169.254.169.254")}}, nil
	})
	var dialed []string
	errStop := errors.New("stop before connecting")
	base := &net.Dialer{Control: func(_, address string, _ syscall.RawConn) error {
		dialed = append(dialed, address)
		return errStop
	}}
	g := &Guard{Resolver: res, Dialer: base}
	for range 4 {
		_, err := g.DialContext(context.Background(), "tcp", "rebind.example:80")
		require.Error(t, err)
	}
	require.Equal(t, []string{"93.184.216.34:80", "93.184.216.34:80"}, dialed, "only the public answer was dialed")
}

type resolverFunc func(ctx context.Context, host string) ([]net.IPAddr, error)

func (f resolverFunc) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	return f(ctx, host)
}

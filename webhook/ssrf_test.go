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

func TestBlockReason(t *testing.T) {
	t.Parallel()
	refused := []string{
		"127.0.0.1", "127.255.0.9", "::1",
		"10.0.0.1", "10.255.255.255", "172.16.0.1", "172.31.255.255", "192.168.1.1",
		"fc00::1", "fd12:3456::1",
		"169.254.0.1", "169.254.169.254", "fe80::1", "fe80::1%eth0",
		"0.0.0.0", "0.1.2.3", "::",
		"224.0.0.1", "239.255.255.250", "ff02::1", "255.255.255.255", "240.0.0.1",
		"100.64.0.1", "100.127.255.255",
		"fd00:ec2::254",
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::ffff:192.168.0.1",
		"::127.0.0.1", "64:ff9b::10.0.0.1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::1", "2002:a00:1::",
		"192.0.0.8", "198.18.0.1",
	}
	for _, s := range refused {
		ip := netip.MustParseAddr(s)
		require.NotEmpty(t, blockReason(ip), "%s must be refused", s)
		require.ErrorIs(t, checkAddr(ip, false), ErrBlockedAddress, s)
		require.NoError(t, checkAddr(ip, true), "AllowPrivate admits %s", s)
	}
	allowed := []string{
		"8.8.8.8", "1.1.1.1", "93.184.216.34", "172.32.0.1", "172.15.255.255", "100.128.0.1",
		"100.63.255.255", "169.253.0.1", "11.0.0.1", "2606:4700:4700::1111", "2001:4860:4860::8888",
		"::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1",
	}
	for _, s := range allowed {
		require.Empty(t, blockReason(netip.MustParseAddr(s)), "%s must be allowed", s)
	}
	require.Equal(t, "cloud metadata", blockReason(netip.MustParseAddr("169.254.169.254")))
	require.Equal(t, "cloud metadata", blockReason(netip.MustParseAddr("::ffff:169.254.169.254")))
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url     string
		ok      bool
		blocked bool // wraps ErrBlockedAddress
		private bool // allowed with allowPrivate
	}{
		{"https://example.com/hook", true, false, true},
		{"http://example.com:8080/hook?x=1", true, false, true},
		{"HTTPS://Example.COM/", true, false, true},
		{"https://93.184.216.34/", true, false, true},
		{"https://[2606:4700:4700::1111]/", true, false, true},
		{"ftp://example.com/", false, false, false},
		{"file:///etc/passwd", false, false, false},
		{"gopher://example.com", false, false, false},
		{"example.com/hook", false, false, false},
		{"https:///path", false, false, false},
		{"://bad", false, false, false},
		{"http://127.0.0.1:8080/", false, true, true},
		{"http://localhost/", false, true, true},
		{"http://api.localhost./", false, true, true},
		{"http://10.1.2.3/", false, true, true},
		{"http://169.254.169.254/latest/meta-data/", false, true, true},
		{"http://[::1]/", false, true, true},
		{"http://[::ffff:127.0.0.1]/", false, true, true},
		{"http://[fd00:ec2::254]/", false, true, true},
		{"http://[fe80::1%25eth0]/", false, true, true},
		{"http://0.0.0.0/", false, true, true},
		{"http://2130706433/", false, true, true},
		{"http://0x7f.1/", false, true, true},
		{"http://100.64.1.1/", false, true, true},
	} {
		t.Run(tc.url, func(t *testing.T) {
			err := CheckURL(tc.url, false)
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				require.Equal(t, chat.CodeBadRequest, chat.ErrorCode(err))
				require.Equal(t, tc.blocked, errors.Is(err, ErrBlockedAddress), "wraps ErrBlockedAddress: %v", err)
			}
			if tc.private {
				require.NoError(t, CheckURL(tc.url, true))
			} else {
				require.Error(t, CheckURL(tc.url, true))
			}
		})
	}
}

// The Control hook sees the address the socket is about to connect to,
// after resolution; it is called here directly, so no packet is sent.
func TestGuardControl(t *testing.T) {
	t.Parallel()
	g := &Guard{}
	for _, a := range []string{"10.0.0.1:80", "127.0.0.1:443", "[::1]:80", "169.254.169.254:80",
		"[::ffff:10.0.0.1]:80", "[fe80::1%eth0]:80", "100.64.0.1:80", "[fd00:ec2::254]:80", "garbage"} {
		require.ErrorIs(t, g.Control("tcp", a, nil), ErrBlockedAddress, a)
	}
	for _, a := range []string{"93.184.216.34:443", "[2606:4700:4700::1111]:443"} {
		require.NoError(t, g.Control("tcp4", a, nil), a)
	}
	require.NoError(t, (&Guard{AllowPrivate: true}).Control("tcp", "10.0.0.1:80", nil))
}

// fakeResolver answers from a map and counts lookups.
type fakeResolver struct {
	answers map[string][]string
	lookups atomic.Int32
}

func (r *fakeResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	r.lookups.Add(1)
	ips, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []net.IPAddr
	for _, s := range ips {
		out = append(out, net.IPAddr{IP: net.ParseIP(s)})
	}
	return out, nil
}

// A host name that resolves to private addresses is refused after
// resolution and before any socket is created: the base dialer's Control
// (which runs for every connection attempt) is never reached.
func TestGuardRefusesResolvedPrivateAddress(t *testing.T) {
	t.Parallel()
	res := &fakeResolver{answers: map[string][]string{
		"internal.example":  {"10.0.0.1"},
		"metadata.example":  {"169.254.169.254"},
		"mapped.example":    {"::ffff:10.0.0.1"},
		"loopback.example":  {"127.0.0.1", "::1"},
		"rebinding.example": {"192.168.0.10"},
	}}
	var dials atomic.Int32
	base := &net.Dialer{Control: func(string, string, syscall.RawConn) error {
		dials.Add(1)
		return errors.New("no connection may be attempted in this test")
	}}
	g := &Guard{Resolver: res, Dialer: base}
	for host := range res.answers {
		_, err := g.DialContext(context.Background(), "tcp", net.JoinHostPort(host, "80"))
		require.ErrorIs(t, err, ErrBlockedAddress, host)
		require.Contains(t, err.Error(), host)
	}
	// IP literals are checked without a lookup.
	before := res.lookups.Load()
	_, err := g.DialContext(context.Background(), "tcp", "10.0.0.1:80")
	require.ErrorIs(t, err, ErrBlockedAddress)
	_, err = g.DialContext(context.Background(), "tcp", "[::ffff:127.0.0.1]:80")
	require.ErrorIs(t, err, ErrBlockedAddress)
	require.Equal(t, before, res.lookups.Load())
	require.Zero(t, dials.Load(), "no connection attempted")
}

// Through the dispatcher's default client: a webhook whose host resolves to
// 10.0.0.1 gets an error naming the refusal, and no connection is made.
func TestClientRefusesPrivateHost(t *testing.T) {
	t.Parallel()
	res := &fakeResolver{answers: map[string][]string{"hooks.example": {"10.0.0.1"}}}
	var dials atomic.Int32
	base := &net.Dialer{Control: func(string, string, syscall.RawConn) error {
		dials.Add(1)
		return errors.New("no connection may be attempted in this test")
	}}
	cfg := Config{Resolver: res, Dialer: base}.withDefaults()
	c := cfg.newClient()
	_, err := c.Post("http://hooks.example/x", "application/json", nil)
	require.ErrorIs(t, err, ErrBlockedAddress)
	require.Zero(t, dials.Load())
	require.EqualValues(t, 1, res.lookups.Load())
}

// The guard connects to the address it resolved and checked: the base
// dialer's Control sees exactly that IP literal.
func TestGuardDialsCheckedAddress(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	res := &fakeResolver{answers: map[string][]string{"receiver.test": {"127.0.0.1"}}}
	var seen []string
	base := &net.Dialer{Control: func(_, address string, _ syscall.RawConn) error {
		seen = append(seen, address)
		return nil
	}}
	g := &Guard{AllowPrivate: true, Resolver: res, Dialer: base}
	c, err := g.DialContext(context.Background(), "tcp", net.JoinHostPort("receiver.test", port))
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.Equal(t, []string{"127.0.0.1:" + port}, seen)

	// Without AllowPrivate the same name is refused before dialing.
	seen = nil
	g.AllowPrivate = false
	_, err = g.DialContext(context.Background(), "tcp", net.JoinHostPort("receiver.test", port))
	require.ErrorIs(t, err, ErrBlockedAddress)
	require.Empty(t, seen)
}

// With an answer holding a refused and an allowed address, only the allowed
// one is dialed. The base dialer's Control runs before connect(2) and stops
// the attempt, so no packet leaves the machine.
func TestGuardSkipsRefusedAnswers(t *testing.T) {
	t.Parallel()
	res := &fakeResolver{answers: map[string][]string{"mixed.example": {"10.0.0.1", "93.184.216.34", "::1"}}}
	base, seen := recordingDialer()
	g := &Guard{Resolver: res, Dialer: base}
	_, err := g.DialContext(context.Background(), "tcp", "mixed.example:443")
	require.ErrorIs(t, err, errStop)
	require.Equal(t, []string{"93.184.216.34:443"}, *seen)
}

// errStop ends a dial in its Control function, before connect(2).
var errStop = errors.New("stop before connecting")

// recordingDialer returns a dialer that records each address it would
// connect to and stops there with errStop, so no packet leaves the machine.
func recordingDialer() (*net.Dialer, *[]string) {
	var dialed []string
	return &net.Dialer{Control: func(_, address string, _ syscall.RawConn) error {
		dialed = append(dialed, address)
		return errStop
	}}, &dialed
}

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
		states := waitStates(t, s, ids)
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
	base, dialed := recordingDialer()
	g := &Guard{Resolver: res, Dialer: base}
	for range 4 {
		_, err := g.DialContext(context.Background(), "tcp", "rebind.example:80")
		require.Error(t, err)
	}
	require.Equal(t, []string{"93.184.216.34:80", "93.184.216.34:80"}, *dialed, "only the public answer was dialed")
}

type resolverFunc func(ctx context.Context, host string) ([]net.IPAddr, error)

func (f resolverFunc) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	return f(ctx, host)
}

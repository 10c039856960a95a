package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"

	chat "github.com/chatengine/chat"
)

// ErrBlockedAddress is wrapped by every error that refuses a webhook URL or
// connection because of the address it leads to (loopback, private,
// link-local, metadata and similar ranges). Test with errors.Is.
var ErrBlockedAddress = errors.New("webhook: address not allowed")

// Resolver resolves host names to addresses. *net.Resolver implements it;
// tests inject fakes.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

type blockedRange struct {
	prefix netip.Prefix
	reason string
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// blocked lists the ranges a webhook may not reach. Order matters only for
// the reason reported: more specific entries come first.
var blocked = []blockedRange{
	{mustPrefix("169.254.169.254/32"), "cloud metadata"},
	{mustPrefix("fd00:ec2::254/128"), "cloud metadata"},
	{mustPrefix("0.0.0.0/8"), "unspecified"},
	{mustPrefix("10.0.0.0/8"), "private"},
	{mustPrefix("100.64.0.0/10"), "shared address space (CGNAT)"},
	{mustPrefix("127.0.0.0/8"), "loopback"},
	{mustPrefix("169.254.0.0/16"), "link-local"},
	{mustPrefix("172.16.0.0/12"), "private"},
	{mustPrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{mustPrefix("192.168.0.0/16"), "private"},
	{mustPrefix("198.18.0.0/15"), "benchmarking"},
	{mustPrefix("224.0.0.0/4"), "multicast"},
	{mustPrefix("240.0.0.0/4"), "reserved"},
	{mustPrefix("::/128"), "unspecified"},
	{mustPrefix("::1/128"), "loopback"},
	{mustPrefix("64:ff9b:1::/48"), "local-use NAT64"},
	{mustPrefix("100::/64"), "discard-only"},
	{mustPrefix("2001::/32"), "Teredo tunnel"},
	{mustPrefix("fc00::/7"), "private (unique local)"},
	{mustPrefix("fe80::/10"), "link-local"},
	{mustPrefix("fec0::/10"), "site-local"},
	{mustPrefix("ff00::/8"), "multicast"},
}

// Prefixes of IPv6 ranges that embed an IPv4 address, which is checked in
// turn: IPv4-compatible (::a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d,
// SIIT), NAT64 (64:ff9b::/96) and 6to4 (2002::/16, the IPv4 address in
// bits 16-47). IPv4-mapped addresses (::ffff:a.b.c.d) are unmapped first.
var (
	compat4     = mustPrefix("::/96")
	translated4 = mustPrefix("::ffff:0:0:0/96")
	nat64       = mustPrefix("64:ff9b::/96")
	sixTo4      = mustPrefix("2002::/16")
)

// blockReason returns why ip may not be reached, or "" when it may.
func blockReason(ip netip.Addr) string {
	if !ip.IsValid() {
		return "invalid"
	}
	ip = ip.WithZone("").Unmap()
	for _, r := range blocked {
		if r.prefix.Contains(ip) {
			return r.reason
		}
	}
	if ip.Is6() {
		b := ip.As16()
		var v4 [4]byte
		switch {
		case compat4.Contains(ip), translated4.Contains(ip), nat64.Contains(ip):
			copy(v4[:], b[12:])
		case sixTo4.Contains(ip):
			copy(v4[:], b[2:6])
		default:
			return ""
		}
		if r := blockReason(netip.AddrFrom4(v4)); r != "" {
			return r + " (embedded in IPv6)"
		}
	}
	return ""
}

// checkAddr returns an error wrapping ErrBlockedAddress when ip is in a
// refused range and allowPrivate is false.
func checkAddr(ip netip.Addr, allowPrivate bool) error {
	if allowPrivate {
		return nil
	}
	if r := blockReason(ip); r != "" {
		return fmt.Errorf("%w: %s is %s", ErrBlockedAddress, ip, r)
	}
	return nil
}

// CheckURL validates a webhook URL at registration time without touching
// the network: the scheme must be http or https, the host present, and a
// host given as an IP literal (or "localhost") must not be in a refused
// range unless allowPrivate. Host names are checked again, after DNS
// resolution, every time a delivery connects (see Guard). Errors are
// *chat.Error with CodeBadRequest; address refusals also wrap
// ErrBlockedAddress.
func CheckURL(raw string, allowPrivate bool) error {
	if err := checkURL(raw, allowPrivate); err != nil {
		err.Detail = []chat.Detail{chat.FieldError{Field: "url"}}
		return err
	}
	return nil
}

func checkURL(raw string, allowPrivate bool) *chat.Error {
	u, err := url.Parse(raw)
	if err != nil {
		return chat.WrapError(chat.CodeBadRequest, err, "url: not a valid URL")
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return chat.Errorf(chat.CodeBadRequest, "url: scheme must be http or https")
	}
	host := u.Hostname()
	if host == "" {
		return chat.Errorf(chat.CodeBadRequest, "url: host is missing")
	}
	if allowPrivate {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if err := checkAddr(ip, false); err != nil {
			return chat.WrapError(chat.CodeBadRequest, err,
				fmt.Sprintf("url: %s is a %s address, which webhooks may not reach", host, blockReason(ip)))
		}
		return nil
	}
	lh := strings.TrimSuffix(strings.ToLower(host), ".")
	if lh == "localhost" || strings.HasSuffix(lh, ".localhost") {
		return chat.WrapError(chat.CodeBadRequest, ErrBlockedAddress,
			fmt.Sprintf("url: %s is a loopback address, which webhooks may not reach", host))
	}
	if numericHost(lh) {
		// Forms like 2130706433 or 0x7f.1 are read as IPv4 addresses by
		// some resolvers; refuse them rather than guess.
		return chat.WrapError(chat.CodeBadRequest, ErrBlockedAddress, "url: ambiguous numeric host "+host)
	}
	return nil
}

// numericHost reports whether h looks like a non-canonical numeric IPv4
// address (only digits, dots and hex digits after 0x, ending in a digit).
func numericHost(h string) bool {
	if h == "" {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		l := label
		if len(l) > 2 && (l[:2] == "0x") {
			l = l[2:]
			for _, c := range l {
				if !strings.ContainsRune("0123456789abcdef", c) {
					return false
				}
			}
			continue
		}
		if l == "" {
			return false
		}
		for _, c := range l {
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	return true
}

// Guard dials webhook receivers while refusing addresses in the blocked
// ranges (see CheckURL and doc.go). It resolves the host itself, drops
// refused addresses and connects only to an address it checked; the
// dialer's Control hook checks the connected address once more, so no
// DNS answer (including a rebinding one) can lead a connection to a refused
// address. The zero value uses net.DefaultResolver and a plain net.Dialer.
type Guard struct {
	// AllowPrivate disables the address checks (local development).
	AllowPrivate bool
	// Resolver resolves host names. Default net.DefaultResolver.
	Resolver Resolver
	// Dialer is the base dialer (timeouts, keep-alive). Its Control, if
	// any, runs after the guard's check. Default: 10 s connect timeout.
	Dialer *net.Dialer
}

// Control is a net.Dialer Control function that refuses a connection whose
// remote address (an IP literal, after resolution) is in a refused range.
func (g *Guard) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot parse remote address %q", ErrBlockedAddress, address)
	}
	return checkAddr(ap.Addr(), g.AllowPrivate)
}

func (g *Guard) dialer() *net.Dialer {
	var d net.Dialer
	if g.Dialer != nil {
		d = *g.Dialer
	} else {
		d.Timeout = defaultConnectTimeout
	}
	inner := d.Control
	d.Control = func(network, address string, c syscall.RawConn) error {
		if err := g.Control(network, address, c); err != nil {
			return err
		}
		if inner != nil {
			return inner(network, address, c)
		}
		return nil
	}
	return &d
}

// DialContext connects to address (host:port) like net.Dialer.DialContext,
// refusing blocked addresses before any connection is attempted. It fits
// http.Transport.DialContext.
func (g *Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	d := g.dialer()
	if ip, err := netip.ParseAddr(host); err == nil {
		if err := checkAddr(ip, g.AllowPrivate); err != nil {
			return nil, err
		}
		return d.DialContext(ctx, network, address)
	}
	r := g.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, err
	}
	var firstErr error
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		if (network == "tcp4" && !ip.Is4()) || (network == "tcp6" && !ip.Is6()) {
			continue
		}
		if err := checkAddr(ip, g.AllowPrivate); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("%s resolves to a refused address: %w", host, err)
			}
			continue
		}
		if a.Zone != "" {
			ip = ip.WithZone(a.Zone)
		}
		c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return c, nil
		}
		firstErr = err
		if ctx.Err() != nil {
			break
		}
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("webhook: no usable address for %s", host)
	}
	return nil, firstErr
}

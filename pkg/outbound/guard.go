// Package outbound builds the HTTP clients tock uses for every URL a user supplied
// (webhook and ping targets). Such a URL may name, or resolve to, an address inside
// tock's own network: the cloud metadata service, the task credential endpoint,
// Postgres, Redis. The guard therefore checks the address the dialer is about to
// connect to, after DNS resolution and on every redirect hop, so that neither a
// name that resolves privately nor one that changes its answer between validation
// and use (DNS rebinding) gets through.
package outbound

import (
	"errors"
	"fmt"
	"net/netip"
	"syscall"

	"code.dny.dev/ssrf"
)

// ErrDenied is matched (errors.Is) by every refusal of the guard, through the
// *url.Error and *net.OpError the HTTP client wraps it in. A *DeniedError says
// which address was refused and why.
var ErrDenied = errors.New("target address not allowed")

// DeniedError is the guard's refusal of one address. Its text says only that
// the target is not allowed: a run's error is read by the job's owner, who
// must not learn from it what a name resolves to inside tock's network. The
// fields are for the operator's logs and for the creation check, which
// names the class of an address the user wrote themselves.
type DeniedError struct {
	Addr   netip.Addr
	Reason string
}

// Error is ErrDenied's text, naming neither the address nor its class.
func (e *DeniedError) Error() string { return ErrDenied.Error() }

// Unwrap makes every DeniedError an ErrDenied.
func (e *DeniedError) Unwrap() error { return ErrDenied }

// guardian holds the deny list: the IANA special-purpose registries for IPv4 and
// for IPv6 inside global unicast, and everything outside IPv6 global unicast
// (loopback, link-local, ULA including fd00:ec2::254, multicast, unspecified).
// Ports are not its business: job URLs may use any port.
var guardian = ssrf.New(ssrf.WithAnyPort(), ssrf.WithAnyNetwork())

// cgnat is the shared address space of RFC 6598, named only for the message.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// Check reports whether the guard of a client built with opts would let it
// connect to addr: nil if allowed, a *DeniedError (an ErrDenied) if not. It is
// the same check the dialer runs, exported for tests and for validating
// addresses before any request.
func Check(addr netip.Addr, opts Options) error {
	return newGuard(opts).check(addr)
}

// guard is the per-client form of the check, built once from Options.
type guard struct {
	allowPrivate bool
	allow        []netip.Prefix
}

func newGuard(opts Options) *guard {
	g := &guard{allowPrivate: opts.AllowPrivate}
	for _, p := range opts.AllowCIDRs {
		if !p.IsValid() {
			continue
		}
		// An IPv4-mapped IPv6 prefix is written as IPv4, because addresses are
		// unmapped before they are compared.
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		g.allow = append(g.allow, p.Masked())
	}
	return g
}

func (g *guard) check(addr netip.Addr) error {
	if !addr.IsValid() {
		return &DeniedError{Addr: addr, Reason: "invalid address"}
	}
	if g.allowPrivate {
		return nil
	}
	// ::ffff:127.0.0.1 is 127.0.0.1, and a zone does not change where fe80::1 is;
	// netip.Prefix.Contains would match neither, so compare the plain address.
	plain := addr.Unmap().WithZone("")
	for _, p := range g.allow {
		if p.Contains(plain) {
			return nil
		}
	}
	if err := guardian.SafeAddr(plain); err != nil {
		return &DeniedError{Addr: addr, Reason: reason(plain)}
	}
	return nil
}

// control is the net.Dialer Control hook: it runs after resolution, once per
// address tried, before the socket connects.
func (g *guard) control(network, address string, _ syscall.RawConn) error {
	if network != "tcp4" && network != "tcp6" {
		return fmt.Errorf("%w: network %s", ErrDenied, network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: unparsable address %q", ErrDenied, address)
	}
	return g.check(ap.Addr())
}

// reason names the class of a denied address so that a user reading a failed
// run understands why.
func reason(a netip.Addr) string {
	switch {
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsMulticast():
		return "multicast"
	case cgnat.Contains(a):
		return "shared address space"
	default:
		return "special-purpose"
	}
}

package guard

import (
	"net"
	"net/netip"

	"github.com/labstack/echo/v5"
)

// clientAddrFunc returns how the address a request comes from is read, for
// the limit on failed authentication: the peer's address, or, when the peer
// is one of the trusted proxies (TOCK_TRUSTED_PROXIES, such as the load
// balancer's subnets), the last address in X-Forwarded-For that is not a
// trusted proxy. No range is trusted by default, not even loopback or
// private ones: a client inside the network could otherwise name any
// address, to escape the limit or to have another address blocked.
func clientAddrFunc(trusted []netip.Prefix) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, p := range trusted {
		p = p.Masked()
		opts = append(opts, echo.TrustIPRange(&net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}

// addrKey is the bucket a client address counts in: an IPv4 address alone,
// an IPv6 address by its /64, which one subscriber usually holds whole (a
// limit per IPv6 address would let one client rotate through 2^64 of them).
func addrKey(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil || !a.Is6() || a.Is4In6() {
		if err == nil {
			return a.Unmap().String()
		}
		return addr
	}
	p, _ := a.WithZone("").Prefix(64)
	return p.String()
}

package outbound

import (
	"errors"
	"net/netip"
	"strings"

	"golang.org/x/net/idna"
)

// Host is a user's host as the dialer reads it: the ASCII name it resolves,
// or, when the host is an address in any spelling, that address.
type Host struct {
	// Name is the host in lower case ASCII, without a trailing dot: what is
	// resolved when Addr is not valid.
	Name string
	// Addr is the address the host spells, if it spells one: IPv6, dotted
	// IPv4, or any other form inet_aton accepts (127.1, 0x7f000001,
	// 2130706433, 0177.0.0.1).
	Addr netip.Addr
}

// ErrHost is matched by every refusal of ParseHost.
var ErrHost = errors.New("not a valid host")

// hostError is a refusal of ParseHost that says what is wrong.
type hostError string

func (e hostError) Error() string { return string(e) }
func (e hostError) Unwrap() error { return ErrHost }

// ParseHost reads a URL's host (url.URL.Hostname: no brackets, no port) the
// way tock's dialer does, so that the check at creation and the guard at
// connect time judge the same address:
//
//   - a name with non-ASCII characters is mapped to ASCII as the HTTP client
//     maps it (IDNA lookup: full-width dots become dots, xn-- labels);
//   - a host whose last label is a number is an IPv4 address, read with
//     inet_aton's rules (one to four parts, each decimal, octal with a
//     leading 0, or hex with 0x; the last fills the remaining bytes), as
//     the system resolver and browsers read it; one that does not read
//     as one is refused rather than looked up;
//   - anything else must be a DNS name: labels of letters, digits, hyphens
//     (not first or last) and underscores, 1 to 63 characters, 253 in all.
func ParseHost(host string) (Host, error) {
	if host == "" {
		return Host{}, hostError("is empty")
	}
	if strings.ContainsAny(host, ":%") {
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() {
			return Host{}, hostError("is not a valid IPv6 address")
		}
		return Host{Name: strings.ToLower(host), Addr: a}, nil
	}
	name := host
	if !isASCII(name) {
		ascii, err := idna.Lookup.ToASCII(name)
		if err != nil {
			return Host{}, hostError("is not a valid international domain name")
		}
		name = ascii
	}
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	if name == "" || len(name) > 253 {
		return Host{}, hostError("is not a valid host name")
	}
	labels := strings.Split(name, ".")
	if endsInNumber(labels[len(labels)-1]) {
		a, ok := parseIPv4(labels)
		if !ok {
			return Host{}, hostError("is not a valid IPv4 address")
		}
		return Host{Name: name, Addr: a}, nil
	}
	for _, l := range labels {
		if !validLabel(l) {
			return Host{}, hostError("is not a valid host name")
		}
	}
	return Host{Name: name}, nil
}

// DialHost is the host the dialer connects to for host: the address it
// spells in its canonical form, or the name as given, for the resolver.
func DialHost(host string) string {
	if h, err := ParseHost(host); err == nil && h.Addr.IsValid() {
		return h.Addr.String()
	}
	return host
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// endsInNumber reports whether a host's last label makes it an IPv4 address
// (the URL standard's "ends in a number"): all decimal digits, or 0x and hex
// digits.
func endsInNumber(l string) bool {
	if l == "" {
		return false
	}
	if allIn(l, "0123456789") {
		return true
	}
	if len(l) >= 2 && (l[:2] == "0x" || l[:2] == "0X") {
		return allIn(l[2:], "0123456789abcdefABCDEF")
	}
	return false
}

func allIn(s, set string) bool {
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune(set, rune(s[i])) {
			return false
		}
	}
	return true
}

// parseIPv4 reads one to four parts with inet_aton's rules.
func parseIPv4(parts []string) (netip.Addr, bool) {
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := parseIPv4Part(p)
		if !ok {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	var v uint64
	for i, n := range nums[:len(nums)-1] {
		if n > 0xff {
			return netip.Addr{}, false
		}
		v |= n << (8 * (3 - i))
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v |= last
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// parseIPv4Part reads one part: 0x hex, 0-led octal, or decimal, at most
// 32 bits.
func parseIPv4Part(p string) (uint64, bool) {
	base, digits := 10, "0123456789"
	switch {
	case len(p) >= 2 && (p[:2] == "0x" || p[:2] == "0X"):
		base, digits, p = 16, "0123456789abcdef", strings.ToLower(p[2:])
		if p == "" {
			return 0, true // "0x" is 0, as inet_aton reads it
		}
	case len(p) > 1 && p[0] == '0':
		base, digits, p = 8, "01234567", p[1:]
	case p == "":
		return 0, false
	}
	var n uint64
	for i := 0; i < len(p); i++ {
		d := strings.IndexByte(digits, p[i])
		if d < 0 {
			return 0, false
		}
		n = n*uint64(base) + uint64(d)
		if n > 0xffffffff {
			return 0, false
		}
	}
	return n, true
}

// validLabel reports whether l is a DNS label a resolver will look up:
// letters, digits, hyphens (not first or last) and underscores.
func validLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

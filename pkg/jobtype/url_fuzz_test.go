package jobtype_test

import (
	"errors"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/idna"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/outbound"
)

// FuzzCheckURL feeds CheckURL arbitrary strings under the strict policy and
// two looser ones: it must never panic, every error must be a *FieldError for
// the field it was given, and a URL it accepts under the strict policy must be
// one the worker may call: http or https, a host, no credentials, and no
// address the guard denies nor a name that always means loopback.
func FuzzCheckURL(f *testing.F) {
	for _, seed := range []string{
		// Accepted.
		"https://example.com/hook", "http://example.com", "https://example.com:8443/a?b=c#d",
		"http://93.184.215.14/", "http://93.184.215.14:65535/", "http://[2606:4700::1111]/",
		"http://[2606:4700::1111]:443/p", "HTTPS://EXAMPLE.COM/", "http://example.com./",
		"http://xn--bcher-kva.example/", "http://bücher.example/", "http://例え.テスト/",
		"http://example.com/%2e%2e/%00", "http://example.com/?q=%zz", "http://a/b;c?d",
		// Loopback, private, link-local and metadata addresses.
		"http://127.0.0.1/", "http://127.0.0.1:8080/hook", "http://127.1/", "http://127.000.000.001/",
		"http://0x7f.0.0.1/", "http://0177.0.0.1/", "http://2130706433/", "http://0/",
		"http://0.0.0.0/", "http://[::]/", "http://[::1]/", "http://[0:0:0:0:0:0:0:1]/",
		"http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/", "http://[::ffff:169.254.169.254]/",
		"http://[64:ff9b::7f00:1]/", "http://[::127.0.0.1]/", "http://[2002:7f00:1::]/",
		"http://169.254.169.254/latest/meta-data/", "http://169.254.169.254.", "http://169.254.170.2/v2/credentials",
		"http://[fd00:ec2::254]/", "http://[fe80::1%25eth0]/", "http://[fe80::1%eth0]/", "http://[fe80::1%25]/",
		"http://[::1%25lo]:80/", "http://10.1.2.3/", "http://172.16.0.1/", "http://192.168.1.1/",
		"http://100.64.0.1/", "http://224.0.0.1/", "http://255.255.255.255/", "http://[ff02::1]/",
		"http://127.0.0.1./", "http://127.0.0.1../", "http://%31%32%37.0.0.1/", "http://127.0.0.1%2e/",
		"http://[::1]:/", "http://[::1/", "http://::1/", "http://[127.0.0.1]/", "http://[v1.fe80::a+en1]/",
		// Localhost variants.
		"http://localhost/", "http://localhost:9000/", "http://LOCALHOST./", "http://LocalHost/",
		"http://api.localhost/", "http://a.b.LOCALHOST./", "http://localhost../", "http://.localhost/",
		"http://localhost.example.com/", "http://notlocalhost/", "http://%6c%6fcalhost/",
		"http://ｌｏｃａｌｈｏｓｔ/", "http://localhost%00/", "http://localhost%2e/",
		// Malformed, other schemes, credentials.
		"", " ", "example.com/hook", "//example.com/", "http:", "http:/", "http://", "http:///path",
		"http://:80/", "http://@/", "http://user@example.com/", "https://user:pw@example.com/",
		"http://:@example.com/", "http://example.com@127.0.0.1/", "http://127.0.0.1#@example.com/",
		"http://example.com:port/", "http://example.com:99999/", "http://exa mple.com/", "http://exa\x00mple.com/",
		"http://example.com\r\n/", "ftp://example.com/", "file:///etc/passwd", "gopher://127.0.0.1:6379/_",
		"javascript:alert(1)", "HtTp://example.com/", "https:example.com", "http:\\\\example.com\\",
		"http://%zz/", "http://%/", "http://[%25]/", "http://[]/", "http://a:b:c/",
		// Spellings the system resolver reads as an address.
		"http://127。0。0。1/", "http://127．0．0．1/", "http://0xa9fea9fe/", "http://0x7f000001/",
		"http://10.1/", "http://0x0a.1/", "http://012.0.0.1/", "http://1.2.3.4.5/", "http://host:99999/",
	} {
		f.Add(seed)
	}
	strict := outbound.Options{}
	policies := []outbound.Options{
		strict,
		{AllowPrivate: true},
		{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("::ffff:127.0.0.0/104")}},
	}
	const field = "payload.webhook_url"
	f.Fuzz(func(t *testing.T, raw string) {
		for _, targets := range policies {
			err := jobtype.CheckURL(field, raw, targets)
			if err != nil {
				var fe *job.FieldError
				if !errors.As(err, &fe) || fe.Field != field {
					t.Fatalf("CheckURL(%q): error %v (%T) is not a *FieldError for %s", raw, err, err, field)
				}
				if !errors.Is(err, job.ErrInvalid) {
					t.Fatalf("CheckURL(%q): error %v does not match ErrInvalid", raw, err)
				}
				continue
			}
			u, perr := url.Parse(raw)
			switch {
			case perr != nil:
				t.Fatalf("accepted %q, which does not parse: %v", raw, perr)
			case u.Scheme != "http" && u.Scheme != "https":
				t.Fatalf("accepted %q with scheme %q", raw, u.Scheme)
			case u.Hostname() == "":
				t.Fatalf("accepted %q without a host", raw)
			case u.User != nil:
				t.Fatalf("accepted %q with credentials", raw)
			}
			if targets.AllowPrivate || len(targets.AllowCIDRs) > 0 {
				continue
			}
			host := u.Hostname()
			if addr, aerr := netip.ParseAddr(host); aerr == nil {
				if cerr := outbound.Check(addr, strict); cerr != nil {
					t.Fatalf("accepted %q, whose address the guard denies: %v", raw, cerr)
				}
			}
			// A resolver reads a name without case and with one trailing dot
			// as the same name.
			name := strings.ToLower(strings.TrimSuffix(host, "."))
			if addr, aerr := netip.ParseAddr(name); aerr == nil {
				if cerr := outbound.Check(addr, strict); cerr != nil {
					t.Fatalf("accepted %q, whose address the guard denies: %v", raw, cerr)
				}
			}
			if name == "localhost" || strings.HasSuffix(name, ".localhost") {
				t.Fatalf("accepted %q, which always means loopback", raw)
			}
			// What a resolver would connect to: the HTTP client maps a
			// non-ASCII name with IDNA, and the system resolver reads every
			// inet_aton spelling of an IPv4 address (read here, independently
			// of the code under test, with strconv's base prefixes).
			if ascii, ierr := idna.Lookup.ToASCII(host); ierr == nil {
				name = strings.ToLower(strings.TrimSuffix(ascii, "."))
			}
			if addr, ok := atonOracle(name); ok {
				if cerr := outbound.Check(addr, strict); cerr != nil {
					t.Fatalf("accepted %q, which the dialer reads as %s, an address the guard denies", raw, addr)
				}
			}
		}
	})
}

// atonOracle reads name as inet_aton would: one to four numbers (decimal,
// 0-led octal, 0x hex), the last filling the remaining bytes.
func atonOracle(name string) (netip.Addr, bool) {
	parts := strings.Split(name, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v uint64
	for i, p := range parts {
		lower := strings.ToLower(p)
		if strings.Contains(p, "_") || strings.HasPrefix(lower, "0b") || strings.HasPrefix(lower, "0o") {
			return netip.Addr{}, false // strconv's, not inet_aton's
		}
		n, err := strconv.ParseUint(p, 0, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		if i < len(parts)-1 {
			if n > 255 {
				return netip.Addr{}, false
			}
			v |= n << (8 * (3 - i))
			continue
		}
		if n >= 1<<(8*(5-len(parts))) {
			return netip.Addr{}, false
		}
		v |= n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

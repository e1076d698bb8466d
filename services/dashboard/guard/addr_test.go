package guard

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAddrKey counts an IPv4 address alone, however it is written, and an
// IPv6 address by its /64, so that rotating through one's own prefix does
// not escape the limit.
func TestAddrKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"203.0.113.7":           "203.0.113.7",
		"::ffff:203.0.113.7":    "203.0.113.7",
		"2001:db8:1:2::1":       "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::9":  "2001:db8:1:2::/64",
		"2001:db8:1:3::1":       "2001:db8:1:3::/64",
		"fe80::1%eth0":          "fe80::/64",
		"not an address":        "not an address",
		"":                      "",
		"2001:db8:1:2::1:40000": "2001:db8:1:2::1:40000", // not an address: counted as it is
	} {
		require.Equal(t, want, addrKey(in), in)
	}
}

// TestClientAddr believes X-Forwarded-For only from a trusted proxy, and
// then names the last address in it that is not a trusted proxy; by
// default no peer is trusted, not even a private or loopback one.
func TestClientAddr(t *testing.T) {
	t.Parallel()
	from := func(peer, xff string) *http.Request {
		r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/", nil)
		r.RemoteAddr = peer + ":40000"
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		return r
	}
	direct := clientAddrFunc(nil)
	require.Equal(t, "10.0.0.5", direct(from("10.0.0.5", "203.0.113.7")))
	require.Equal(t, "127.0.0.1", direct(from("127.0.0.1", "203.0.113.7")))

	proxied := clientAddrFunc([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")})
	for _, tt := range []struct{ peer, xff, want string }{
		{"10.0.0.5", "203.0.113.7", "203.0.113.7"},
		{"10.0.0.5", "198.51.100.1, 203.0.113.7", "203.0.113.7"},
		{"10.0.0.5", "203.0.113.7, 10.0.0.9", "203.0.113.7"},
		{"192.168.1.9", "203.0.113.7", "192.168.1.9"},
		{"127.0.0.1", "203.0.113.7", "127.0.0.1"},
		{"10.0.0.5", "", "10.0.0.5"},
	} {
		require.Equal(t, tt.want, proxied(from(tt.peer, tt.xff)), "%s via %s", tt.xff, tt.peer)
	}
}

package outbound_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/outbound"
)

// TestParseHost reads every spelling of an address the system resolver
// (inet_aton) or a browser would, maps international names as the HTTP
// client does, and refuses what no resolver would look up.
func TestParseHost(t *testing.T) {
	t.Parallel()
	addrs := map[string]string{
		"127.0.0.1":        "127.0.0.1",
		"127.1":            "127.0.0.1",
		"127.0.1":          "127.0.0.1",
		"0x7f000001":       "127.0.0.1",
		"0X7F000001":       "127.0.0.1",
		"2130706433":       "127.0.0.1",
		"0177.0.0.1":       "127.0.0.1",
		"0x7f.0.0.1":       "127.0.0.1",
		"127.000.000.001":  "127.0.0.1",
		"0":                "0.0.0.0",
		"0x":               "0.0.0.0",
		"127.0.0.1.":       "127.0.0.1",
		"127。0。0。1":        "127.0.0.1", // ideographic full stops
		"127．0．0．1":        "127.0.0.1", // full-width full stops
		"１２７.0.0.1":        "127.0.0.1", // full-width digits
		"169.254.169.254":  "169.254.169.254",
		"0xa9fea9fe":       "169.254.169.254",
		"93.184.215.14":    "93.184.215.14",
		"::1":              "::1",
		"::ffff:127.0.0.1": "::ffff:127.0.0.1",
		"fe80::1%eth0":     "fe80::1%eth0",
	}
	for in, want := range addrs {
		h, err := outbound.ParseHost(in)
		require.NoError(t, err, in)
		require.True(t, h.Addr.IsValid(), in)
		require.Equal(t, want, h.Addr.String(), in)
		require.Equal(t, h.Addr.String(), outbound.DialHost(in), "the dialer connects to what was checked: %s", in)
	}
	names := map[string]string{
		"example.com":      "example.com",
		"EXAMPLE.com.":     "example.com",
		"bücher.example":   "xn--bcher-kva.example",
		"例え.テスト":           "xn--r8jz45g.xn--zckzah",
		"a_b.example":      "a_b.example",
		"123.example.com":  "123.example.com",
		"0x7f.example.com": "0x7f.example.com",
		"localhost":        "localhost",
		"ｌｏｃａｌｈｏｓｔ":        "localhost",
	}
	for in, want := range names {
		h, err := outbound.ParseHost(in)
		require.NoError(t, err, in)
		require.False(t, h.Addr.IsValid(), in)
		require.Equal(t, want, h.Name, in)
		require.Equal(t, in, outbound.DialHost(in), "a name goes to the resolver as it is")
	}
	for _, in := range []string{
		"", "1.2.3.4.5", "256.0.0.1.", "1.2.3.256", "1.2.65536", "4294967296", "0x100000000",
		"08.0.0.1", "1.0x1g.2", "example.123", "127.0.0.1..", ".example.com", "a..b", "exa mple.com",
		"exa\x00mple.com", "a/b", "[::1]", "::g", "1::2::3", "x.-", "a" + string(make([]byte, 64)) + ".com",
	} {
		_, err := outbound.ParseHost(in)
		require.Error(t, err, "%q", in)
		require.True(t, errors.Is(err, outbound.ErrHost), "%q", in)
	}
}

package outbound_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/outbound"
)

// These tests only call the guard on addresses; nothing is dialled.
func TestCheck(t *testing.T) {
	t.Parallel()

	denied := []struct {
		addr   string
		reason string
	}{
		{"127.0.0.1", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"192.168.1.1", "private"},
		{"169.254.169.254", "link-local"},
		{"169.254.170.2", "link-local"},
		{"::1", "loopback"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"fd00:ec2::254", "private"},
		{"100.64.0.1", "shared address space"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:169.254.169.254", "link-local"},
		{"192.0.2.1", "special-purpose"},
		{"2001:db8::1", "special-purpose"},
		{"240.0.0.1", "special-purpose"},
	}
	public := []string{"8.8.8.8", "1.1.1.1", "2606:4700::1", "2a00:1450:4001::1", "::ffff:8.8.8.8"}

	t.Run("DeniesSpecialAddresses", func(t *testing.T) {
		t.Parallel()
		for _, tc := range denied {
			err := outbound.Check(netip.MustParseAddr(tc.addr), outbound.Options{})
			require.ErrorIs(t, err, outbound.ErrDenied, tc.addr)
			var de *outbound.DeniedError
			require.ErrorAs(t, err, &de, tc.addr)
			require.Equal(t, tc.reason, de.Reason, tc.addr)
			require.Equal(t, "target address not allowed", err.Error(), "a run's error names neither the address nor its class: "+tc.addr)
		}
	})

	t.Run("AllowsPublicAddresses", func(t *testing.T) {
		t.Parallel()
		for _, a := range public {
			require.NoError(t, outbound.Check(netip.MustParseAddr(a), outbound.Options{}), a)
		}
	})

	t.Run("AllowPrivateAllowsEverything", func(t *testing.T) {
		t.Parallel()
		for _, tc := range denied {
			require.NoError(t, outbound.Check(netip.MustParseAddr(tc.addr), outbound.Options{AllowPrivate: true}), tc.addr)
		}
	})

	t.Run("AllowCIDRsAllowOnlyTheirRanges", func(t *testing.T) {
		t.Parallel()
		opts := outbound.Options{AllowCIDRs: []netip.Prefix{
			netip.MustParsePrefix("10.0.0.0/8"),
			netip.MustParsePrefix("fd00:1::/32"),
		}}
		require.NoError(t, outbound.Check(netip.MustParseAddr("10.1.2.3"), opts))
		require.NoError(t, outbound.Check(netip.MustParseAddr("::ffff:10.1.2.3"), opts))
		require.NoError(t, outbound.Check(netip.MustParseAddr("fd00:1::5"), opts))
		require.ErrorIs(t, outbound.Check(netip.MustParseAddr("192.168.1.1"), opts), outbound.ErrDenied)
		require.ErrorIs(t, outbound.Check(netip.MustParseAddr("fd00:ec2::254"), opts), outbound.ErrDenied)
		require.ErrorIs(t, outbound.Check(netip.MustParseAddr("169.254.169.254"), opts), outbound.ErrDenied)
	})

	t.Run("MappedAllowCIDRMatchesIPv4", func(t *testing.T) {
		t.Parallel()
		opts := outbound.Options{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("::ffff:10.0.0.0/104")}}
		require.NoError(t, outbound.Check(netip.MustParseAddr("10.9.9.9"), opts))
		require.ErrorIs(t, outbound.Check(netip.MustParseAddr("192.168.1.1"), opts), outbound.ErrDenied)
	})

	t.Run("DeniesInvalidAddress", func(t *testing.T) {
		t.Parallel()
		require.ErrorIs(t, outbound.Check(netip.Addr{}, outbound.Options{}), outbound.ErrDenied)
		require.ErrorIs(t, outbound.Check(netip.Addr{}, outbound.Options{AllowPrivate: true}), outbound.ErrDenied)
	})
}

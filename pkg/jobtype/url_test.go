package jobtype_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/outbound"
)

// TestCheckURL/RefusesWhatTheWorkerWouldNotDial: a URL naming an address the
// worker's guard denies, or localhost, is refused at creation, unless the
// operator's policy allows it; names are left to the guard at connect time.
func TestCheckURL(t *testing.T) {
	t.Parallel()
	strict := outbound.Options{}
	open := outbound.Options{AllowPrivate: true}
	allow10 := outbound.Options{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}}
	tests := []struct {
		name    string
		url     string
		targets outbound.Options
		ok      bool
	}{
		{"PublicName", "https://example.com/hook", strict, true},
		{"PublicAddress", "http://93.184.215.14/", strict, true},
		{"Loopback", "http://127.0.0.1:8080/hook", strict, false},
		{"LoopbackV6", "http://[::1]/", strict, false},
		{"MappedLoopback", "http://[::ffff:127.0.0.1]/", strict, false},
		{"Localhost", "http://localhost:9000/", strict, false},
		{"LocalhostDot", "http://LOCALHOST./", strict, false},
		{"LocalhostSubdomain", "http://api.localhost/", strict, false},
		{"Private", "http://10.1.2.3/", strict, false},
		{"Metadata", "http://169.254.169.254/latest/meta-data/", strict, false},
		{"TaskCredentials", "http://169.254.170.2/v2/credentials", strict, false},
		{"Unspecified", "http://0.0.0.0/", strict, false},
		{"ULA", "http://[fd00:ec2::254]/", strict, false},
		{"AllowedPrivate", "http://127.0.0.1:8080/hook", open, true},
		{"AllowedLocalhost", "http://localhost:9000/", open, true},
		{"AllowedCIDR", "http://10.1.2.3/", allow10, true},
		{"OutsideAllowedCIDR", "http://10.2.0.1/", allow10, false},
		{"NoScheme", "example.com/hook", strict, false},
		{"FTP", "ftp://example.com/", strict, false},
		{"NoHost", "http:///path", strict, false},
		{"Credentials", "https://user:pw@example.com/", strict, false},
		{"Empty", "", strict, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := jobtype.CheckURL("payload.url", tt.url, tt.targets)
			if tt.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, job.ErrInvalid)
			var fe *job.FieldError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, "payload.url", fe.Field)
		})
	}
}

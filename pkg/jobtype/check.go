// What the job types' checks share: field errors, strict decoding, and the
// rules user-given URLs and addresses must pass.

package jobtype

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/outbound"
	"github.com/tockhq/tock/pkg/strictjson"
)

func invalid(field, format string, args ...any) error {
	return &job.FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// hasControl reports whether s holds a control character, CR and LF among them.
func hasControl(s string) bool { return strings.ContainsFunc(s, isControl) }

// isControl reports whether r is an ASCII control character or DEL.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// validHeader reports whether a header can be sent as given, by the rules the
// HTTP client applies when it sends it: a name of token characters (RFC
// 9110), a value without control bytes other than tab. A header the client
// would refuse would fail every run, so it is refused at creation.
func validHeader(k, v string) bool {
	return httpguts.ValidHeaderFieldName(k) && httpguts.ValidHeaderFieldValue(v)
}

// decodeStrict reads a payload into its type's struct: no unknown field.
func decodeStrict(raw json.RawMessage, v any) error {
	if err := strictjson.Strict(raw, v); err != nil {
		return fmt.Errorf("does not match its type: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// CheckURL accepts only absolute http(s) URLs with a host that targets allows.
// A host written as an address is checked here with the worker's own guard, and
// so is localhost; any other name is checked at connect time by the worker's
// guard, since a name can resolve differently later.
func CheckURL(field, raw string, targets outbound.Options) error {
	if raw == "" {
		return invalid(field, "is required")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return invalid(field, "is not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return invalid(field, "must use http or https")
	}
	if u.Hostname() == "" {
		return invalid(field, "must have a host")
	}
	if u.User != nil {
		return invalid(field, "must not carry credentials; use headers")
	}
	if err := checkPort(u.Port()); err != nil {
		return invalid(field, "%s", err)
	}
	if err := checkHost(u.Hostname(), targets); err != nil {
		return invalid(field, "%s", err)
	}
	return nil
}

// checkPort refuses a port no connection can use: the URL's port, if it has
// one, must be 1 to 65535.
func checkPort(p string) error {
	if p == "" {
		return nil
	}
	if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("has port %q; a port is 1 to 65535", p)
	}
	return nil
}

// checkHost refuses a host the worker could never be allowed to reach, read
// as its dialer reads it (outbound.ParseHost): a host that is no valid name
// or address; an address, in any spelling, that its guard denies; localhost
// and its subdomains, which always resolve to loopback (RFC 6761). Any other
// name is checked at connect time by the guard, since a name can resolve
// differently later.
func checkHost(host string, targets outbound.Options) error {
	h, err := outbound.ParseHost(host)
	if err != nil {
		return fmt.Errorf("has a host that %s", err)
	}
	addr := h.Addr
	if !addr.IsValid() {
		if h.Name != "localhost" && !strings.HasSuffix(h.Name, ".localhost") {
			return nil
		}
		addr = netip.IPv6Loopback()
	}
	if err := outbound.Check(addr, targets); err != nil {
		var denied *outbound.DeniedError
		if errors.As(err, &denied) {
			return fmt.Errorf("names a %s address, which tock does not call (an operator can allow it with TOCK_ALLOW_PRIVATE_TARGETS or TOCK_ALLOWED_TARGET_CIDRS)", denied.Reason)
		}
		return err
	}
	return nil
}

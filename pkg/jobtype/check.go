// What the job types' checks share: field errors, strict decoding, and the
// rules user-given URLs and addresses must pass.

package jobtype

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/outbound"
)

func invalid(field, format string, args ...any) error {
	return &job.FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// hasControl reports whether s holds a control character, CR and LF among them.
func hasControl(s string) bool { return strings.ContainsFunc(s, isControl) }

// isControl reports whether r is an ASCII control character or DEL.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// validHeader reports whether a header name and value can be sent: no
// empty name, no blank, colon or line break in it, no line break in the value.
func validHeader(k, v string) bool {
	return k != "" && !strings.ContainsAny(k, "\r\n: ") && !strings.ContainsAny(v, "\r\n")
}

func decodeStrict(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
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
	if err := checkHost(u.Hostname(), targets); err != nil {
		return invalid(field, "%s", err)
	}
	return nil
}

// checkHost refuses a host the worker could never be allowed to reach: an
// address its guard denies, or localhost and its subdomains, which always
// resolve to loopback (RFC 6761).
func checkHost(host string, targets outbound.Options) error {
	name := strings.ToLower(host)
	addr, err := netip.ParseAddr(name)
	if err != nil {
		if strings.ContainsAny(name, ":%") {
			return fmt.Errorf("is not a valid IPv6 address")
		}
		// A name may end in the root's dot, and so may an IPv4 address
		// written as one ("127.0.0.1.").
		name = strings.TrimSuffix(name, ".")
		switch a, err := netip.ParseAddr(name); {
		case err == nil:
			addr = a
		case name == "localhost" || strings.HasSuffix(name, ".localhost"):
			addr = netip.IPv6Loopback()
		default:
			return nil
		}
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

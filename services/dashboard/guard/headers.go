package guard

import (
	"net/http"

	"github.com/tockhq/tock/services/dashboard/apierr"
)

// StrictHeaders refuses a request that names its credentials or its body's
// type twice. Go's server keeps both values and Header.Get reads the first,
// so "Authorization: <admin token>" followed by a second, different
// Authorization would be served as whichever a proxy in front did not look
// at: tock answers 400 rather than guess.
func StrictHeaders(r *http.Request) error {
	for _, name := range []string{"Authorization", "Content-Type"} {
		if len(r.Header.Values(name)) > 1 {
			return apierr.New(http.StatusBadRequest, apierr.CodeInvalid, name, "the "+name+" header appears more than once; send it once")
		}
	}
	return nil
}

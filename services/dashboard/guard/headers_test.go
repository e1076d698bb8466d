package guard_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/services/dashboard/apierr"
	"github.com/tockhq/tock/services/dashboard/guard"
)

// TestStrictHeaders refuses a request that names its credentials or its
// body's type twice, whatever the order or the values, with a 400 naming the
// header; once each, or other headers twice, pass.
func TestStrictHeaders(t *testing.T) {
	t.Parallel()
	admin := [2]string{"Authorization", "Bearer admin"}
	bad := [2]string{"Authorization", "Bearer tock_aaaaaaaaaaaaa_bad"}
	json := [2]string{"Content-Type", "application/json"}
	for name, tt := range map[string]struct {
		headers [][2]string
		field   string // the header refused; empty when the request passes
	}{
		"AuthorizationTwiceAdminFirst":  {[][2]string{admin, bad, json}, "Authorization"},
		"AuthorizationTwiceAdminSecond": {[][2]string{bad, admin, json}, "Authorization"},
		"AuthorizationTwiceTheSame":     {[][2]string{admin, admin}, "Authorization"},
		"ContentTypeTwice":              {[][2]string{admin, json, {"Content-Type", "text/plain"}}, "Content-Type"},
		"OnceEach":                      {[][2]string{admin, json}, ""},
		"None":                          {nil, ""},
		"OtherHeadersTwice":             {[][2]string{admin, {"Accept", "a"}, {"Accept", "b"}}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/api/v1/jobs", nil)
			for _, h := range tt.headers {
				r.Header.Add(h[0], h[1])
			}
			err := guard.StrictHeaders(r)
			if tt.field == "" {
				require.NoError(t, err)
				return
			}
			var ae *apierr.Error
			require.True(t, errors.As(err, &ae), "%v", err)
			require.Equal(t, http.StatusBadRequest, ae.Status)
			require.Equal(t, apierr.CodeInvalid, ae.Detail.Code)
			require.Equal(t, tt.field, ae.Detail.Field)
			require.Contains(t, ae.Detail.Message, "more than once")
		})
	}
}

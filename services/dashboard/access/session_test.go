package access

import (
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/services/dashboard/apierr"
)

// TestNewSessionID mints ids of tses_ and 32 random bytes, stored by their
// SHA-256, that sessionShaped accepts.
func TestNewSessionID(t *testing.T) {
	t.Parallel()
	id, sum := newSessionID()
	require.Regexp(t, `^tses_[A-Za-z0-9_-]{43}$`, id)
	require.Equal(t, sha256.Sum256([]byte(id)), sum)
	require.True(t, sessionShaped(id))
	require.True(t, Minted(id))
	again, _ := newSessionID()
	require.NotEqual(t, id, again)
}

// TestSessionShaped refuses without a lookup whatever a session id cannot
// be: a key (what a cookie of an earlier release held), the admin token, a
// truncated id, a byte outside base64url.
func TestSessionShaped(t *testing.T) {
	t.Parallel()
	id, _ := newSessionID()
	require.True(t, sessionShaped("tses_"+strings.Repeat("A", 43)))
	for _, bad := range []string{
		"", "tses_", id[:len(id)-1], id + "A", "tock_aaaaaaaaaaaaa_secret", "test-admin-token-0123456789abcdef",
		"tses_" + strings.Repeat("A", 42) + "=", "tses_" + strings.Repeat("A", 42) + "\xff", "TSES_" + strings.Repeat("A", 43),
	} {
		require.False(t, sessionShaped(bad), "%q", bad)
	}
	for _, bad := range []string{"", id[:len(id)-1], "test-admin-token-0123456789abcdef", "Bearer " + id} {
		require.False(t, Minted(bad), "%q is shaped like no credential tock mints", bad)
	}
}

// TestAdminBinding ties a session id to the admin token: a new token or
// another id gives another binding, and the binding is not the token's
// bare hash, so the sessions table offers nothing to test a guess against.
func TestAdminBinding(t *testing.T) {
	t.Parallel()
	token := []byte("test-admin-token-0123456789abcdef")
	id, _ := newSessionID()
	other, _ := newSessionID()
	b := adminBinding(token, id)
	require.Len(t, b, 32)
	require.Equal(t, b, adminBinding(token, id))
	require.NotEqual(t, b, adminBinding([]byte("another-admin-token-0123456789"), id))
	require.NotEqual(t, b, adminBinding(token, other))
	bare := sha256.Sum256(token)
	require.NotEqual(t, bare[:], b)
}

// TestCheckSignIn refuses a sign-in posted from another site (login CSRF)
// with 403 and one naming its headers twice with 400, before its body is
// read; a client that sends no Origin is not a browser and passes.
func TestCheckSignIn(t *testing.T) {
	t.Parallel()
	for name, tt := range map[string]struct {
		headers [][2]string
		status  int // 0: passes
	}{
		"NoOrigin":          {nil, 0},
		"SameOrigin":        {[][2]string{{"Origin", "http://dash.example:8080"}}, 0},
		"OtherSite":         {[][2]string{{"Origin", "https://evil.example"}}, http.StatusForbidden},
		"OtherPort":         {[][2]string{{"Origin", "http://dash.example:9090"}}, http.StatusForbidden},
		"BadOrigin":         {[][2]string{{"Origin", "http://%zz"}}, http.StatusForbidden},
		"ContentTypeTwice":  {[][2]string{{"Content-Type", "application/json"}, {"Content-Type", "text/plain"}}, http.StatusBadRequest},
		"AuthorizationOnce": {[][2]string{{"Authorization", "Bearer x"}}, 0},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "http://dash.example:8080/ui/session", nil)
			for _, h := range tt.headers {
				r.Header.Add(h[0], h[1])
			}
			err := CheckSignIn(r)
			if tt.status == 0 {
				require.NoError(t, err)
				return
			}
			var ae *apierr.Error
			require.True(t, errors.As(err, &ae), "%v", err)
			require.Equal(t, tt.status, ae.Status)
		})
	}
}

// TestCookieRules: the cookie is Secure when the browser reached us over
// TLS, directly or through a proxy that says so, and only a read needs no
// CSRF header.
func TestCookieRules(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/", nil)
	require.False(t, overTLS(r))
	r.Header.Set("X-Forwarded-Proto", "HTTPS")
	require.True(t, overTLS(r))
	r = httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/", nil)
	r.TLS = &tls.ConnectionState{}
	require.True(t, overTLS(r))

	for m, safe := range map[string]bool{
		http.MethodGet: true, http.MethodHead: true, http.MethodOptions: true,
		http.MethodPost: false, http.MethodPut: false, http.MethodPatch: false, http.MethodDelete: false,
	} {
		require.Equal(t, safe, safeMethod(m), m)
	}
}

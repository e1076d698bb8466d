package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/services/dashboard/api"
)

// TestRotateSigningSecret replaces a user's secret, keeps the old one in a
// grace period that GET shows, refuses a bad grace, and needs jobs:write.
func TestRotateSigningSecret(t *testing.T) {
	t.Parallel()
	b := setup(t)
	u := b.user(t, "signer", "user", nil)
	first := decode[api.SigningSecret](t, b.as(t, u, http.MethodGet, "/api/v1/signing-secret", nil))
	require.Len(t, first.Secret, 64)
	require.True(t, first.PreviousValidUntil.IsZero())

	rec := b.as(t, u, http.MethodPost, "/api/v1/signing-secret:rotate", nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
	second := decode[api.SigningSecret](t, rec)
	require.NotEqual(t, first.Secret, second.Secret)
	require.True(t, b.now.Add(api.DefaultSigningGrace).Equal(second.PreviousValidUntil.Time))
	got := decode[api.SigningSecret](t, b.as(t, u, http.MethodGet, "/api/v1/signing-secret", nil))
	require.Equal(t, second.Secret, got.Secret)
	require.Equal(t, second.PreviousValidUntil, got.PreviousValidUntil)

	third := decode[api.SigningSecret](t, b.as(t, u, http.MethodPost, "/api/v1/signing-secret:rotate", map[string]any{"grace": "0s"}))
	require.True(t, third.PreviousValidUntil.IsZero(), "no grace: only the new secret signs")

	for _, g := range []string{"-1h", "31d", "soon"} {
		e := requireError(t, b.as(t, u, http.MethodPost, "/api/v1/signing-secret:rotate", map[string]any{"grace": g}),
			http.StatusBadRequest, api.CodeInvalid)
		require.Equal(t, "grace", e.Field, g)
	}
	require.Equal(t, third.Secret, decode[api.SigningSecret](t, b.as(t, u, http.MethodGet, "/api/v1/signing-secret", nil)).Secret,
		"a refused rotation changes nothing")

	k := decode[api.Key](t, b.as(t, u, http.MethodPost, "/api/v1/users/"+u.id.String()+"/keys",
		map[string]any{"scopes": []string{"jobs:read", "runs:read"}}))
	e := requireError(t, b.as(t, person{id: u.id, key: k.Key}, http.MethodPost, "/api/v1/signing-secret:rotate", nil),
		http.StatusForbidden, api.CodeForbidden)
	require.Contains(t, e.Message, "jobs:write")

	audit := decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?action=user.rotate_signing_secret", nil))
	require.Len(t, audit.Entries, 2)
	require.NotContains(t, string(audit.Entries[0].Change), second.Secret)
}

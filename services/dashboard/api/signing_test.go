package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/apierr"
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
			http.StatusBadRequest, apierr.CodeInvalid)
		require.Equal(t, "grace", e.Field, g)
	}
	require.Equal(t, third.Secret, decode[api.SigningSecret](t, b.as(t, u, http.MethodGet, "/api/v1/signing-secret", nil)).Secret,
		"a refused rotation changes nothing")

	k := decode[api.Key](t, b.as(t, u, http.MethodPost, "/api/v1/users/"+u.id.String()+"/keys",
		map[string]any{"scopes": []string{"jobs:read", "runs:read"}}))
	e := requireError(t, b.as(t, person{id: u.id, key: k.Key}, http.MethodPost, "/api/v1/signing-secret:rotate", nil),
		http.StatusForbidden, apierr.CodeForbidden)
	require.Contains(t, e.Message, "jobs:write")

	audit := decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?action=user.rotate_signing_secret", nil))
	require.Len(t, audit.Entries, 2)
	require.NotContains(t, string(audit.Entries[0].Change), second.Secret)
}

// TestRotateSigningSecretReplay: a rotation under an Idempotency-Key keeps
// its answer with the secret's fingerprint in place of the secret, so
// idempotency_keys never holds it, and a replay says where to read it.
func TestRotateSigningSecretReplay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	u := b.user(t, "signer", "user", nil)
	rec := b.withKey(t, &u, http.MethodPost, "/api/v1/signing-secret:rotate", map[string]any{"grace": "1h"}, "rotate-1")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	rotated := decode[api.SigningSecret](t, rec)
	require.Len(t, rotated.Secret, 64, "the first answer holds the secret itself")
	require.Empty(t, rotated.Note)
	sum := sha256.Sum256([]byte(rotated.Secret))
	fingerprint := "secret:sha256:" + hex.EncodeToString(sum[:16])

	var kept []byte
	require.NoError(t, b.store.Pool().QueryRow(t.Context(),
		`SELECT response FROM idempotency_keys WHERE owner_id = $1 AND key = $2`, u.id, "rotate-1").Scan(&kept))
	require.NotContains(t, string(kept), rotated.Secret, "the stored answer holds no secret")
	require.Contains(t, string(kept), fingerprint)

	replay := b.withKey(t, &u, http.MethodPost, "/api/v1/signing-secret:rotate", map[string]any{"grace": "1h"}, "rotate-1")
	require.Equal(t, http.StatusOK, replay.Code, replay.Body.String())
	require.Equal(t, "true", replay.Header().Get("Idempotent-Replayed"))
	require.NotContains(t, replay.Body.String(), rotated.Secret)
	again := decode[api.SigningSecret](t, replay)
	require.Equal(t, fingerprint, again.Secret)
	require.Contains(t, again.Note, "does not repeat the secret")
	require.Contains(t, again.Note, "GET /api/v1/signing-secret")
	require.Equal(t, rotated.PreviousValidUntil, again.PreviousValidUntil, "the rest of the answer is the same")
	require.Equal(t, rotated.Scheme, again.Scheme)

	got := decode[api.SigningSecret](t, b.as(t, u, http.MethodGet, "/api/v1/signing-secret", nil))
	require.Equal(t, rotated.Secret, got.Secret, "the replay rotated nothing; GET shows the secret")
}

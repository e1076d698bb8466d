package access

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v5"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// TestKeyScopes: a key without scopes has everything its user's role
// allows, and a key never has more than the role allows, so a demoted
// user's keys lose admin at once.
func TestKeyScopes(t *testing.T) {
	t.Parallel()
	for name, tt := range map[string]struct {
		scopes []string
		role   string
		want   []string
	}{
		"UserAll":         {nil, store.RoleUser, []string{"jobs:read", "jobs:write", "runs:read"}},
		"AdminAll":        {nil, store.RoleAdmin, []string{"jobs:read", "jobs:write", "runs:read", "admin"}},
		"ReadOnly":        {[]string{"runs:read", "jobs:read"}, store.RoleUser, []string{"jobs:read", "runs:read"}},
		"DemotedKeepsNot": {[]string{"admin", "jobs:read"}, store.RoleUser, []string{"jobs:read"}},
		"UnknownIsNone":   {[]string{"jobs:read", "everything"}, store.RoleAdmin, []string{}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, KeyScopes(&store.Key{Scopes: tt.scopes}, tt.role).Names())
		})
	}
}

// TestParseScopes names the first unknown scope by its index.
func TestParseScopes(t *testing.T) {
	t.Parallel()
	set, bad := parseScopes([]string{"admin", "jobs:write", "admin"})
	require.Equal(t, -1, bad)
	require.Equal(t, canAdmin|canJobsWrite, set)
	_, bad = parseScopes([]string{"jobs:read", "jobs:delete", "nope"})
	require.Equal(t, 1, bad)
	require.Equal(t, []string{"jobs:read", "jobs:write", "runs:read", "admin"}, allScopeNames())
}

// TestNeededScope classifies routes by path template and method; a route
// it does not know needs every scope a user can have.
func TestNeededScope(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		method, path string
		want         Scopes
	}{
		{http.MethodGet, "/api/v1/me", 0},
		{http.MethodGet, "/api/v1/users/:id", 0},
		{http.MethodPatch, "/api/v1/users/:id", canAdmin},
		{http.MethodGet, "/api/v1/users/:id/keys", 0},
		{http.MethodPost, "/api/v1/users/:id/keys", canJobsWrite},
		{http.MethodDelete, "/api/v1/keys/:id", canJobsWrite},
		{http.MethodGet, "/api/v1/audit", canAdmin},
		{http.MethodGet, `/api/v1/runs\:stats`, canRunsRead},
		{http.MethodGet, "/api/v1/jobs/:id/runs", canRunsRead},
		{http.MethodHead, "/api/v1/jobs/:id", canJobsRead},
		{http.MethodPost, `/api/v1/jobs\:bulk`, canJobsWrite},
		{http.MethodPost, "/api/v1/schedules/preview", canJobsRead},
		{http.MethodGet, "/api/v1/something-new", canJobsRead | canJobsWrite | canRunsRead},
	} {
		require.Equal(t, tt.want, neededScope(tt.method, tt.path), "%s %s", tt.method, tt.path)
	}
}

// TestRequireScope refuses with a 403 that names the scope missing, or the
// administrator, and lets through what the key allows.
func TestRequireScope(t *testing.T) {
	t.Parallel()
	e := echo.New()
	check := func(method, path string, p Principal) error {
		c := e.NewContext(httptest.NewRequestWithContext(t.Context(), method, "/", nil), httptest.NewRecorder())
		c.SetPath(path)
		return requireScope(c, p)
	}
	readOnly := Principal{Scopes: canJobsRead | canRunsRead}
	require.NoError(t, check(http.MethodGet, "/api/v1/jobs", readOnly))
	require.NoError(t, check(http.MethodGet, "/api/v1/me", Principal{}))
	for _, tt := range []struct {
		method, path string
		p            Principal
		message      string
	}{
		{http.MethodPost, "/api/v1/jobs", readOnly, "this key lacks the jobs:write scope"},
		{http.MethodGet, "/api/v1/audit", Principal{Scopes: roleScopes(store.RoleUser)}, "this needs an administrator (a key with the admin scope)"},
		{http.MethodGet, "/api/v1/something-new", readOnly, "this key lacks the jobs:read, jobs:write, runs:read scope"},
	} {
		var ae *apierr.Error
		require.True(t, errors.As(check(tt.method, tt.path, tt.p), &ae))
		require.Equal(t, http.StatusForbidden, ae.Status)
		require.Equal(t, apierr.Detail{Code: apierr.CodeForbidden, Message: tt.message}, ae.Detail)
	}
}

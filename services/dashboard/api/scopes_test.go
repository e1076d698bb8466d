package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// TestScopedKeys: a key does what its scopes allow and gets 403 naming the
// scope for the rest; scopes never exceed the role or the creating key;
// an expired key is refused like a revoked one; a user's live keys are
// capped.
func TestScopedKeys(t *testing.T) {
	t.Parallel()
	q := api.DefaultQuotas
	q.MaxKeys = 4
	b := setup(t, func(d *api.Deps) { d.Quotas = &q })
	u := b.user(t, "scoped", "user", nil) // one key, every scope of a user
	keys := "/api/v1/users/" + u.id.String() + "/keys"
	newKey := func(as person, body map[string]any) (*api.Key, *apierr.Detail, int) {
		var payload any
		if body != nil {
			payload = body
		}
		rec := b.as(t, as, http.MethodPost, keys, payload)
		if rec.Code != http.StatusCreated {
			e := decode[struct{ Error apierr.Detail }](t, rec).Error
			return nil, &e, rec.Code
		}
		k := decode[api.Key](t, rec)
		return &k, nil, rec.Code
	}
	job := map[string]any{"name": "x", "type": "ping", "delay": "1h", "payload": map[string]any{"url": "https://example.com/"}}
	created := decode[api.Job](t, b.as(t, u, http.MethodPost, "/api/v1/jobs", job))

	ro, _, code := newKey(u, map[string]any{"name": "dashboard screen", "scopes": []string{"jobs:read", "runs:read"}})
	require.Equal(t, http.StatusCreated, code)
	require.Equal(t, []string{"jobs:read", "runs:read"}, ro.Scopes)
	require.False(t, ro.AllScopes)
	reader := person{id: u.id, key: ro.Key}
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/api/v1/jobs"}, {http.MethodGet, "/api/v1/jobs/" + created.ID.String()},
		{http.MethodGet, "/api/v1/runs"}, {http.MethodGet, "/api/v1/jobs/" + created.ID.String() + "/runs"},
		{http.MethodGet, "/api/v1/me"}, {http.MethodGet, keys},
	} {
		require.Equal(t, http.StatusOK, b.as(t, reader, r.method, r.path, nil).Code, "%s %s", r.method, r.path)
	}
	for _, r := range []struct {
		method, path string
		body         any
	}{
		{http.MethodPost, "/api/v1/jobs", job},
		{http.MethodPatch, "/api/v1/jobs/" + created.ID.String(), map[string]any{"name": "y"}},
		{http.MethodPost, "/api/v1/jobs/" + created.ID.String() + "/pause", nil},
		{http.MethodDelete, "/api/v1/jobs/" + created.ID.String(), nil},
		{http.MethodPost, "/api/v1/jobs:bulk", map[string]any{"action": "pause", "ids": []string{created.ID.String()}}},
		{http.MethodGet, "/api/v1/signing-secret", nil},
		{http.MethodPost, keys, nil},
	} {
		e := requireError(t, b.as(t, reader, r.method, r.path, r.body), http.StatusForbidden, apierr.CodeForbidden)
		require.Contains(t, e.Message, "jobs:write", "%s %s", r.method, r.path)
	}
	require.EqualValues(t, "scheduled", decode[api.Job](t, b.do(t, http.MethodGet, "/api/v1/jobs/"+created.ID.String(), nil)).Status,
		"nothing the read-only key tried changed the job")
	me := decode[api.User](t, b.as(t, reader, http.MethodGet, "/api/v1/me", nil))
	require.Equal(t, []string{"jobs:read", "runs:read"}, me.Scopes)

	wo, _, _ := newKey(u, map[string]any{"scopes": []string{"jobs:write"}})
	writer := person{id: u.id, key: wo.Key}
	e := requireError(t, b.as(t, writer, http.MethodGet, "/api/v1/jobs", nil), http.StatusForbidden, apierr.CodeForbidden)
	require.Contains(t, e.Message, "jobs:read")
	e = requireError(t, b.as(t, writer, http.MethodGet, "/api/v1/runs:stats", nil), http.StatusForbidden, apierr.CodeForbidden)
	require.Contains(t, e.Message, "runs:read")
	require.Equal(t, http.StatusCreated, b.as(t, writer, http.MethodPost, "/api/v1/jobs", job).Code)
	_, e2, code := newKey(writer, map[string]any{"scopes": []string{"jobs:read"}})
	require.Equal(t, http.StatusForbidden, code, "a key gives only scopes it has")
	require.Equal(t, "scopes", e2.Field)

	for _, tt := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"scopes": []string{"admin"}}, "scopes"},
		{map[string]any{"scopes": []string{"jobs:read", "jobs:delete"}}, "scopes[1]"},
		{map[string]any{"scopes": []string{}}, "scopes"},
		{map[string]any{"expires_at": b.now.Add(-time.Minute).Format(time.RFC3339)}, "expires_at"},
		{map[string]any{"expires_at": "tomorrow"}, "expires_at"},
		{map[string]any{"expires_at": b.now.AddDate(11, 0, 0).Format(time.RFC3339)}, "expires_at"},
	} {
		_, e, code := newKey(u, tt.body)
		require.Equal(t, http.StatusBadRequest, code, "%v", tt.body)
		require.Equal(t, tt.field, e.Field, "%v", tt.body)
	}

	// A narrowed key cannot revoke a broader one.
	var full api.Key
	for _, k := range decode[api.KeyList](t, b.as(t, u, http.MethodGet, keys, nil)).Keys {
		if k.AllScopes {
			full = k
		}
	}
	e = requireError(t, b.as(t, writer, http.MethodDelete, "/api/v1/keys/"+full.ID.String(), nil), http.StatusForbidden, apierr.CodeForbidden)
	require.Contains(t, e.Message, "jobs:read")
	require.Equal(t, http.StatusOK, b.as(t, u, http.MethodGet, "/api/v1/me", nil).Code, "the broader key still works")

	// The fourth live key is the last; an expired one no longer counts.
	soon, _, code := newKey(u, map[string]any{"expires_at": b.now.Add(time.Hour).Format(time.RFC3339)})
	require.Equal(t, http.StatusCreated, code)
	require.Equal(t, http.StatusOK, b.as(t, person{id: u.id, key: soon.Key}, http.MethodGet, "/api/v1/me", nil).Code)
	_, e3, code := newKey(u, nil)
	require.Equal(t, http.StatusConflict, code)
	require.Contains(t, e3.Message, "revoke one")
	b.now = b.now.Add(time.Hour)
	requireError(t, b.as(t, person{id: u.id, key: soon.Key}, http.MethodGet, "/api/v1/me", nil), http.StatusUnauthorized, apierr.CodeUnauthorized)
	_, _, code = newKey(u, nil)
	require.Equal(t, http.StatusCreated, code, "the expired key left a place")

	// An administrator's key without the admin scope acts as a user.
	a := b.user(t, "operator", "admin", nil)
	rec := b.as(t, a, http.MethodPost, "/api/v1/users/"+a.id.String()+"/keys",
		map[string]any{"scopes": []string{"jobs:read", "jobs:write", "runs:read"}})
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	limited := person{id: a.id, key: decode[api.Key](t, rec).Key}
	requireError(t, b.as(t, limited, http.MethodGet, "/api/v1/users", nil), http.StatusForbidden, apierr.CodeForbidden)
	list := decode[api.JobList](t, b.as(t, limited, http.MethodGet, "/api/v1/jobs", nil))
	for _, j := range list.Jobs {
		require.NotEqual(t, created.ID, j.ID, "without the admin scope, only the administrator's own jobs")
	}
	require.Len(t, decode[api.JobList](t, b.as(t, a, http.MethodGet, "/api/v1/jobs", nil)).Jobs, 2, "with it, everyone's")
}

// TestKeyCannotOutliveItsMaker: a key made by an expiring key ends with it
// at the latest.
func TestKeyCannotOutliveItsMaker(t *testing.T) {
	t.Parallel()
	b := setup(t)
	u := b.user(t, "temp", "user", nil)
	keys := "/api/v1/users/" + u.id.String() + "/keys"
	ends := b.now.Add(time.Hour).Truncate(time.Second)
	rec := b.as(t, u, http.MethodPost, keys, map[string]any{"expires_at": ends.Format(time.RFC3339)})
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	temp := person{id: u.id, key: decode[api.Key](t, rec).Key}

	rec = b.as(t, temp, http.MethodPost, keys, map[string]any{"name": "child"})
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	require.True(t, ends.Equal(decode[api.Key](t, rec).ExpiresAt.Time), "without expires_at it ends with its maker")
	e := requireError(t, b.as(t, temp, http.MethodPost, keys, map[string]any{"expires_at": ends.Add(time.Minute).Format(time.RFC3339)}),
		http.StatusForbidden, apierr.CodeForbidden)
	require.Equal(t, "expires_at", e.Field)
	rec = b.as(t, temp, http.MethodPost, keys, map[string]any{"expires_at": ends.Add(-time.Minute).Format(time.RFC3339)})
	require.Equal(t, http.StatusCreated, rec.Code, "earlier is fine")
}

// TestReadOnlyKeyOnEveryRoute walks every operation openapi.json documents:
// a read-only key (jobs:read, runs:read) is refused with 403 on each one
// that changes something, before it reads or changes anything, and is not
// refused by scope on the reads. Administrators' routes answer 403 too (the
// key's user is no administrator).
func TestReadOnlyKeyOnEveryRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	u := b.user(t, "reader", "user", nil)
	rec := b.as(t, u, http.MethodPost, "/api/v1/users/"+u.id.String()+"/keys", map[string]any{"scopes": []string{"jobs:read", "runs:read"}})
	require.Equal(t, http.StatusCreated, rec.Code)
	reader := person{id: u.id, key: decode[api.Key](t, rec).Key}
	job := decode[api.Job](t, b.as(t, u, http.MethodPost, "/api/v1/jobs",
		map[string]any{"name": "x", "type": "ping", "delay": "1h", "payload": map[string]any{"url": "https://example.com/"}}))

	raw, err := api.OpenAPIDocument()
	require.NoError(t, err)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	writes, reads := 0, 0
	for path, ops := range doc.Paths {
		if !strings.HasPrefix(path, "/api/v1/") || path == "/api/v1/openapi.json" || path == "/api/v1/job-types" {
			continue
		}
		concrete := strings.NewReplacer("{id}", job.ID.String(), "{key}", "some-key").Replace(path)
		if strings.HasPrefix(path, "/api/v1/users/{id}") {
			concrete = strings.Replace(path, "{id}", u.id.String(), 1)
		}
		for method := range ops {
			method = strings.ToUpper(method)
			if !slices.Contains([]string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}, method) {
				continue // "parameters" and the like
			}
			rec := b.as(t, reader, method, concrete, map[string]any{})
			if method == http.MethodGet && path == "/api/v1/signing-secret" {
				// The secret signs as the user: a read-only key does not get it.
				require.Equal(t, http.StatusForbidden, rec.Code)
				continue
			}
			if method == http.MethodGet {
				reads++
				if rec.Code == http.StatusForbidden {
					require.NotContains(t, rec.Body.String(), "lacks the", "%s %s: a read refused by scope", method, path)
					require.Contains(t, rec.Body.String(), "needs an administrator", "%s %s", method, path)
				}
				continue
			}
			writes++
			if path == "/api/v1/schedules/preview" {
				require.NotEqual(t, http.StatusForbidden, rec.Code, "a preview reads")
				continue
			}
			require.Equal(t, http.StatusForbidden, rec.Code, "%s %s: %s", method, path, rec.Body.String())
		}
	}
	require.Greater(t, writes, 20)
	require.GreaterOrEqual(t, reads, 15)
	require.EqualValues(t, "scheduled", decode[api.Job](t, b.do(t, http.MethodGet, "/api/v1/jobs/"+job.ID.String(), nil)).Status,
		"the job is as it was")
}

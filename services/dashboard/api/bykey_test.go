package api_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

func cronSpec(name, cron string) map[string]any {
	return map[string]any{"name": name, "type": "ping", "schedule": map[string]any{"cron": cron},
		"payload": map[string]any{"url": "https://example.com/health"}}
}

// TestJobByKey: PUT by key creates the job (201), then replaces its
// definition in place (200, same id, defaults for what the body leaves
// out); GET and DELETE find it by key; POST with a key a live job holds is
// 409; once that job is cancelled the key goes to a new job.
func TestJobByKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.user(t, "ann", "user", nil)
	put := func(p person, key string, body any) *httptest.ResponseRecorder {
		t.Helper()
		return b.as(t, p, http.MethodPut, "/api/v1/jobs/by-key/"+key, body)
	}

	first := put(ann, "nightly-report", func() map[string]any {
		s := cronSpec("report", "0 9 * * *")
		s["priority"], s["labels"] = 5, map[string]string{"team": "billing"}
		return s
	}())
	require.Equal(t, http.StatusCreated, first.Code, "body: %s", first.Body.String())
	created := decode[api.Job](t, first)
	require.Equal(t, "nightly-report", created.Key)
	require.Equal(t, 5, created.Priority)

	second := put(ann, "nightly-report", cronSpec("report v2", "30 9 * * *"))
	require.Equal(t, http.StatusOK, second.Code, "body: %s", second.Body.String())
	replaced := decode[api.Job](t, second)
	require.Equal(t, created.ID, replaced.ID, "replaced in place")
	require.Equal(t, "report v2", replaced.Name)
	require.Contains(t, string(replaced.Schedule), "30 9 * * *")
	require.Equal(t, 0, replaced.Priority, "a field the body leaves out takes its default")
	require.Empty(t, replaced.Labels)
	require.Equal(t, "nightly-report", replaced.Key)

	got := decode[api.Job](t, b.as(t, ann, http.MethodGet, "/api/v1/jobs/by-key/nightly-report", nil))
	require.Equal(t, created.ID, got.ID)
	audit := decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?action=job.update&job="+created.ID.String(), nil))
	require.Len(t, audit.Entries, 1)

	// The key is the caller's: another user has their own.
	bob := b.user(t, "bob", "user", nil)
	require.Equal(t, http.StatusCreated, put(bob, "nightly-report", cronSpec("bob's", "0 9 * * *")).Code)
	requireError(t, b.as(t, bob, http.MethodGet, "/api/v1/jobs/by-key/other", nil), http.StatusNotFound, apierr.CodeNotFound)

	// POST with a key a live job holds is 409; PUT with another type too.
	withKey := cronSpec("dup", "0 9 * * *")
	withKey["key"] = "nightly-report"
	e := requireError(t, b.as(t, ann, http.MethodPost, "/api/v1/jobs", withKey), http.StatusConflict, apierr.CodeConflict)
	require.Equal(t, "key", e.Field)
	email := cronSpec("mail", "0 9 * * *")
	email["type"], email["payload"] = "webhook", map[string]any{"url": "https://example.com/hook"}
	e = requireError(t, put(ann, "nightly-report", email), http.StatusConflict, apierr.CodeConflict)
	require.Equal(t, "type", e.Field)
	mismatch := cronSpec("x", "0 9 * * *")
	mismatch["key"] = "another"
	e = requireError(t, put(ann, "nightly-report", mismatch), http.StatusBadRequest, apierr.CodeInvalid)
	require.Equal(t, "key", e.Field)
	requireError(t, put(ann, "has%20space", cronSpec("x", "0 9 * * *")), http.StatusBadRequest, apierr.CodeInvalid)

	// DELETE by key cancels; the key then goes to a new job.
	require.Equal(t, http.StatusNoContent, b.as(t, ann, http.MethodDelete, "/api/v1/jobs/by-key/nightly-report", nil).Code)
	again := put(ann, "nightly-report", cronSpec("report v3", "0 10 * * *"))
	require.Equal(t, http.StatusCreated, again.Code, "body: %s", again.Body.String())
	require.NotEqual(t, created.ID, decode[api.Job](t, again).ID)

	// A one-off job by key; POST with a fresh key is fine, twice in a batch is not.
	oneOff := spec("once", b.now.Add(time.Hour))
	oneOff["key"] = "once"
	require.Equal(t, http.StatusCreated, b.as(t, ann, http.MethodPost, "/api/v1/jobs", oneOff).Code)
	a, c := spec("a", b.now.Add(time.Hour)), spec("c", b.now.Add(time.Hour))
	a["key"], c["key"] = "twin", "twin"
	requireError(t, b.as(t, ann, http.MethodPost, "/api/v1/jobs:batch", map[string]any{"jobs": []any{a, c}}), http.StatusConflict, apierr.CodeConflict)
}

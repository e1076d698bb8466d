package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// TestPurgeJob: DELETE ?purge=true removes a finished job now, with its
// runs and labels (404 afterwards), refuses a job that can still run (409)
// and another owner's (404), and is audited.
func TestPurgeJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.user(t, "ann", "user", nil)
	body := labelled("failed", b.now.Add(time.Hour), map[string]string{"customer": "1234"})
	rec := b.as(t, ann, http.MethodPost, "/api/v1/jobs", body)
	require.Equal(t, http.StatusCreated, rec.Code, "body: %s", rec.Body.String())
	failed := decode[api.Job](t, rec)
	b.failPermanently(t, failed, 4)
	scheduled := decode[api.Job](t, b.as(t, ann, http.MethodPost, "/api/v1/jobs", spec("scheduled", b.now.Add(time.Hour))))

	e := requireError(t, b.as(t, ann, http.MethodDelete, "/api/v1/jobs/"+scheduled.ID.String()+"?purge=true", nil), http.StatusConflict, apierr.CodeConflict)
	require.Contains(t, e.Message, "cancel it first")
	requireError(t, b.as(t, ann, http.MethodDelete, "/api/v1/jobs/"+failed.ID.String()+"?purge=yes", nil), http.StatusBadRequest, apierr.CodeInvalid)
	bob := b.user(t, "bob", "user", nil)
	requireError(t, b.as(t, bob, http.MethodDelete, "/api/v1/jobs/"+failed.ID.String()+"?purge=true", nil), http.StatusNotFound, apierr.CodeNotFound)

	require.Equal(t, http.StatusNoContent, b.as(t, ann, http.MethodDelete, "/api/v1/jobs/"+failed.ID.String()+"?purge=true", nil).Code)
	requireError(t, b.as(t, ann, http.MethodGet, "/api/v1/jobs/"+failed.ID.String(), nil), http.StatusNotFound, apierr.CodeNotFound)
	requireError(t, b.as(t, ann, http.MethodGet, "/api/v1/jobs/"+failed.ID.String()+"/runs", nil), http.StatusNotFound, apierr.CodeNotFound)
	var runs, labels int
	require.NoError(t, b.store.Pool().QueryRow(t.Context(), `SELECT
	    (SELECT count(*) FROM job_runs WHERE job_id = $1), (SELECT count(*) FROM job_labels WHERE job_id = $1)`, failed.ID).Scan(&runs, &labels))
	require.Zero(t, runs)
	require.Zero(t, labels)
	requireError(t, b.as(t, ann, http.MethodDelete, "/api/v1/jobs/"+failed.ID.String()+"?purge=true", nil), http.StatusNotFound, apierr.CodeNotFound)

	// The audit keeps that it happened, not the job.
	var list api.AuditList
	list = decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?action="+store.ActionJobPurge, nil))
	require.Len(t, list.Entries, 1)
	require.Equal(t, ann.id, list.Entries[0].Actor)
}

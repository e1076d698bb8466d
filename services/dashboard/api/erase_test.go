package api_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// TestEraseUser: an administrator's erasure deletes the user's jobs, runs,
// labels and keys (their key answers 401 at once), leaves the user disabled
// and renamed, reduces the audit entries about them and their jobs to
// {"erased": true}, records itself, and touches nobody else's data.
func TestEraseUser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann, bob := b.user(t, "ann", "user", nil), b.user(t, "bob", "user", nil)
	mine := decode[api.Job](t, b.as(t, ann, http.MethodPost, "/api/v1/jobs",
		labelled("invoice for Ann Smith", b.now.Add(time.Hour), map[string]string{"customer": "ann"})))
	b.failPermanently(t, mine, 2)
	other := decode[api.Job](t, b.as(t, ann, http.MethodPost, "/api/v1/jobs", spec("second", b.now.Add(time.Hour))))
	bobs := decode[api.Job](t, b.as(t, bob, http.MethodPost, "/api/v1/jobs", labelled("bob's", b.now.Add(time.Hour), map[string]string{"customer": "bob"})))

	requireError(t, b.as(t, bob, http.MethodPost, "/api/v1/users/"+ann.id.String()+"/erase", nil), http.StatusForbidden, apierr.CodeForbidden)
	requireError(t, b.do(t, http.MethodPost, "/api/v1/users/"+store.BootstrapAdmin.String()+"/erase", nil), http.StatusConflict, apierr.CodeConflict)
	requireError(t, b.do(t, http.MethodPost, "/api/v1/users/"+job.NewID().String()+"/erase", nil), http.StatusNotFound, apierr.CodeNotFound)

	rec := b.do(t, http.MethodPost, "/api/v1/users/"+ann.id.String()+"/erase", nil)
	require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
	got := decode[store.Erased](t, rec)
	require.Equal(t, 2, got.Jobs)
	require.Equal(t, 1, got.Runs)
	require.Equal(t, 1, got.Keys)
	require.GreaterOrEqual(t, got.Audit, 3, "the user's creation, its key, its two jobs")

	requireError(t, b.as(t, ann, http.MethodGet, "/api/v1/jobs", nil), http.StatusUnauthorized, apierr.CodeUnauthorized)
	for _, j := range []api.Job{mine, other} {
		requireError(t, b.do(t, http.MethodGet, "/api/v1/jobs/"+j.ID.String(), nil), http.StatusNotFound, apierr.CodeNotFound)
	}
	u := decode[api.User](t, b.do(t, http.MethodGet, "/api/v1/users/"+ann.id.String(), nil))
	require.Equal(t, "erased user", u.Name)
	require.False(t, u.DisabledAt.IsZero(), "disabled")

	var rows int
	require.NoError(t, b.store.Pool().QueryRow(t.Context(), `SELECT
	    (SELECT count(*) FROM jobs WHERE owner_id = $1) + (SELECT count(*) FROM job_runs WHERE owner_id = $1)
	  + (SELECT count(*) FROM job_labels WHERE owner_id = $1) + (SELECT count(*) FROM api_keys WHERE user_id = $1)`, ann.id).Scan(&rows))
	require.Zero(t, rows)
	// No audit entry about Ann or her jobs still holds her data; the
	// erasure is recorded with its counts.
	entries := decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?job="+mine.ID.String(), nil)).Entries
	require.NotEmpty(t, entries)
	for _, e := range entries {
		require.JSONEq(t, `{"erased": true}`, string(e.Change))
	}
	erasures := decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?action="+store.ActionUserErase, nil)).Entries
	require.Len(t, erasures, 1)
	var counts map[string]int
	require.NoError(t, json.Unmarshal(erasures[0].Change, &counts))
	require.Equal(t, 2, counts["jobs"])

	// Bob's data is untouched.
	kept := decode[api.Job](t, b.as(t, bob, http.MethodGet, "/api/v1/jobs/"+bobs.ID.String(), nil))
	require.Equal(t, map[string]string{"customer": "bob"}, kept.Labels)
}

package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

const batchPath = "/api/v1/jobs:batch"

// specs returns n valid ping jobs due at runAt.
func specs(n int, runAt time.Time) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = spec(fmt.Sprintf("bulk %d", i), runAt)
	}
	return out
}

func TestCreateBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("CreatesEveryJobInOrder", func(t *testing.T) {
		t.Parallel()
		jobs := specs(250, b.now.Add(time.Hour))
		rec := b.do(t, http.MethodPost, batchPath, map[string]any{"jobs": jobs})
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		got := decode[api.BatchCreated](t, rec)
		require.Equal(t, 250, got.Created)
		require.Len(t, got.IDs, 250)
		for _, i := range []int{0, 137, 249} {
			j := decode[api.Job](t, b.do(t, http.MethodGet, "/api/v1/jobs/"+got.IDs[i].String(), nil))
			require.Equal(t, fmt.Sprintf("bulk %d", i), j.Name)
			require.Equal(t, store.BootstrapAdmin, j.Owner)
		}
		// One audit entry for the request, with the count and every id.
		audit := decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?action=job.create_batch", nil))
		var batch *api.AuditEntry
		for i, e := range audit.Entries {
			var change struct {
				Count int         `json:"count"`
				IDs   []uuid.UUID `json:"ids"`
			}
			require.NoError(t, json.Unmarshal(e.Change, &change))
			if change.Count == 250 {
				require.Equal(t, got.IDs, change.IDs)
				batch = &audit.Entries[i]
			}
		}
		require.NotNil(t, batch, "the request is audited once")
		require.Equal(t, "batch", batch.TargetType)
		none := decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?action=job.create&job="+got.IDs[137].String(), nil))
		require.Empty(t, none.Entries, "no entry per job")
	})

	t.Run("PutsJobsDueSoonInTheDueSet", func(t *testing.T) {
		t.Parallel()
		// A bundle of its own: the others' batches share b's due set.
		b := setup(t)
		soon := specs(3, b.now.Add(30*time.Second))
		later := specs(2, b.now.Add(time.Hour))
		rec := b.do(t, http.MethodPost, batchPath, map[string]any{"jobs": append(soon, later...)})
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		got := decode[api.BatchCreated](t, rec)
		for i, id := range got.IDs {
			occ := job.Occurrence{JobID: id, ScheduledFor: b.now.Add(30 * time.Second), Attempt: 1}.Route(store.BootstrapAdmin, []byte(`{"url":"https://example.com/health"}`))
			require.Equal(t, i < 3, b.inDue(t, occ), "job %d", i)
		}
	})

	t.Run("InvalidJobsCreateNothingAndEachIsNamed", func(t *testing.T) {
		t.Parallel()
		jobs := specs(5, b.now.Add(time.Hour))
		jobs[1]["name"] = "not created"
		jobs[2]["priority"] = "high"
		jobs[4]["payload"] = map[string]any{"url": "http://127.0.0.1/hook"}
		jobs[3]["colour"] = "blue"
		rec := b.do(t, http.MethodPost, batchPath, map[string]any{"jobs": jobs})
		require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
		body := decode[api.BatchErrorBody](t, rec)
		require.Equal(t, apierr.CodeInvalid, body.Error.Code)
		require.Equal(t, "jobs", body.Error.Field)
		var got []string
		for _, e := range body.Errors {
			got = append(got, fmt.Sprintf("%d:%s", e.Index, e.Field))
		}
		require.Equal(t, []string{"2:priority", "3:colour", "4:payload.url"}, got)
		list := decode[api.JobList](t, b.do(t, http.MethodGet, "/api/v1/jobs?q=not+created", nil))
		require.Empty(t, list.Jobs, "nothing was created")
	})

	t.Run("BoundsTheBatch", func(t *testing.T) {
		t.Parallel()
		d := requireError(t, b.do(t, http.MethodPost, batchPath, map[string]any{"jobs": []any{}}), http.StatusBadRequest, apierr.CodeInvalid)
		require.Equal(t, "jobs", d.Field)
		many := make([]map[string]any, api.MaxBatchJobs+1)
		one := map[string]any{"name": "x"}
		for i := range many {
			many[i] = one
		}
		d = requireError(t, b.do(t, http.MethodPost, batchPath, map[string]any{"jobs": many}), http.StatusBadRequest, apierr.CodeInvalid)
		require.Equal(t, "jobs", d.Field)
		requireError(t, b.do(t, http.MethodPost, batchPath, `{"jobs": [`+strings.Repeat(`{"name":"x"},`, 10)), http.StatusBadRequest, apierr.CodeInvalid)
	})

	t.Run("OversizedBodyIs413", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(d *api.Deps) { d.MaxBatchBodyBytes = 2 << 20 })
		jobs := specs(1, b.now.Add(time.Hour))
		jobs[0]["name"] = strings.Repeat("x", 3<<20)
		requireError(t, b.do(t, http.MethodPost, batchPath, map[string]any{"jobs": jobs}), http.StatusRequestEntityTooLarge, apierr.CodeTooLarge)
		// The single-job route keeps its own, smaller cap.
		body := spec("big", b.now.Add(time.Hour))
		body["name"] = strings.Repeat("x", 1<<20)
		requireError(t, b.do(t, http.MethodPost, "/api/v1/jobs", body), http.StatusRequestEntityTooLarge, apierr.CodeTooLarge)
	})

	t.Run("ADefaultUserMayCreateAFullBatch", func(t *testing.T) {
		t.Parallel()
		// The batch cap and a default user's burst are one number: the
		// largest batch allowed passes the default limits.
		p := b.user(t, "default user", "user", nil)
		me := decode[api.User](t, b.as(t, p, http.MethodGet, "/api/v1/me", nil))
		require.Equal(t, api.MaxBatchJobs, me.EffectiveLimits.JobBurst)
		rec := b.as(t, p, http.MethodPost, batchPath, map[string]any{"jobs": specs(api.MaxBatchJobs, b.now.Add(time.Hour))})
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		require.Equal(t, api.MaxBatchJobs, decode[api.BatchCreated](t, rec).Created)
	})

	t.Run("HoldsUsersToTheirLimits", func(t *testing.T) {
		t.Parallel()
		p := b.user(t, "bulk user", "user", map[string]any{"max_active_jobs": 10, "jobs_per_minute": 60, "job_burst": 20})
		rec := b.as(t, p, http.MethodPost, batchPath, map[string]any{"jobs": specs(21, b.now.Add(time.Hour))})
		requireError(t, rec, http.StatusTooManyRequests, apierr.CodeRateLimited)
		rec = b.as(t, p, http.MethodPost, batchPath, map[string]any{"jobs": specs(11, b.now.Add(time.Hour))})
		requireError(t, rec, http.StatusTooManyRequests, apierr.CodeQuotaExceeded)
		rec = b.as(t, p, http.MethodPost, batchPath, map[string]any{"jobs": specs(8, b.now.Add(time.Hour))})
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		other := b.user(t, "someone", "user", nil)
		d := requireError(t, b.as(t, p, http.MethodPost, batchPath, map[string]any{"owner": other.id.String(), "jobs": specs(1, b.now.Add(time.Hour))}),
			http.StatusForbidden, apierr.CodeForbidden)
		require.Equal(t, "owner", d.Field)
	})
}

package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// failPermanently records what a worker would after a one-off job's last
// attempt failed: a permanently_failed run and the job ended with it.
func (b *bundle) failPermanently(t *testing.T, j api.Job, attempts int) {
	t.Helper()
	_, err := b.store.Pool().Exec(t.Context(), `INSERT INTO job_runs
    (job_id, scheduled_for, attempt, status, id, owner_id, due_at, started_at, lease_until, finished_at, error)
VALUES ($1, $2, $3, 'permanently_failed', gen_random_uuid(), $4, $2, $2, $2, $2, 'status 500')`,
		j.ID, j.RunAt.Time, attempts, j.Owner)
	require.NoError(t, err)
	_, err = b.store.Pool().Exec(t.Context(), `UPDATE jobs SET status = 'permanently_failed', due_at = NULL, due_hour = -1 WHERE id = $1`, j.ID)
	require.NoError(t, err)
}

func TestRetryJob(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("QueuesTheNextAttemptNowAndSchedulesTheJobAgain", func(t *testing.T) {
		t.Parallel()
		j := b.create(t, "retry me", b.now.Add(time.Hour))
		b.failPermanently(t, j, 4)

		rec := b.do(t, http.MethodPost, path(j, "/retry"), nil)
		require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
		got := decode[api.Retried](t, rec)
		require.Equal(t, 5, got.Attempt)
		require.True(t, got.ScheduledFor.Equal(j.RunAt.Time))
		occ := job.Occurrence{JobID: j.ID, ScheduledFor: j.RunAt.Time, Attempt: 5, Priority: j.Priority, Generation: b.stored(t, j.ID).Generation}.Route(j.Owner, j.Payload)
		require.Equal(t, occ.Key(), got.IdempotencyKey, "the occurrence keeps its key")
		due := b.due(t)
		require.Contains(t, due, occ)
		require.True(t, due[occ].Equal(b.now), "due now")

		after := decode[api.Job](t, b.do(t, http.MethodGet, path(j, ""), nil))
		require.Equal(t, job.StatusScheduled, after.Status)
		require.NotNil(t, after.LastRun)
		require.Equal(t, job.RunPermanentlyFailed, after.LastRun.Status)

		d := requireError(t, b.do(t, http.MethodPost, path(j, "/retry"), nil), http.StatusConflict, apierr.CodeConflict)
		require.Contains(t, d.Message, "one-off job that failed permanently")
	})

	t.Run("PicksTheOccurrenceGiven", func(t *testing.T) {
		t.Parallel()
		j := b.create(t, "pick", b.now.Add(time.Hour))
		b.failPermanently(t, j, 2)
		rec := b.do(t, http.MethodPost, path(j, "/retry"), map[string]any{"scheduled_for": b.now.Add(2 * time.Hour).Format(time.RFC3339Nano)})
		d := requireError(t, rec, http.StatusConflict, apierr.CodeConflict)
		require.Contains(t, d.Message, "no attempt")
		rec = b.do(t, http.MethodPost, path(j, "/retry"), map[string]any{"scheduled_for": j.RunAt.Format(time.RFC3339Nano)})
		require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
		require.Equal(t, 3, decode[api.Retried](t, rec).Attempt)
	})

	t.Run("RefusesWhatDidNotFailAndOthersJobs", func(t *testing.T) {
		t.Parallel()
		j := b.create(t, "fine", b.now.Add(time.Hour))
		requireError(t, b.do(t, http.MethodPost, path(j, "/retry"), nil), http.StatusConflict, apierr.CodeConflict)

		failed := b.create(t, "failed", b.now.Add(time.Hour))
		b.failPermanently(t, failed, 4)
		other := b.user(t, "other", "user", nil)
		requireError(t, b.as(t, other, http.MethodPost, path(failed, "/retry"), nil), http.StatusNotFound, apierr.CodeNotFound)
		d := requireError(t, b.do(t, http.MethodPost, path(failed, "/retry"), map[string]any{"when": "now"}), http.StatusBadRequest, apierr.CodeInvalid)
		require.Equal(t, "when", d.Field)
	})

	t.Run("IsAudited", func(t *testing.T) {
		t.Parallel()
		j := b.create(t, "audited retry", b.now.Add(time.Hour))
		b.failPermanently(t, j, 4)
		require.Equal(t, http.StatusAccepted, b.do(t, http.MethodPost, path(j, "/retry"), nil).Code)
		list := decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?action=job.retry&job="+j.ID.String(), nil))
		require.Len(t, list.Entries, 1)
	})
}

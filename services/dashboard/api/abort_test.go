package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

func TestAbortJob(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("StopsRunningAttemptsAndCancelsAOneOffJob", func(t *testing.T) {
		t.Parallel()
		j := b.create(t, "hanging", b.now.Add(time.Second))
		occ := b.occurrence(j)
		b.running(t, occ, j.RunAt.Time, j.RunAt.Time)
		rec := b.do(t, http.MethodPost, "/api/v1/jobs/"+j.ID.String()+"/abort", nil)
		require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
		got := decode[api.Aborted](t, rec)
		require.Equal(t, j.ID, got.JobID)
		require.Len(t, got.Attempts, 1)
		require.Equal(t, 1, got.Attempts[0].Attempt)

		// Told to the workers through Redis, recorded in the audit log, and
		// the one-off job will not start again.
		reqs, err := queue.New(b.rdb, b.keys.Prefix, 1).Aborts(t.Context(), b.now.Add(-time.Minute))
		require.NoError(t, err)
		require.Contains(t, reqs, queue.AbortRequest{Job: j.ID, Actor: store.BootstrapAdmin, At: b.now})
		require.Equal(t, job.StatusCancelled, b.stored(t, j.ID).Status)
		audit := decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?action=job.abort&job="+j.ID.String(), nil))
		require.Len(t, audit.Entries, 1)
		// The job is fenced in Redis: its retry, planned under the
		// generation the abort left behind, does not start.
		require.Equal(t, queue.StartFenced, b.start(t, lease(occ.Next(), b.now, b.now.Add(time.Second))))
	})

	t.Run("NothingRunningIs409", func(t *testing.T) {
		t.Parallel()
		j := b.create(t, "idle", b.now.Add(time.Hour))
		rec := b.do(t, http.MethodPost, "/api/v1/jobs/"+j.ID.String()+"/abort", nil)
		requireError(t, rec, http.StatusConflict, apierr.CodeConflict)
		require.Equal(t, job.StatusScheduled, b.stored(t, j.ID).Status)
	})

	t.Run("AnotherUsersJobIs404", func(t *testing.T) {
		t.Parallel()
		j := b.create(t, "admin's", b.now.Add(time.Second))
		b.running(t, b.occurrence(j), j.RunAt.Time, j.RunAt.Time)
		u := b.user(t, "nosy", "user", nil)
		requireError(t, b.as(t, u, http.MethodPost, "/api/v1/jobs/"+j.ID.String()+"/abort", nil), http.StatusNotFound, apierr.CodeNotFound)
	})

	t.Run("DisablingAUserAbortsTheirAttempts", func(t *testing.T) {
		t.Parallel()
		u := b.user(t, "leaving", "user", nil)
		rec := b.do(t, http.MethodPost, "/api/v1/users/"+u.id.String()+"/disable", nil)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		reqs, err := queue.New(b.rdb, b.keys.Prefix, 1).Aborts(t.Context(), b.now.Add(-time.Minute))
		require.NoError(t, err)
		require.Contains(t, reqs, queue.AbortRequest{Owner: u.id, Actor: store.BootstrapAdmin, At: b.now})
	})
}

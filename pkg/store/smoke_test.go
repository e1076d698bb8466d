package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/testenv"
)

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	st := testenv.Store(t)
	now := time.Now().UTC()
	owner := [16]byte{15: 1}
	var jobs []*job.Job
	for i := 0; i < 3; i++ {
		j := &job.Job{ID: job.NewID(), Owner: owner, Name: "x", Type: job.TypePing, Status: job.StatusScheduled, MaxRetries: 3, Timeout: time.Second,
			RunAt: now.Add(time.Duration(i) * time.Minute).Truncate(time.Millisecond), Payload: json.RawMessage(`{"url":"http://a"}`), CreatedAt: now, UpdatedAt: now}
		j.DueAt = j.RunAt
		jobs = append(jobs, j)
	}
	require.NoError(t, st.CreateJobs(ctx, jobs))
	require.NoError(t, st.CreateJobs(ctx, jobs[:0]))
	var got []job.Occurrence
	n, err := st.ClaimDue(ctx, now.Add(-time.Minute), now.Add(90*time.Second), 100, now, func(_ context.Context, o []job.Occurrence) error { got = o; return nil })
	require.NoError(t, err)
	require.Equal(t, 2, n)
	started, err := st.StartRuns(ctx, []store.Start{{Occurrence: got[0], DueAt: got[0].ScheduledFor}}, now, time.Second)
	require.NoError(t, err)
	require.Len(t, started, 1)
	require.NoError(t, st.FinishRuns(ctx, []store.Result{{Occurrence: got[0], Status: job.RunCompleted, FinishedAt: now, Output: "200"}}, now))
	j, err := st.GetJob(ctx, store.AnyOwner, got[0].JobID)
	require.NoError(t, err)
	require.Equal(t, job.StatusCompleted, j.Status)
	runs, err := st.ListRuns(ctx, store.RunFilter{JobID: j.ID, Limit: 10})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	_, err = st.CancelJob(ctx, store.AnyOwner, j.ID, now)
	require.ErrorIs(t, err, job.ErrConflict)
	_, err = st.CancelJob(ctx, store.AnyOwner, jobs[2].ID, now)
	require.NoError(t, err)
	states, err := st.RunStates(ctx, got)
	require.NoError(t, err)
	require.Len(t, states, 1)
	lost, err := st.UnstartedClaims(ctx, now.Add(time.Hour), 10)
	require.NoError(t, err)
	require.Len(t, lost, 1)
	_, err = st.ExpiredLeases(ctx, now, 10)
	require.NoError(t, err)
}

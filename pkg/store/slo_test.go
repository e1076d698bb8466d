package store_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
)

func TestSLOJobs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	start := b.now.Add(-time.Minute).Truncate(time.Second)
	j := newJob(ownerA, start, recurring(t, start), func(j *job.Job) {
		j.SLO = job.SLO{LateAfter: 500 * time.Millisecond, SilentAfter: 10 * time.Second}
	})
	plain := newJob(ownerA, start, recurring(t, start))
	b.create(t, j, plain)
	occ := j.Occurrence(start)
	ok := b.outcome(t, occ, job.RunCompleted)
	ok.StartedAt, ok.FinishedAt = start.Add(700*time.Millisecond), start.Add(800*time.Millisecond)
	b.finish(t, ok)

	got, err := b.st.SLOJobs(b.ctx, uuid.Nil, 10, b.now)
	require.NoError(t, err)
	require.Len(t, got, 1, "only the jobs with an SLO")
	s := got[0]
	require.Equal(t, j.ID, s.ID)
	require.Equal(t, job.SLO{LateAfter: 500 * time.Millisecond, SilentAfter: 10 * time.Second}, s.SLO)
	require.True(t, s.LastOK.Equal(ok.FinishedAt), "last completion %v", s.LastOK)
	require.True(t, s.NewestRun.Equal(start))
	require.True(t, s.NewestStarted.Equal(start))
	require.Equal(t, 700*time.Millisecond, s.NewestLate)
	require.Equal(t, 700*time.Millisecond, s.WorstLate)
	require.True(t, s.WatchingSince.IsZero(), "never checked")

	require.NoError(t, b.st.MarkSLOs(b.ctx, []store.SLOSeen{{ID: j.ID, Owner: ownerA, SeenTo: start}}, b.now))
	got, err = b.st.SLOJobs(b.ctx, uuid.Nil, 10, b.now)
	require.NoError(t, err)
	require.True(t, got[0].SeenTo.Equal(start))
	require.True(t, got[0].WatchingSince.Equal(b.now))
	require.True(t, got[0].NewestRun.IsZero(), "a run judged is not read again")

	moved, err := b.st.ChangeSLO(b.ctx, store.SLOChange{ID: j.ID, Owner: ownerA, SilentSince: b.now,
		Alerts: []store.SLOAlert{{Event: job.NotifySLOBreach, At: b.now, Kind: 1, Body: []byte(`{}`)}}}, b.now)
	require.NoError(t, err)
	require.True(t, moved)
	// A second change from the same state finds it moved, and writes nothing.
	moved, err = b.st.ChangeSLO(b.ctx, store.SLOChange{ID: j.ID, Owner: ownerA, SilentSince: b.now,
		Alerts: []store.SLOAlert{{Event: job.NotifySLOBreach, At: b.now, Kind: 1, Body: []byte(`{}`)}}}, b.now)
	require.NoError(t, err)
	require.False(t, moved)
	cbs, err := b.st.ClaimCallbacks(b.ctx, b.now, b.now.Add(time.Minute), 10, 10, uuid.Nil, nil)
	require.NoError(t, err)
	require.Len(t, cbs, 1, "one alert per breach")
	require.Equal(t, job.NotifySLOBreach, cbs[0].Event)
	require.Equal(t, 1, cbs[0].Occurrence.Attempt, "the kind names it")

	seen := []*job.Job{j}
	require.NoError(t, b.st.ShowSLOStates(b.ctx, seen...))
	require.True(t, seen[0].SLOState.Breached())
	at, err := b.st.ListJobs(b.ctx, store.JobFilter{Owner: ownerA, Limit: 10, AtRisk: true})
	require.NoError(t, err)
	require.Len(t, at, 1)
	require.Equal(t, j.ID, at[0].ID)

	// Its SLO removed, the job is no longer at risk, and the sweep's end
	// drops its breach.
	_, err = b.st.Pool().Exec(b.ctx, `UPDATE jobs SET slo_late_ms = NULL, slo_silent_ms = NULL WHERE id = $1`, j.ID)
	require.NoError(t, err)
	at, err = b.st.ListJobs(b.ctx, store.JobFilter{Owner: ownerA, Limit: 10, AtRisk: true})
	require.NoError(t, err)
	require.Empty(t, at)
	n, err := b.st.ClearOrphanSLOs(b.ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
}

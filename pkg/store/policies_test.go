package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
)

// gates maps each started attempt's occurrence time to its gate.
func gates(started []store.Started) map[time.Time]string {
	out := map[time.Time]string{}
	for _, st := range started {
		out[st.Run.ScheduledFor] = st.Gate
	}
	return out
}

// TestOverlapSkip: while one occurrence of a skip job runs, the next ones
// start only to be recorded skipped; once it ends, the next one runs.
// Another job, without a policy, is never held back.
func TestOverlapSkip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	start := b.now.Add(-time.Hour).Truncate(time.Minute)
	j := newJob(ownerA, start, recurring(t, start), func(j *job.Job) { j.Overlap = job.OverlapSkip })
	free := newJob(ownerA, start, recurring(t, start))
	b.create(t, j, free)
	occ := func(j *job.Job, k int) job.Occurrence {
		return job.Occurrence{JobID: j.ID, ScheduledFor: start.Add(time.Duration(k) * time.Minute), Attempt: 1}
	}

	first := b.start(t, occ(j, 0), occ(free, 0))
	require.Equal(t, store.GateRun, gates(first)[start])
	require.Len(t, first, 2)
	require.Equal(t, job.OverlapSkip, first[0].Overlap)

	// The same batch may bring two occurrences: the earliest holds the job.
	got := gates(b.start(t, occ(j, 1), occ(j, 2)))
	require.Equal(t, store.GateSkip, got[start.Add(time.Minute)])
	require.Equal(t, store.GateSkip, got[start.Add(2*time.Minute)])
	for _, st := range b.start(t, occ(free, 1), occ(free, 2)) {
		require.Equal(t, store.GateRun, st.Gate, "a job without a policy runs whatever runs")
	}

	require.NoError(t, b.st.FinishRuns(b.ctx, []store.Result{{Occurrence: occ(j, 0), Status: job.RunCompleted, FinishedAt: b.now, Held: true}}, b.now))
	require.Equal(t, store.GateRun, gates(b.start(t, occ(j, 3)))[start.Add(3*time.Minute)], "released when the running one ends")
}

// TestOverlapBufferOne: an occurrence due while another runs waits (no run
// row), one at most: a later one is skipped, and cannot jump the waiting
// one once the job is free.
func TestOverlapBufferOne(t *testing.T) {
	t.Parallel()
	b := setup(t)
	start := b.now.Add(-time.Hour).Truncate(time.Minute)
	j := newJob(ownerA, start, recurring(t, start), func(j *job.Job) { j.Overlap = job.OverlapBufferOne })
	b.create(t, j)
	occ := func(k int) job.Occurrence {
		return job.Occurrence{JobID: j.ID, ScheduledFor: start.Add(time.Duration(k) * time.Minute), Attempt: 1}
	}
	at := func(k int) time.Time { return start.Add(time.Duration(k) * time.Minute) }

	require.Equal(t, store.GateRun, gates(b.start(t, occ(0)))[at(0)])
	require.Equal(t, store.GateWait, gates(b.start(t, occ(1)))[at(1)])
	require.Equal(t, store.GateWait, gates(b.start(t, occ(1)))[at(1)], "it keeps its place when it tries again")
	require.Equal(t, store.GateSkip, gates(b.start(t, occ(2)))[at(2)], "at most one waits")
	var rows int
	require.NoError(t, b.st.Pool().QueryRow(b.ctx, `SELECT count(*) FROM job_runs WHERE job_id = $1 AND scheduled_for = $2`, j.ID, at(1)).Scan(&rows))
	require.Zero(t, rows, "a waiting occurrence has no run row")

	require.NoError(t, b.st.FinishRuns(b.ctx, []store.Result{{Occurrence: occ(0), Status: job.RunCompleted, FinishedAt: b.now, Held: true}}, b.now))
	require.Equal(t, store.GateSkip, gates(b.start(t, occ(3)))[at(3)], "a later one cannot jump the waiting one")
	require.Equal(t, store.GateRun, gates(b.start(t, occ(1)))[at(1)], "the waiting one runs once the job is free")
}

// TestExpiredEndsTheJob: a one-off job whose only attempt expired ends
// expired, and its expiry is returned with the started attempt.
func TestExpiredEndsTheJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	j := newJob(ownerA, b.now.Add(-time.Hour), func(j *job.Job) { j.ExpiresAfter = time.Minute })
	o := b.claimed(t, j)[0]
	started := b.start(t, o)
	require.Len(t, started, 1)
	require.Equal(t, time.Minute, started[0].ExpiresAfter)
	require.NoError(t, b.st.FinishRuns(b.ctx, []store.Result{{Occurrence: o, Status: job.RunExpired, FinishedAt: b.now, Error: "expired"}}, b.now))
	got := b.job(t, j.ID)
	require.Equal(t, job.StatusExpired, got.Status)
	require.Equal(t, time.Minute, got.ExpiresAfter)
	require.Equal(t, job.RunExpired, got.LastRun.Status)
}

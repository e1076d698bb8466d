package main

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
)

// TestRetention runs ten times the retention period of work against an
// injected clock, half a day a step: every step creates and finishes 30
// one-off jobs, in one bulk create, and runs one occurrence of a recurring
// job that stays active; then the leader's upkeep and retention run. What
// Postgres holds stays bounded by the retention, not by the work done, and
// the active job keeps its runs for TOCK_RUN_RETENTION.
func TestRetention(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	const (
		perStep = 30
		step    = 12 * time.Hour
		steps   = 20 // ten retention periods
	)
	l, _ := b.leader(func() time.Time { return now }, func(c *Config) {
		c.JobRetention, c.AuditRetention, c.RunRetention = 24*time.Hour, 48*time.Hour, 72*time.Hour
		c.RetentionBatch = 25 // several batches a round
	})
	admin := store.Audit{Actor: store.BootstrapAdmin, Action: store.ActionJobCreate}

	active := newJob(now, func(j *job.Job) {
		j.Schedule = json.RawMessage(`{"every":"day"}`)
		j.CreatedAt, j.UpdatedAt = now, now
	})
	b.create(t, active)
	var lastFinished []uuid.UUID
	for s := range steps {
		jobs := make([]*job.Job, perStep)
		for i := range jobs {
			jobs[i] = newJob(now, func(j *job.Job) { claimed(j); j.CreatedAt, j.UpdatedAt = now, now })
		}
		require.NoError(t, b.st.CreateJobs(b.ctx, jobs, store.Create{Audit: admin}))
		results := make([]store.Result, 0, perStep+1)
		for _, j := range jobs {
			results = append(results, outcome(firstAttempt(j), job.RunCompleted, now))
		}
		occ := job.Occurrence{JobID: active.ID, ScheduledFor: now, Attempt: 1}.Route(active.Owner, active.Payload)
		results = append(results, outcome(occ, job.RunCompleted, now))
		require.NoError(t, b.st.FinishRuns(b.ctx, results, now), "step %d", s)
		lastFinished = lastFinished[:0]
		for _, j := range jobs {
			lastFinished = append(lastFinished, j.ID)
		}

		now = now.Add(step)
		l.upkeep(b.ctx)
		l.retain(b.ctx)

		// Kept: the jobs finished within the last 24 h (two steps at most,
		// the one just past 12 h old), their runs, the active job's runs
		// within 72 h, audit entries within 48 h.
		finished, runs, audit, parts := b.retained(t)
		require.LessOrEqual(t, finished, 2*perStep, "step %d: finished jobs", s)
		require.LessOrEqual(t, runs, 2*perStep+int(72*time.Hour/step)+2, "step %d: runs", s)
		require.LessOrEqual(t, audit, int(48*time.Hour/step)+1, "step %d: audit entries", s)
		require.LessOrEqual(t, parts, 3+3+2+1, "step %d: job_runs partitions (3 days kept, 3 ahead, today, yesterday, default)", s)
		if s == steps-1 {
			t.Logf("after %d jobs in %s: %d finished jobs, %d runs, %d audit entries, %d run partitions kept",
				steps*perStep, time.Duration(steps)*step, finished, runs, audit, parts)
		}
	}

	// The newest finished jobs are still there, the active job and its
	// history too; a job finished two steps ago is gone with its runs.
	_, err := b.st.GetJob(b.ctx, store.AnyOwner, lastFinished[0])
	require.NoError(t, err)
	require.Equal(t, job.StatusScheduled, b.job(t, active.ID).Status)
	runs, err := b.st.ListRuns(b.ctx, store.RunFilter{Owner: store.AnyOwner, JobID: active.ID, Limit: 100})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(runs), int(48*time.Hour/step), "the active job keeps its recent runs")

	now = now.Add(2 * step)
	l.retain(b.ctx)
	_, err = b.st.GetJob(b.ctx, store.AnyOwner, lastFinished[0])
	require.ErrorIs(t, err, job.ErrNotFound)
	gone, err := b.st.ListRuns(b.ctx, store.RunFilter{Owner: store.AnyOwner, JobID: lastFinished[0], Limit: 10})
	require.NoError(t, err)
	require.Empty(t, gone, "its runs went with it")
}

// retained counts what Postgres holds: finished jobs, runs, audit entries
// and job_runs partitions.
func (b *bundle) retained(t *testing.T) (finished, runs, audit, partitions int) {
	t.Helper()
	row := b.st.Pool().QueryRow(b.ctx, `SELECT
	    (SELECT count(*) FROM jobs WHERE status IN ('completed', 'permanently_failed', 'cancelled')),
	    (SELECT count(*) FROM job_runs),
	    (SELECT count(*) FROM audit_log),
	    (SELECT count(*) FROM pg_inherits WHERE inhparent = 'job_runs'::regclass)`)
	require.NoError(t, row.Scan(&finished, &runs, &audit, &partitions))
	return finished, runs, audit, partitions
}

// TestRetentionPerJob: a job's own retention replaces the default either
// way (shorter and longer), and applies even when the default keeps
// everything.
func TestRetentionPerJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	start := now
	finish := func(jobs ...*job.Job) {
		t.Helper()
		results := make([]store.Result, len(jobs))
		for i, j := range jobs {
			results[i] = outcome(firstAttempt(j), job.RunCompleted, now)
		}
		require.NoError(t, b.st.FinishRuns(b.ctx, results, now))
	}
	exists := func(j *job.Job) bool {
		t.Helper()
		_, err := b.st.GetJob(b.ctx, store.AnyOwner, j.ID)
		if errors.Is(err, job.ErrNotFound) {
			return false
		}
		require.NoError(t, err)
		return true
	}
	oneOff := func(retention time.Duration) *job.Job {
		return newJob(now, func(j *job.Job) { claimed(j); j.Retention = retention })
	}
	short, long, dflt := oneOff(time.Hour), oneOff(72*time.Hour), oneOff(0)
	short.Labels = map[string]string{"customer": "1234"}
	b.create(t, short, long, dflt)
	finish(short, long, dflt)
	require.Equal(t, time.Hour, b.job(t, short.ID).Retention)
	countLabels := func() (n int) {
		require.NoError(t, b.st.Pool().QueryRow(b.ctx, `SELECT count(*) FROM job_labels WHERE job_id = $1`, short.ID).Scan(&n))
		return n
	}
	require.Equal(t, 1, countLabels())

	l, _ := b.leader(func() time.Time { return now }, func(c *Config) { c.JobRetention = 24 * time.Hour })
	now = start.Add(2 * time.Hour)
	l.retain(b.ctx)
	require.False(t, exists(short), "its own hour has passed")
	require.Zero(t, countLabels(), "its labels went with it")
	require.True(t, exists(long))
	require.True(t, exists(dflt))
	now = start.Add(25 * time.Hour)
	l.retain(b.ctx)
	require.False(t, exists(dflt), "the default 24 h has passed")
	require.True(t, exists(long), "its own 72 h have not")
	now = start.Add(73 * time.Hour)
	l.retain(b.ctx)
	require.False(t, exists(long))

	// With the default keeping everything, a job's own retention still applies.
	keepAll, _ := b.leader(func() time.Time { return now }, func(c *Config) { c.JobRetention = 0 })
	own, kept := oneOff(time.Minute), oneOff(0)
	b.create(t, own, kept)
	finish(own, kept)
	now = now.Add(time.Hour)
	keepAll.retain(b.ctx)
	require.False(t, exists(own))
	require.True(t, exists(kept))
}

// TestRetentionSessions: the leader's retention deletes the dashboard
// sessions past their expiry, in batches, and keeps the live ones.
func TestRetentionSessions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	l, _ := b.leader(func() time.Time { return now }, func(c *Config) { c.RetentionBatch = 2 })
	open := func(name string, expires time.Time) {
		t.Helper()
		sum := sha256.Sum256([]byte(name))
		require.NoError(t, b.st.CreateSession(b.ctx, sum[:], &store.Session{UserID: store.BootstrapAdmin,
			AdminBinding: []byte("binding"), CreatedAt: expires.Add(-12 * time.Hour), ExpiresAt: expires}))
	}
	for i := range 5 {
		open("expired "+strconv.Itoa(i), now.Add(-time.Duration(i+1)*time.Minute))
	}
	open("live", now.Add(time.Minute))

	l.retain(b.ctx)
	var left int
	require.NoError(t, b.st.Pool().QueryRow(b.ctx, `SELECT count(*) FROM sessions`).Scan(&left))
	require.Equal(t, 1, left, "every expired session went, over several batches")
	live := sha256.Sum256([]byte("live"))
	_, err := b.st.SessionCredential(b.ctx, live[:], now)
	require.NoError(t, err)
}

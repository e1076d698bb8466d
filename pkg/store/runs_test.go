package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
)

// claimed creates one-off jobs due at b.now and claims them, as the loader
// does, returning their first attempts in job order.
func (b *bundle) claimed(t *testing.T, jobs ...*job.Job) []job.Occurrence {
	t.Helper()
	b.create(t, jobs...)
	got := b.claim(t, b.now.Add(-time.Hour), b.now.Add(time.Hour), 1000)
	require.Len(t, got, len(jobs))
	occs := make([]job.Occurrence, len(jobs))
	for i, j := range jobs {
		occs[i] = firstAttempt(j)
		require.Contains(t, got, occs[i])
	}
	return occs
}

func TestFinishRuns(t *testing.T) {
	t.Parallel()

	t.Run("RecordsTheAttempt", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now.Add(-3*time.Second))
		o := b.claimed(t, j)[0]
		res := store.Result{ID: job.NewID(), Occurrence: o, Owner: ownerA, Status: job.RunFailed, DueAt: j.RunAt,
			StartedAt: b.now, FinishedAt: b.now.Add(1500 * time.Millisecond), Output: "HTTP 503", Error: "Service Unavailable"}
		b.finish(t, res)

		r := b.run(t, o)
		require.Equal(t, res.ID, r.ID, "the id the attempt's trace names")
		require.Equal(t, ownerA, r.Owner)
		require.Equal(t, job.RunFailed, r.Status)
		require.True(t, r.DueAt.Equal(j.RunAt))
		require.True(t, r.StartedAt.Equal(b.now))
		require.Equal(t, 3*time.Second, r.Lateness())
		require.True(t, r.FinishedAt.Equal(res.FinishedAt))
		require.Equal(t, "HTTP 503", r.Output)
		require.Equal(t, "Service Unavailable", r.Error)

		retry := b.outcome(t, o.Next(), job.RunFailed)
		b.finish(t, retry)
		require.NotZero(t, b.run(t, o.Next()).ID, "a result without an id is given one")
	})

	t.Run("EndsOneOffJobs", func(t *testing.T) {
		t.Parallel()
		for _, tt := range []struct {
			name   string
			status job.RunStatus
			want   job.Status
		}{
			{"Completed", job.RunCompleted, job.StatusCompleted},
			{"PermanentlyFailed", job.RunPermanentlyFailed, job.StatusPermanentlyFailed},
			{"Aborted", job.RunAborted, job.StatusCancelled},
			{"FailedLeavesItScheduled", job.RunFailed, job.StatusScheduled},
		} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				j := newJob(ownerA, b.now)
				occs := b.claimed(t, j)
				finished := b.now.Add(1500 * time.Millisecond)
				later := b.now.Add(2 * time.Second)
				res := b.outcome(t, occs[0], tt.status)
				res.FinishedAt, res.Output = finished, "HTTP 200"

				require.NoError(t, b.st.FinishRuns(b.ctx, []store.Result{res}, later))

				got := b.job(t, j.ID)
				require.Equal(t, tt.want, got.Status)
				if tt.want != job.StatusScheduled {
					require.True(t, got.UpdatedAt.Equal(later))
				}
				r := b.run(t, occs[0])
				require.Equal(t, tt.status, r.Status)
				require.Equal(t, finished, r.FinishedAt)
				require.Equal(t, "HTTP 200", r.Output)
				require.Empty(t, r.Error)
			})
		}
	})

	// A loader's claim enqueues before it commits: the attempt can end
	// while the claim is not committed, or never will be.
	t.Run("EndsAJobWhoseClaimRolledBack", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		b.create(t, j)
		res := b.outcome(t, firstAttempt(j), job.RunCompleted)
		res.EndsJob = true
		b.finish(t, res)

		require.Equal(t, job.StatusCompleted, b.job(t, j.ID).Status)
		part, hour := b.placement(t, j.ID)
		require.Equal(t, "jobs_idle", part, "left idle, as a claim leaves it")
		require.Equal(t, -1, hour)
		require.Empty(t, b.claim(t, b.now.Add(-time.Hour), b.now.Add(time.Hour), 1000), "the next leader has nothing to claim again")
	})

	t.Run("EndsAJobWhoseClaimCommitsMeanwhile", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		b.create(t, j)
		enqueued, commit := make(chan struct{}), make(chan struct{})
		claimed := make(chan error, 1)
		go func() {
			_, err := claimDue(b.st, b.ctx, b.now.Add(-time.Hour), b.now.Add(time.Hour), 1000, b.now,
				func(context.Context, []job.Occurrence, int64) error {
					close(enqueued)
					<-commit
					return nil
				})
			claimed <- err
		}()
		<-enqueued
		res := b.outcome(t, firstAttempt(j), job.RunCompleted)
		res.EndsJob = true
		finished := make(chan error, 1)
		go func() { finished <- b.st.FinishRuns(b.ctx, []store.Result{res}, b.now) }()
		time.Sleep(100 * time.Millisecond) // the finish waits on the claim's lock
		close(commit)
		require.NoError(t, <-claimed)
		require.NoError(t, <-finished)

		require.Equal(t, job.StatusCompleted, b.job(t, j.ID).Status)
		part, _ := b.placement(t, j.ID)
		require.Equal(t, "jobs_idle", part)
	})

	t.Run("ALateDuplicateLeavesARetriedJobScheduled", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now.Add(-time.Minute))
		occ := b.claimed(t, j)[0]
		res := b.outcome(t, occ, job.RunPermanentlyFailed)
		res.EndsJob = true
		b.finish(t, res)
		require.Equal(t, job.StatusPermanentlyFailed, b.job(t, j.ID).Status)
		_, err := b.st.RetryOccurrence(b.ctx, ownerA, j.ID, time.Time{}, b.now.Add(2*time.Second), store.Audit{},
			func(context.Context, job.Occurrence) error { return nil })
		require.NoError(t, err)

		b.finish(t, res) // the first attempt's entry, delivered again
		require.Equal(t, job.StatusScheduled, b.job(t, j.ID).Status, "the retry still runs")
	})

	t.Run("RetryThatSucceedsCompletesJob", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		occs := b.claimed(t, j)
		failed := b.outcome(t, occs[0], job.RunFailed)
		failed.Error = "HTTP 503"
		b.finish(t, failed)
		retry := occs[0].Next()
		b.finish(t, b.outcome(t, retry, job.RunCompleted))

		require.Equal(t, job.StatusCompleted, b.job(t, j.ID).Status)
		runs, err := b.st.ListRuns(b.ctx, store.RunFilter{Owner: ownerA, JobID: j.ID, Limit: 10})
		require.NoError(t, err)
		require.Len(t, runs, 2)
		require.Equal(t, 2, runs[0].Attempt, "newest attempt first")
		require.Equal(t, job.RunCompleted, runs[0].Status)
		require.Equal(t, job.RunFailed, runs[1].Status)
		require.Equal(t, "HTTP 503", runs[1].Error)
	})

	t.Run("FinishedOutcomeIsKept", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		occs := b.claimed(t, j)
		first := b.outcome(t, occs[0], job.RunCompleted)
		first.Output = "first"
		b.finish(t, first)

		// A late duplicate: the attempt, taken over after its lease ran
		// out, ends again.
		late := b.now.Add(time.Minute)
		require.NoError(t, b.st.FinishRuns(b.ctx, []store.Result{{ID: job.NewID(), Occurrence: occs[0], Owner: ownerA,
			Status: job.RunPermanentlyFailed, DueAt: j.RunAt, StartedAt: late, FinishedAt: late, Output: "duplicate", Error: "boom"}}, late))

		r := b.run(t, occs[0])
		require.Equal(t, job.RunCompleted, r.Status, "a late duplicate cannot overwrite an outcome")
		require.Equal(t, "first", r.Output)
		require.Empty(t, r.Error)
		require.True(t, r.StartedAt.Equal(first.StartedAt))
		require.True(t, r.FinishedAt.Equal(first.FinishedAt))
		got := b.job(t, j.ID)
		require.Equal(t, job.StatusCompleted, got.Status)
		require.True(t, got.UpdatedAt.Equal(b.now), "the job is not written again")
		runs, err := b.st.ListRuns(b.ctx, store.RunFilter{JobID: j.ID, Limit: 10})
		require.NoError(t, err)
		require.Len(t, runs, 1)
	})

	t.Run("AnAttemptTwiceInOneBatchKeepsTheFirst", func(t *testing.T) {
		t.Parallel()
		// An attempt whose lease ran out while its worker waited on Redis
		// runs again, and both outcomes can meet in one group commit: the
		// batch must not be refused for it (Postgres cannot write one row
		// twice in one statement), nor the other attempts in it held back.
		b := setup(t)
		j, other := newJob(ownerA, b.now), newJob(ownerA, b.now)
		occs := b.claimed(t, j, other)
		first := b.outcome(t, occs[0], job.RunCompleted)
		first.Output = "first"
		again := b.outcome(t, occs[0], job.RunFailed)
		again.Output = "again"
		require.NoError(t, b.st.FinishRuns(b.ctx, []store.Result{first, b.outcome(t, occs[1], job.RunCompleted), again}, b.now))

		r := b.run(t, occs[0])
		require.Equal(t, job.RunCompleted, r.Status, "the first outcome is kept")
		require.Equal(t, "first", r.Output)
		require.Equal(t, job.StatusCompleted, b.job(t, j.ID).Status)
		require.Equal(t, job.RunCompleted, b.run(t, occs[1]).Status)
		require.Equal(t, job.StatusCompleted, b.job(t, other.ID).Status)
	})

	t.Run("LegacyRunningRowTakesTheOutcome", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		occs := b.claimed(t, j)
		// A release that recorded starts left the attempt running.
		b.addRun(t, j, j.RunAt, 1, job.RunRunning, "")

		res := b.outcome(t, occs[0], job.RunCompleted)
		res.Output = "HTTP 200"
		b.finish(t, res)

		r := b.run(t, occs[0])
		require.Equal(t, job.RunCompleted, r.Status)
		require.Equal(t, "HTTP 200", r.Output)
		require.True(t, r.StartedAt.Equal(res.StartedAt), "started when the attempt that ended did")
		require.True(t, r.FinishedAt.Equal(res.FinishedAt))
		require.Equal(t, job.StatusCompleted, b.job(t, j.ID).Status, "its outcome ends the job")
	})

	t.Run("StoresOutputPostgresWouldRefuse", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		odd, plain := newJob(ownerA, b.now), newJob(ownerA, b.now)
		occs := b.claimed(t, odd, plain)
		bad := b.outcome(t, occs[0], job.RunFailed)
		bad.Output, bad.Error = "ok\x00\xffdone", "bad \xc3( byte\x00"
		b.finish(t, bad, b.outcome(t, occs[1], job.RunCompleted))

		r := b.run(t, occs[0])
		require.Equal(t, "ok\uFFFDdone", r.Output, "NUL dropped, invalid UTF-8 replaced")
		require.Equal(t, "bad \uFFFD( byte", r.Error)
		require.Equal(t, job.RunCompleted, b.run(t, occs[1]).Status, "the rest of the batch is recorded")
	})

	t.Run("NothingIsANoOp", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.NoError(t, b.st.FinishRuns(b.ctx, nil, b.now))
	})
}

func TestListRuns(t *testing.T) {
	t.Parallel()

	t.Run("PagesNewestFirstAndScopesToOwner", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		occs := b.claimed(t, j)
		attempts := []job.Occurrence{occs[0], occs[0].Next(), occs[0].Next().Next()}
		for _, o := range attempts {
			b.finish(t, b.outcome(t, o, job.RunFailed))
		}

		page1, err := b.st.ListRuns(b.ctx, store.RunFilter{Owner: ownerA, JobID: j.ID, Limit: 2})
		require.NoError(t, err)
		require.Len(t, page1, 2)
		require.Equal(t, []int{3, 2}, []int{page1[0].Attempt, page1[1].Attempt})
		last := page1[1]
		page2, err := b.st.ListRuns(b.ctx, store.RunFilter{Owner: ownerA, JobID: j.ID, Limit: 2,
			Before: &store.RunCursor{ScheduledFor: last.ScheduledFor, Attempt: last.Attempt}})
		require.NoError(t, err)
		require.Len(t, page2, 1)
		require.Equal(t, 1, page2[0].Attempt)

		other, err := b.st.ListRuns(b.ctx, store.RunFilter{Owner: ownerB, JobID: j.ID, Limit: 10})
		require.NoError(t, err)
		require.Empty(t, other)
	})
}

// TestFinishRunsTrimsHistory: outcomes recorded with TrimHistory keep every
// run that did not complete and only the newest job.KeptSuccesses completed
// ones (plus those of the batch being recorded); a job whose history is
// "all" keeps every run.
func TestFinishRunsTrimsHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	recurring := func(h job.History) *job.Job {
		j := newJob(ownerA, b.now, func(j *job.Job) {
			j.Schedule = json.RawMessage(`{"every":"second"}`)
			j.History = h
		})
		b.create(t, j)
		return j
	}
	failuresOnly, all := recurring(job.HistoryFailures), recurring(job.HistoryAll)
	const occurrences, batch = 155, 5
	failed := func(i int) bool { return i%31 == 0 } // 0, 31, 62, 93, 124
	for _, j := range []*job.Job{failuresOnly, all} {
		for from := 0; from < occurrences; from += batch {
			var results []store.Result
			for i := from; i < min(from+batch, occurrences); i++ {
				occ := job.Occurrence{JobID: j.ID, ScheduledFor: b.now.Add(time.Duration(i) * time.Second), Attempt: 1, Owner: ownerA}
				status := job.RunCompleted
				if failed(i) {
					status = job.RunPermanentlyFailed
				}
				res := b.outcome(t, occ, status)
				res.TrimHistory = j.History == job.HistoryFailures
				results = append(results, res)
			}
			require.NoError(t, b.st.FinishRuns(b.ctx, results, b.now))
		}
	}
	count := func(j *job.Job) (completed, other int, oldestCompleted time.Time) {
		t.Helper()
		runs, err := b.st.ListRuns(b.ctx, store.RunFilter{Owner: store.AnyOwner, JobID: j.ID, Limit: 1000})
		require.NoError(t, err)
		for _, r := range runs {
			if r.Status == job.RunCompleted {
				completed++
				oldestCompleted = r.ScheduledFor
			} else {
				other++
			}
		}
		return completed, other, oldestCompleted
	}
	// The last batch (150..154) was recorded on top of the
	// newest 100 completed before it: 50..149 less the failed 62, 93, 124
	// are 97, so 100 reach back to 47 (none of 47..49 failed).
	completed, other, oldest := count(failuresOnly)
	require.Equal(t, job.KeptSuccesses+5, completed, "the newest 100 before the last batch, and its 5")
	require.Equal(t, 5, other, "every failed run is kept")
	require.Equal(t, b.now.Add(47*time.Second), oldest)
	completed, other, _ = count(all)
	require.Equal(t, occurrences-5, completed)
	require.Equal(t, 5, other)
}

// TestFinishRunsPlanIgnoresStatistics: statistics taken when no claimed job
// was scheduled (all had finished) and thousands claimed since, as after a
// burst, must not turn the finish into a walk of the claimed jobs: each
// outcome's job is read through jobs_idle's primary key and written by its
// row address, whatever the planner believes.
func TestFinishRunsPlanIgnoresStatistics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	jobs := make([]*job.Job, 1000) // as many as one claim takes
	for i := range jobs {
		jobs[i] = newJob(ownerA, b.now.Add(-time.Duration(i)*time.Millisecond))
	}
	occs := b.claimed(t, jobs...)
	pool := b.st.Pool()
	_, err := pool.Exec(b.ctx, `UPDATE jobs_idle SET status = 'completed'`)
	require.NoError(t, err)
	_, err = pool.Exec(b.ctx, `ANALYZE jobs_idle`)
	require.NoError(t, err)
	_, err = pool.Exec(b.ctx, `UPDATE jobs_idle SET status = 'scheduled'`)
	require.NoError(t, err)

	results := make([]store.Result, 50)
	for i := range results {
		results[i] = b.outcome(t, occs[i], job.RunCompleted)
	}
	plan, err := b.st.FinishRunsPlan(b.ctx, results, b.now)
	require.NoError(t, err)
	text := strings.Join(plan, "\n")
	t.Logf("the finish's generic plan:\n%s", text)
	for _, line := range plan {
		if !strings.Contains(line, "jobs_idle") {
			continue
		}
		ok := strings.Contains(line, "Update on jobs_idle") || strings.Contains(line, "Tid Scan on jobs_idle") ||
			strings.Contains(line, "using jobs_idle_pkey on jobs_idle")
		require.True(t, ok, "jobs_idle read other than by its primary key or row address: %s", line)
	}
	require.Contains(t, text, "Tid Scan on jobs_idle")

	b.finish(t, results...)
	for _, r := range results {
		require.Equal(t, job.StatusCompleted, b.job(t, r.Occurrence.JobID).Status)
	}
	require.Equal(t, job.StatusScheduled, b.job(t, occs[len(results)].JobID).Status, "only the batch's jobs end")
}

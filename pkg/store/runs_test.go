package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
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

func TestStartRuns(t *testing.T) {
	t.Parallel()

	t.Run("StartsFreshAttempts", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		hook := newJob(ownerA, b.now, func(j *job.Job) {
			j.Name, j.Type, j.Timeout, j.MaxRetries, j.Priority = "hook", jobtype.TypeWebhook, 2*time.Second, 7, 11
			j.Payload = json.RawMessage(`{"url":"https://example.com","method":"PUT"}`)
		})
		ping := newJob(ownerB, b.now.Add(-time.Second))
		occs := b.claimed(t, hook, ping)
		late := b.now.Add(-3 * time.Second)

		started, err := b.st.StartRuns(b.ctx, []store.Start{
			{Occurrence: occs[0], DueAt: occs[0].ScheduledFor},
			{Occurrence: occs[1], DueAt: late},
		}, b.now, 500*time.Millisecond)
		require.NoError(t, err)
		require.Len(t, started, 2)
		byJob := map[uuid.UUID]store.Started{}
		for _, s := range started {
			byJob[s.Run.JobID] = s
		}

		s := byJob[hook.ID]
		require.Equal(t, jobtype.TypeWebhook, s.Type)
		require.Equal(t, "hook", s.Name)
		require.JSONEq(t, string(hook.Payload), string(s.Payload))
		require.Equal(t, 2*time.Second, s.Timeout)
		require.Equal(t, 7, s.MaxRetries)
		require.Equal(t, ownerA, s.Run.Owner)
		require.Equal(t, hook.RunAt, s.Run.ScheduledFor)
		require.Equal(t, 1, s.Run.Attempt)
		require.Equal(t, job.RunRunning, s.Run.Status)
		require.NotZero(t, s.Run.ID)
		require.True(t, s.Run.StartedAt.Equal(b.now))
		require.Equal(t, b.now.Add(2500*time.Millisecond), s.Run.LeaseUntil, "leased for the timeout plus the margin")

		p := byJob[ping.ID]
		require.Equal(t, ownerB, p.Run.Owner)
		require.True(t, p.Run.DueAt.Equal(late), "the due time is the one asked for")
		require.Equal(t, 3*time.Second, p.Run.Lateness())

		r := b.run(t, occs[0])
		require.Equal(t, job.RunRunning, r.Status)
		require.Equal(t, s.Run.ID, r.ID)
		require.Equal(t, s.Run.LeaseUntil, r.LeaseUntil)
	})

	t.Run("SecondStartOfSameAttemptStartsNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		occs := b.claimed(t, newJob(ownerA, b.now))
		first := b.start(t, occs...)
		require.Len(t, first, 1)

		require.Empty(t, b.start(t, occs...), "its worker still holds the lease")
		require.Equal(t, first[0].Run.ID, b.run(t, occs[0]).ID)
	})

	t.Run("TakesOverAttemptPastItsLease", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		occs := b.claimed(t, newJob(ownerA, b.now))
		first := b.start(t, occs...)
		require.Len(t, first, 1)
		lease := first[0].Run.LeaseUntil

		atLease, err := b.st.StartRuns(b.ctx, []store.Start{{Occurrence: occs[0], DueAt: occs[0].ScheduledFor}}, lease, time.Second)
		require.NoError(t, err)
		require.Empty(t, atLease, "the lease still holds at its last instant")

		later := lease.Add(time.Millisecond)
		taken, err := b.st.StartRuns(b.ctx, []store.Start{{Occurrence: occs[0], DueAt: occs[0].ScheduledFor}}, later, time.Second)
		require.NoError(t, err)
		require.Len(t, taken, 1)
		require.Equal(t, first[0].Run.ID, taken[0].Run.ID, "the same run row, re-leased")
		require.Equal(t, later.Add(6*time.Second), taken[0].Run.LeaseUntil)
		require.Equal(t, later, b.run(t, occs[0]).StartedAt)
	})

	t.Run("FinishedAttemptStartsNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		occs := b.claimed(t, j)
		b.start(t, occs...)
		require.NoError(t, b.st.FinishRuns(b.ctx, []store.Result{{Occurrence: occs[0], Status: job.RunFailed, FinishedAt: b.now}}, b.now))

		again, err := b.st.StartRuns(b.ctx, []store.Start{{Occurrence: occs[0], DueAt: occs[0].ScheduledFor}}, b.now.Add(time.Hour), 0)
		require.NoError(t, err)
		require.Empty(t, again, "a finished attempt is never restarted, even past its lease")
		require.Len(t, b.start(t, occs[0].Next()), 1, "its retry is a new attempt")
	})

	t.Run("CancelledJobStartsNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		occs := b.claimed(t, j)
		_, err := b.st.CancelJob(b.ctx, ownerA, j.ID, b.now, store.Audit{})
		require.NoError(t, err)

		require.Empty(t, b.start(t, occs...))
		states, err := b.st.RunStates(b.ctx, occs)
		require.NoError(t, err)
		require.Empty(t, states, "no run row: the caller drops the entry")
	})

	t.Run("NothingIsANoOp", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		started, err := b.st.StartRuns(b.ctx, nil, b.now, time.Second)
		require.NoError(t, err)
		require.Empty(t, started)
		require.NoError(t, b.st.FinishRuns(b.ctx, nil, b.now))
	})
}

func TestRunStates(t *testing.T) {
	t.Parallel()

	t.Run("KeyedByMember", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		occs := b.claimed(t, newJob(ownerA, b.now, func(j *job.Job) { j.Priority = 3 }), newJob(ownerA, b.now), newJob(ownerA, b.now))
		started := b.start(t, occs[0], occs[1])
		require.Len(t, started, 2)
		require.NoError(t, b.st.FinishRuns(b.ctx, []store.Result{{Occurrence: occs[1], Status: job.RunCompleted, FinishedAt: b.now}}, b.now))

		lease := b.now.Add(6 * time.Second) // the jobs' 5 s timeout plus the 1 s margin
		states, err := b.st.RunStates(b.ctx, append(occs, occs[0].Next()))
		require.NoError(t, err)
		require.Equal(t, map[string]store.RunState{
			occs[0].Member(): {Status: job.RunRunning, LeaseUntil: lease},
			occs[1].Member(): {Status: job.RunCompleted, LeaseUntil: lease},
		}, normalize(states), "attempts without a row are absent")
	})
}

// normalize puts lease times in UTC so maps compare with Equal.
func normalize(m map[string]store.RunState) map[string]store.RunState {
	out := make(map[string]store.RunState, len(m))
	for k, v := range m {
		v.LeaseUntil = v.LeaseUntil.UTC()
		out[k] = v
	}
	return out
}

func TestFinishRuns(t *testing.T) {
	t.Parallel()

	t.Run("EndsOneOffJobs", func(t *testing.T) {
		t.Parallel()
		for _, tt := range []struct {
			name   string
			status job.RunStatus
			want   job.Status
		}{
			{"Completed", job.RunCompleted, job.StatusCompleted},
			{"PermanentlyFailed", job.RunPermanentlyFailed, job.StatusPermanentlyFailed},
			{"FailedLeavesItScheduled", job.RunFailed, job.StatusScheduled},
		} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				j := newJob(ownerA, b.now)
				occs := b.claimed(t, j)
				b.start(t, occs...)
				finished := b.now.Add(1500 * time.Millisecond)
				later := b.now.Add(2 * time.Second)

				require.NoError(t, b.st.FinishRuns(b.ctx, []store.Result{{
					Occurrence: occs[0], Status: tt.status, FinishedAt: finished, Output: "HTTP 200", Error: "",
				}}, later))

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

	t.Run("RetryThatSucceedsCompletesJob", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		occs := b.claimed(t, j)
		b.start(t, occs...)
		require.NoError(t, b.st.FinishRuns(b.ctx, []store.Result{{Occurrence: occs[0], Status: job.RunFailed, FinishedAt: b.now, Error: "HTTP 503"}}, b.now))
		retry := occs[0].Next()
		require.Len(t, b.start(t, retry), 1)
		require.NoError(t, b.st.FinishRuns(b.ctx, []store.Result{{Occurrence: retry, Status: job.RunCompleted, FinishedAt: b.now}}, b.now))

		require.Equal(t, job.StatusCompleted, b.job(t, j.ID).Status)
		runs, err := b.st.ListRuns(b.ctx, store.RunFilter{Owner: ownerA, JobID: j.ID, Limit: 10})
		require.NoError(t, err)
		require.Len(t, runs, 2)
		require.Equal(t, 2, runs[0].Attempt, "newest attempt first")
		require.Equal(t, job.RunCompleted, runs[0].Status)
		require.Equal(t, job.RunFailed, runs[1].Status)
		require.Equal(t, "HTTP 503", runs[1].Error)
	})

	t.Run("NonRunningRowChangesNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		occs := b.claimed(t, j)
		b.start(t, occs...)
		require.NoError(t, b.st.FinishRuns(b.ctx, []store.Result{{Occurrence: occs[0], Status: job.RunCompleted, FinishedAt: b.now, Output: "first"}}, b.now))

		late := b.now.Add(time.Minute)
		require.NoError(t, b.st.FinishRuns(b.ctx, []store.Result{
			{Occurrence: occs[0], Status: job.RunPermanentlyFailed, FinishedAt: late, Output: "duplicate", Error: "boom"},
			{Occurrence: occs[0].Next(), Status: job.RunPermanentlyFailed, FinishedAt: late},
		}, late))

		r := b.run(t, occs[0])
		require.Equal(t, job.RunCompleted, r.Status, "a late duplicate cannot overwrite an outcome")
		require.Equal(t, "first", r.Output)
		require.Empty(t, r.Error)
		require.True(t, r.FinishedAt.Equal(b.now))
		got := b.job(t, j.ID)
		require.Equal(t, job.StatusCompleted, got.Status)
		require.True(t, got.UpdatedAt.Equal(b.now))
		runs, err := b.st.ListRuns(b.ctx, store.RunFilter{JobID: j.ID, Limit: 10})
		require.NoError(t, err)
		require.Len(t, runs, 1, "finishing an attempt that never started creates no row")
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
			require.Len(t, b.start(t, o), 1)
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
		require.True(t, page2[0].FinishedAt.IsZero())

		other, err := b.st.ListRuns(b.ctx, store.RunFilter{Owner: ownerB, JobID: j.ID, Limit: 10})
		require.NoError(t, err)
		require.Empty(t, other)
	})
}

// TestStartRunsWaitsForARetryInFlight: a retry puts its attempt in Redis
// before its transaction commits, so a fast worker can try to start it while
// Postgres still holds the job as permanently_failed. The start must wait
// for that commit and start the attempt, not drop it as a job no longer
// scheduled (which the browser test once caught).
func TestStartRunsWaitsForARetryInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	j := newJob(ownerA, b.now)
	occs := b.claimed(t, j)
	b.start(t, occs...)
	require.NoError(t, b.st.FinishRuns(b.ctx, []store.Result{{Occurrence: occs[0], Status: job.RunPermanentlyFailed, FinishedAt: b.now}}, b.now))
	require.Equal(t, job.StatusPermanentlyFailed, b.job(t, j.ID).Status)

	type result struct {
		started []store.Started
		err     error
	}
	done := make(chan result, 1)
	retried, err := b.st.RetryOccurrence(b.ctx, ownerA, j.ID, time.Time{}, b.now, store.Audit{},
		func(ctx context.Context, occ job.Occurrence) error {
			// The worker, handed the attempt the moment it is in Redis.
			go func() {
				st, err := b.st.StartRuns(b.ctx, []store.Start{{Occurrence: occ, DueAt: b.now}}, b.now, time.Second)
				done <- result{st, err}
			}()
			select {
			case r := <-done:
				done <- r
				return fmt.Errorf("the start returned before the retry committed, starting %d", len(r.started))
			case <-time.After(500 * time.Millisecond):
				return nil // it waits on the job's lock: commit
			}
		})
	require.NoError(t, err)
	require.Equal(t, 2, retried.Attempt)
	r := <-done
	require.NoError(t, r.err)
	require.Len(t, r.started, 1, "the retried attempt starts once the retry has committed")
	require.Equal(t, 2, r.started[0].Run.Attempt)
}

// TestFinishRunsTrimsHistory: outcomes recorded with TrimHistory keep every
// run that did not complete and only the newest job.KeptSuccesses completed
// ones (plus those of the batch being recorded); a job whose history is
// "all" keeps every run. Start reports the job's policy.
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
			var starts []store.Start
			for i := from; i < min(from+batch, occurrences); i++ {
				occ := job.Occurrence{JobID: j.ID, ScheduledFor: b.now.Add(time.Duration(i) * time.Second), Attempt: 1}
				starts = append(starts, store.Start{Occurrence: occ, DueAt: occ.ScheduledFor})
			}
			started, err := b.st.StartRuns(b.ctx, starts, b.now, time.Second)
			require.NoError(t, err)
			require.Len(t, started, len(starts))
			results := make([]store.Result, len(started))
			for k, st := range started {
				require.Equal(t, j.History, st.History)
				i := int(st.Run.ScheduledFor.Sub(b.now) / time.Second)
				status := job.RunCompleted
				if failed(i) {
					status = job.RunPermanentlyFailed
				}
				results[k] = store.Result{Occurrence: starts[0].Occurrence, Status: status, FinishedAt: b.now,
					TrimHistory: st.History == job.HistoryFailures}
				results[k].Occurrence.ScheduledFor = st.Run.ScheduledFor
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

package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/outbound"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/testenv"
)

// settled reports whether the ready stream is empty and nothing is pending:
// every entry was acknowledged and deleted.
func (b *bundle) settled(t *testing.T) bool {
	t.Helper()
	return b.streamLen(t) == 0 && b.pending(t) == 0
}

// finished reports j's status once it is no longer scheduled, "" until then.
func (b *bundle) finished(t *testing.T, j *job.Job) job.Status {
	t.Helper()
	if s := b.job(t, j.ID).Status; s != job.StatusScheduled {
		return s
	}
	return ""
}

// redeliver appends a copy of o's stream entry, as a fault (a re-add by the
// reconciler, a replayed publish) would.
func (b *bundle) redeliver(t *testing.T, o job.Occurrence, due time.Time) {
	t.Helper()
	require.NoError(t, b.rdb.XAdd(b.ctx, &redis.XAddArgs{
		Stream: b.keys.Ready(),
		Values: []any{"m", o.Member(), "d", strconv.FormatInt(due.UnixMilli(), 10)},
	}).Err())
}

// histogramCount is how many observations h holds.
func histogramCount(t *testing.T, h prometheus.Histogram) int {
	t.Helper()
	var m dto.Metric
	require.NoError(t, h.Write(&m))
	return int(m.GetHistogram().GetSampleCount())
}

// start begins attempts the way another worker would: leased in Redis
// until now + lease.
func (b *bundle) start(t *testing.T, now time.Time, lease time.Duration, occs ...job.Occurrence) []queue.Lease {
	t.Helper()
	starts := make([]queue.Start, len(occs))
	for i, o := range occs {
		starts[i] = queue.Start{Generation: o.Generation, Lease: queue.Lease{Occurrence: o, Worker: "another-worker",
			StartedAt: now, Until: now.Add(lease), DueAt: o.ScheduledFor, Entry: "0-1", Member: o.Member()}}
	}
	answers, err := b.q.Start(b.ctx, starts, now, store.OverlapWaitKept)
	require.NoError(t, err)
	leases := make([]queue.Lease, len(occs))
	for i, a := range answers {
		require.Equal(t, queue.StartRun, a, "attempt %d was not leased", i)
		leases[i] = starts[i].Lease
	}
	return leases
}

// leases returns the attempts of job id running, as Redis holds them.
func (b *bundle) leases(t *testing.T, id uuid.UUID) []queue.Lease {
	t.Helper()
	ls, err := b.queue.Running(b.ctx, id)
	require.NoError(t, err)
	return ls
}

func TestConsumer(t *testing.T) {
	t.Parallel()

	t.Run("RunsEachEntryOnceAndRecordsCompleted", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		jobs := make([]*job.Job, 8)
		for i := range jobs {
			jobs[i] = b.claimedJob(func(j *job.Job) { j.Name, j.Priority = "job "+strconv.Itoa(i), i })
		}
		b.create(t, jobs...)
		require.Equal(t, len(jobs), b.publish(t))

		r := newRunner()
		testenv.GoRun(t, b.consumer(r).Run)
		b.untilSettled(t, 10*time.Second, func() bool {
			for _, j := range jobs {
				if b.finished(t, j) == "" {
					return false
				}
			}
			return true
		}, "not every job finished")
		b.untilSettled(t, 5*time.Second, func() bool { return b.settled(t) }, "entries were not acknowledged and deleted")

		byKey := map[string]jobtype.Task{}
		for _, task := range r.seen() {
			_, dup := byKey[task.Key]
			require.False(t, dup, "occurrence %s ran twice", task.Key)
			byKey[task.Key] = task
		}
		require.Len(t, byKey, len(jobs))
		for _, j := range jobs {
			require.Equal(t, job.StatusCompleted, b.job(t, j.ID).Status)
			o := firstAttempt(j)
			task, ok := byKey[o.Key()]
			require.True(t, ok, "job %s never ran", j.ID)
			require.Equal(t, jobtype.Task{
				JobID: j.ID, Owner: owner, Name: j.Name, Type: jobtype.TypePing, ScheduledFor: j.RunAt, Attempt: 1,
				Key: o.Key(), Payload: task.Payload, Timeout: 5 * time.Second,
			}, task)
			require.JSONEq(t, string(j.Payload), string(task.Payload))

			runs := b.runs(t, j.ID)
			require.Len(t, runs, 1)
			require.Equal(t, job.RunCompleted, runs[0].Status)
			require.Equal(t, 1, runs[0].Attempt)
			require.Equal(t, "pong "+o.Key(), runs[0].Output)
			require.False(t, runs[0].FinishedAt.IsZero())
		}
		require.Equal(t, len(jobs), r.calls(), "no attempt ran twice")
	})

	t.Run("RetriesFailedAttemptUntilPermanentlyFailed", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.claimedJob(func(j *job.Job) { j.MaxRetries = 2 })
		b.create(t, j)
		b.publishing(t)

		r := newRunner()
		r.outcome = failing
		c := b.consumer(r)
		testenv.GoRun(t, c.Run)
		b.untilSettled(t, 10*time.Second, func() bool { return b.finished(t, j) != "" }, "the job did not finish")
		require.Equal(t, job.StatusPermanentlyFailed, b.job(t, j.ID).Status)
		b.untilSettled(t, 5*time.Second, func() bool { return b.settled(t) }, "entries were not acknowledged and deleted")

		// One log line and one count per recorded outcome; lateness per start.
		lines := b.logs.FilterMessage("run_finished").AllUntimed()
		require.Len(t, lines, 3)
		for i, want := range []job.RunStatus{job.RunFailed, job.RunFailed, job.RunPermanentlyFailed} {
			f := lines[i].ContextMap()
			require.Equal(t, j.ID.String(), f["job_id"])
			require.Equal(t, owner.String(), f["owner"])
			require.Equal(t, string(jobtype.TypePing), f["type"])
			require.EqualValues(t, i+1, f["attempt"])
			require.Equal(t, string(want), f["status"])
			require.Contains(t, f, "lateness_ms")
			require.Contains(t, f, "duration_ms")
		}
		require.Equal(t, 2.0, testutil.ToFloat64(c.Metrics.Runs.WithLabelValues("ping", "failed")))
		require.Equal(t, 1.0, testutil.ToFloat64(c.Metrics.Runs.WithLabelValues("ping", "permanently_failed")))
		require.Equal(t, 3, histogramCount(t, c.Metrics.Lateness), "one lateness per attempt started")

		runs := b.runs(t, j.ID)
		require.Len(t, runs, 3, "the first attempt and max_retries retries")
		for i, want := range []job.RunStatus{job.RunFailed, job.RunFailed, job.RunPermanentlyFailed} {
			require.Equal(t, i+1, runs[i].Attempt)
			require.Equal(t, want, runs[i].Status, "attempt %d", i+1)
			require.Equal(t, j.RunAt, runs[i].ScheduledFor, "every attempt belongs to the one occurrence")
			require.Equal(t, "target answered 503", runs[i].Error)
		}
		// Each retry is due after its backoff: base 10 ms then 20 ms (the cap),
		// jittered over the upper half; due times are whole milliseconds.
		for i, bounds := range [][2]time.Duration{{4 * time.Millisecond, 10 * time.Millisecond}, {9 * time.Millisecond, 20 * time.Millisecond}} {
			wait := runs[i+1].DueAt.Sub(runs[i].FinishedAt)
			require.GreaterOrEqual(t, wait, bounds[0], "attempt %d is due %s after attempt %d failed", i+2, wait, i+1)
			require.LessOrEqual(t, wait, bounds[1], "attempt %d is due %s after attempt %d failed", i+2, wait, i+1)
		}

		tasks := r.seen()
		require.Len(t, tasks, 3)
		for i, task := range tasks {
			require.Equal(t, i+1, task.Attempt)
			require.Equal(t, firstAttempt(j).Key(), task.Key, "the idempotency key is the same on every attempt")
		}
		due, err := b.rdb.ZCard(b.ctx, b.keys.Due()).Result()
		require.NoError(t, err)
		require.Zero(t, due, "no attempt follows the last")
	})

	t.Run("AcksRedeliveryOfFinishedAttempt", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.claimedJob()
		b.create(t, j)
		b.publish(t)
		r := newRunner()
		testenv.GoRun(t, b.consumer(r).Run)
		b.untilSettled(t, 10*time.Second, func() bool { return b.finished(t, j) != "" && b.settled(t) }, "the job did not complete")
		require.Equal(t, 1, r.calls())

		b.redeliver(t, firstAttempt(j), j.RunAt)
		b.untilSettled(t, 10*time.Second, func() bool { return b.settled(t) }, "the redelivered entry was not acknowledged and deleted")
		require.Equal(t, 1, r.calls(), "a finished attempt does not run again")
		runs := b.runs(t, j.ID)
		require.Len(t, runs, 1)
		require.Equal(t, job.RunCompleted, runs[0].Status)
		require.Equal(t, job.StatusCompleted, b.job(t, j.ID).Status)
	})

	t.Run("RequeuesMissingRetryOnRedeliveryOfFailedAttempt", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.claimedJob(func(j *job.Job) { j.MaxRetries = 2 })
		require.NoError(t, b.st.CreateJobs(b.ctx, []*job.Job{j}, store.Create{}))
		// Another worker ran the first attempt and recorded it failed, then
		// died before its retry reached the due set or its entry was acked.
		first := firstAttempt(j)
		b.start(t, b.now, time.Second, first)
		require.NoError(t, b.st.FinishRuns(b.ctx, []store.Result{{Occurrence: first, Status: job.RunFailed, FinishedAt: b.now, Error: "boom"}}, b.now))
		b.redeliver(t, first, j.RunAt)

		r := newRunner()
		before := time.Now()
		testenv.GoRun(t, b.consumer(r).Run)
		b.untilSettled(t, 10*time.Second, func() bool { return b.settled(t) }, "the redelivered entry was not acknowledged and deleted")

		require.Zero(t, r.calls(), "the failed attempt does not run again")
		require.True(t, b.scheduled(t, first.Next()), "the missing retry is back in the due set")
		s, err := b.rdb.ZScore(b.ctx, b.keys.Due(), first.Next().Member()).Result()
		require.NoError(t, err)
		require.GreaterOrEqual(t, int64(s), before.UnixMilli(), "the retry is due now")
		require.False(t, b.scheduled(t, first), "the failed attempt itself is not re-added")
		runs := b.runs(t, j.ID)
		require.Len(t, runs, 1)
		require.Equal(t, job.RunFailed, runs[0].Status)
	})

	t.Run("RecordsBodyCutAtTheTimeoutFailed", func(t *testing.T) {
		t.Parallel()
		// The real executors against a target that answers 200 at once and
		// trickles its body past the job's timeout: the attempt failed.
		b := setup(t)
		srv := httptest.NewServer(testenv.Trickle(t, http.StatusOK))
		t.Cleanup(srv.Close)
		client := outbound.NewClient(outbound.Options{AllowPrivate: true})
		t.Cleanup(client.CloseIdleConnections)
		j := b.claimedJob(func(j *job.Job) {
			j.MaxRetries, j.Timeout, j.Payload = 1, 300*time.Millisecond, json.RawMessage(`{"url":"`+srv.URL+`"}`)
		})
		b.create(t, j)
		require.Equal(t, 1, b.publish(t))

		testenv.GoRun(t, b.consumer(jobtype.NewRegistry(jobtype.Deps{Client: client})).Run)
		b.untilSettled(t, 10*time.Second, func() bool {
			runs := b.runs(t, j.ID)
			return len(runs) == 1
		}, "the attempt was not recorded")
		runs := b.runs(t, j.ID)
		require.Equal(t, job.RunFailed, runs[0].Status, "error: %s", runs[0].Error)
		require.True(t, strings.HasPrefix(runs[0].Error, "timeout after 300ms"), runs[0].Error)
		require.Contains(t, runs[0].Error, "status 200")
		require.True(t, b.scheduled(t, firstAttempt(j).Next()), "its retry is due")
	})

	t.Run("DropsEntryOfCancelledJob", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.claimedJob()
		b.create(t, j)
		_, _, err := b.st.CancelJob(b.ctx, owner, j.ID, time.Now(), store.Audit{}, nil)
		require.NoError(t, err)
		require.Equal(t, 1, b.publish(t), "the member was still in the due set")

		r := newRunner()
		testenv.GoRun(t, b.consumer(r).Run)
		b.untilSettled(t, 10*time.Second, func() bool { return b.settled(t) }, "the entry was not acknowledged and deleted")
		require.Zero(t, r.calls(), "a cancelled job never runs")
		require.Empty(t, b.runs(t, j.ID))
		require.Equal(t, job.StatusCancelled, b.job(t, j.ID).Status)
		require.Equal(t, 1, b.logs.FilterMessage("entry_dropped_job_not_scheduled").Len())
	})

	t.Run("SetsAsidePoisonEntry", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		id, err := b.rdb.XAdd(b.ctx, &redis.XAddArgs{Stream: b.keys.Ready(), Values: []any{"m", "garbage", "d", "123"}}).Result()
		require.NoError(t, err)
		good := b.claimedJob()
		b.create(t, good)
		require.Equal(t, 1, b.publish(t))

		r := newRunner()
		testenv.GoRun(t, b.consumer(r).Run)
		b.untilSettled(t, 10*time.Second, func() bool { return b.finished(t, good) != "" && b.settled(t) },
			"the stream was not drained")
		require.Equal(t, job.StatusCompleted, b.job(t, good.ID).Status, "a poison entry does not hold up the others")
		require.Equal(t, 1, r.calls())

		dead := b.entries(t, b.keys.Dead())
		require.Len(t, dead, 1)
		require.Equal(t, id, dead[0].Values["id"])
		require.Equal(t, "garbage", dead[0].Values["f_m"])
		require.Equal(t, "123", dead[0].Values["f_d"])
		require.Contains(t, dead[0].Values["error"], "garbage")
		require.Equal(t, 1, b.logs.FilterMessage("poison_entry_set_aside").Len())
	})

	t.Run("RunsAtMostConcurrencyAttemptsAtOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		jobs := make([]*job.Job, 10)
		for i := range jobs {
			jobs[i] = b.claimedJob()
		}
		b.create(t, jobs...)
		require.Equal(t, len(jobs), b.publish(t))

		r := holding()
		testenv.GoRun(t, b.consumer(r, func(c *Worker) { c.Concurrency, c.Batch = 4, 4 }).Run)
		testenv.WaitUntil(t, 10*time.Second, func() bool { running, _ := r.concurrency(); return running == 4 }, "four attempts did not start")

		// The worker holds no more entries than it runs: the others stay
		// unread in the stream for any worker with a free slot.
		require.EqualValues(t, 4, b.pending(t))
		require.EqualValues(t, len(jobs), b.streamLen(t))
		groups, err := b.rdb.XInfoGroups(b.ctx, b.keys.Ready()).Result()
		require.NoError(t, err)
		require.Len(t, groups, 1)
		require.EqualValues(t, 6, groups[0].Lag, "six entries are not read yet")

		r.let(t, len(jobs))
		b.untilSettled(t, 10*time.Second, func() bool {
			for _, j := range jobs {
				if b.finished(t, j) == "" {
					return false
				}
			}
			return b.settled(t)
		}, "not every job finished")
		_, most := r.concurrency()
		require.Equal(t, 4, most, "never more than Concurrency attempts at once")
		require.Equal(t, len(jobs), r.calls())
	})

	t.Run("RunsHigherPriorityFirstWithOneSlot", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// Twenty jobs due at the same millisecond, created in shuffled priority order.
		prios := []int{7, -3, 120, 0, 55, -32768, 32767, 8, 9, -1, 1000, 2, -500, 42, 3, 77, -77, 600, 5, 11}
		jobs := make([]*job.Job, len(prios))
		prio := make(map[string]int, len(prios))
		for i, p := range prios {
			jobs[i] = b.claimedJob(func(j *job.Job) { j.Priority = p })
			prio[jobs[i].ID.String()] = p
		}
		b.create(t, jobs...)
		require.Equal(t, len(jobs), b.publish(t))

		r := newRunner()
		testenv.GoRun(t, b.consumer(r, func(c *Worker) { c.Concurrency, c.Batch = 1, 1 }).Run)
		testenv.WaitUntil(t, 10*time.Second, func() bool { return r.calls() == len(jobs) }, "not every job ran")

		var got []int
		for _, task := range r.seen() {
			got = append(got, prio[task.JobID.String()])
		}
		want := slices.Clone(prios)
		slices.Sort(want)
		slices.Reverse(want)
		require.Equal(t, want, got, "run in descending priority")
	})

	t.Run("LeavesEntryOfLiveAttemptPending", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		leased, next := b.claimedJob(), b.claimedJob()
		require.NoError(t, b.st.CreateJobs(b.ctx, []*job.Job{leased, next}, store.Create{}))
		// Another live worker holds the lease of leased's attempt; a copy of
		// its entry arrives first, then next's.
		b.start(t, time.Now(), time.Minute, firstAttempt(leased))
		b.redeliver(t, firstAttempt(leased), leased.RunAt)
		b.redeliver(t, firstAttempt(next), next.RunAt)

		// One slot and batches of one: once next has run, the copy before it
		// has been handled.
		r := newRunner()
		testenv.GoRun(t, b.consumer(r, func(c *Worker) { c.Concurrency, c.Batch = 1, 1 }).Run)
		b.untilSettled(t, 10*time.Second, func() bool { return b.finished(t, next) != "" && b.streamLen(t) == 1 }, "next did not run")

		require.Equal(t, 1, r.calls(), "the leased attempt does not run twice")
		require.EqualValues(t, 1, b.pending(t), "the copy stays pending for the worker that holds the lease")
		require.Empty(t, b.runs(t, leased.ID), "nothing is recorded")
		require.Len(t, b.leases(t, leased.ID), 1, "the other worker's lease stands")
	})
}

func TestConsumerShutdown(t *testing.T) {
	t.Parallel()

	t.Run("RecordsAttemptFinishedWithinGrace", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		first, second := b.claimedJob(), b.claimedJob()
		b.create(t, first, second)
		require.Equal(t, 2, b.publish(t))

		r := holding()
		cancel, done := testenv.GoRun(t, b.consumer(r, func(c *Worker) { c.Concurrency, c.Batch, c.Grace = 1, 1, 10*time.Second }).Run)
		testenv.WaitUntil(t, 10*time.Second, func() bool { return r.calls() == 1 }, "no attempt started")
		cancel()
		r.let(t, 1)
		testenv.Returned(t, done, 10*time.Second)

		ran := r.seen()[0].JobID
		other := first.ID
		if ran == first.ID {
			other = second.ID
		}
		runs := b.runs(t, ran)
		require.Len(t, runs, 1)
		require.Equal(t, job.RunCompleted, runs[0].Status, "the in-flight attempt is recorded")
		require.Equal(t, job.StatusCompleted, b.job(t, ran).Status)
		require.Zero(t, b.pending(t), "and acknowledged")

		require.Equal(t, 1, r.calls(), "nothing is fetched after the context ends")
		require.Empty(t, b.runs(t, other))
		require.EqualValues(t, 1, b.streamLen(t), "the unread entry stays in the stream")
		require.Zero(t, b.logs.FilterMessage("shutdown_grace_expired_abandoning_attempts").Len())
	})

	t.Run("AbandonsAttemptRunningPastGrace", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.claimedJob()
		b.create(t, j)
		b.publish(t)

		const grace = 300 * time.Millisecond
		r := holding() // never let go: the task returns only when abandoned
		cancel, done := testenv.GoRun(t, b.consumer(r, func(c *Worker) { c.Concurrency, c.Batch, c.Grace = 1, 1, grace }).Run)
		testenv.WaitUntil(t, 10*time.Second, func() bool { return r.calls() == 1 }, "the attempt did not start")
		stopped := time.Now()
		cancel()
		testenv.Returned(t, done, 10*time.Second)
		require.GreaterOrEqual(t, time.Since(stopped), grace, "in-flight attempts get the grace period")

		r.mu.Lock()
		abandoned := r.abandoned
		r.mu.Unlock()
		require.Equal(t, 1, abandoned, "the attempt's context ended")
		require.Empty(t, b.runs(t, j.ID), "nothing is recorded, so another worker takes the attempt over")
		require.Len(t, b.leases(t, j.ID), 1, "its lease runs out on its own")
		require.Equal(t, job.StatusScheduled, b.job(t, j.ID).Status)
		require.EqualValues(t, 1, b.pending(t), "the entry stays pending for reclaim")
		require.Equal(t, 1, b.logs.FilterMessage("shutdown_grace_expired_abandoning_attempts").Len())
	})
}

func TestConsumerReclaim(t *testing.T) {
	t.Parallel()

	// readAsDead delivers every stream entry to a consumer that never acks.
	readAsDead := func(t *testing.T, b *bundle) {
		t.Helper()
		res, err := b.rdb.XReadGroup(b.ctx, &redis.XReadGroupArgs{
			Group: queue.Group, Consumer: "dead", Streams: []string{b.keys.Ready(), ">"}, Count: 10, Block: -1,
		}).Result()
		require.NoError(t, err)
		require.Len(t, res, 1)
		require.Len(t, res[0].Messages, 1)
		require.EqualValues(t, 1, b.pending(t))
	}
	withVisibility := func(c *Worker) { c.Visibility = time.Second }

	t.Run("RunsEntryLeftPendingByDeadConsumer", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.claimedJob()
		b.create(t, j)
		b.publish(t)
		readAsDead(t, b) // it died before starting the attempt: no run row

		r := newRunner()
		testenv.GoRun(t, b.consumer(r, withVisibility).Run)
		b.untilSettled(t, 10*time.Second, func() bool { return b.finished(t, j) != "" && b.settled(t) }, "the entry was not reclaimed")
		require.Equal(t, job.StatusCompleted, b.job(t, j.ID).Status)
		require.Equal(t, 1, r.calls(), "run once")
		runs := b.runs(t, j.ID)
		require.Len(t, runs, 1)
		require.Equal(t, job.RunCompleted, runs[0].Status)
	})

	t.Run("CountsReclaimedEntries", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.claimedJob()
		b.create(t, j)
		b.publish(t)
		readAsDead(t, b)

		c := b.consumer(newRunner(), withVisibility)
		testenv.GoRun(t, c.Run)
		b.untilSettled(t, 10*time.Second, func() bool { return b.finished(t, j) != "" && b.settled(t) }, "the entry was not reclaimed")
		require.Equal(t, 1.0, testutil.ToFloat64(c.Metrics.Reclaimed))
		require.Equal(t, 1.0, testutil.ToFloat64(c.Metrics.Runs.WithLabelValues("ping", "completed")))
	})

	t.Run("TakesOverAttemptPastItsLease", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.claimedJob(func(j *job.Job) { j.Timeout = 100 * time.Millisecond })
		b.create(t, j)
		b.publish(t)
		readAsDead(t, b)
		// It died mid-attempt: the attempt is leased, for 100 ms.
		b.start(t, time.Now(), 100*time.Millisecond, firstAttempt(j))

		r := newRunner()
		testenv.GoRun(t, b.consumer(r, withVisibility).Run)
		b.untilSettled(t, 10*time.Second, func() bool { return b.finished(t, j) != "" && b.settled(t) }, "the attempt was not taken over")
		require.Equal(t, 1, r.calls())
		runs := b.runs(t, j.ID)
		require.Len(t, runs, 1)
		require.Equal(t, job.RunCompleted, runs[0].Status)
		require.Empty(t, b.leases(t, j.ID), "the lease taken over ended with the outcome")
	})
}

package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/testenv"
)

// refuseOutcomes makes Postgres refuse, for real, to record outcomes of
// job id for which the SQL condition when holds (NEW is the job_runs row):
// a trigger raises invalid_parameter_value (22023, bad data: a permanent
// error to the worker). A row trigger on the partitioned job_runs reaches
// every partition. It is dropped when t ends, before the test's schema goes
// back to the pool.
func (b *bundle) refuseOutcomes(t *testing.T, id uuid.UUID, when string) {
	t.Helper()
	name := "refuse_" + strings.ReplaceAll(id.String(), "-", "")
	pool := b.st.Pool()
	_, err := pool.Exec(b.ctx, fmt.Sprintf(`CREATE FUNCTION %s() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'refused by the test' USING ERRCODE = '22023';
END $$`, name))
	require.NoError(t, err)
	_, err = pool.Exec(b.ctx, fmt.Sprintf(`CREATE TRIGGER %s BEFORE INSERT ON job_runs FOR EACH ROW
WHEN (NEW.job_id = '%s' AND (%s)) EXECUTE FUNCTION %s()`, name, id, when, name))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = pool.Exec(ctx, fmt.Sprintf(`DROP TRIGGER IF EXISTS %s ON job_runs`, name))
		_, _ = pool.Exec(ctx, fmt.Sprintf(`DROP FUNCTION IF EXISTS %s()`, name))
	})
}

// expireLeases makes the leases of job id's running attempts run out, as
// they do when their worker dies.
func (b *bundle) expireLeases(t *testing.T, id uuid.UUID) {
	t.Helper()
	key := b.keys.Run(id)
	fields, err := b.rdb.HGetAll(b.ctx, key).Result()
	require.NoError(t, err)
	past := strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10)
	n := 0
	for f, v := range fields {
		parts := strings.Split(v, "|")
		if !strings.Contains(f, ":") || len(parts) != 8 {
			continue
		}
		parts[4] = past
		require.NoError(t, b.rdb.HSet(b.ctx, key, f, strings.Join(parts, "|")).Err())
		n++
	}
	require.Equal(t, 1, n, "one lease to expire")
}

// deliveries is how many times the group has delivered the entry of o's
// stream entry, 0 when it is not pending.
func (b *bundle) deliveries(t *testing.T, o job.Occurrence) int {
	t.Helper()
	ps, err := b.rdb.XPendingExt(b.ctx, &redis.XPendingExtArgs{Stream: b.keys.Ready(), Group: queue.Group, Start: "-", End: "+", Count: 100}).Result()
	require.NoError(t, err)
	for _, p := range ps {
		xs, err := b.rdb.XRange(b.ctx, b.keys.Ready(), p.ID, p.ID).Result()
		require.NoError(t, err)
		if len(xs) == 1 && xs[0].Values["m"] == o.Member() {
			return int(p.RetryCount)
		}
	}
	return 0
}

func TestConsumerPoison(t *testing.T) {
	t.Parallel()

	// batchOf creates n claimed jobs of which Postgres refuses to record
	// the first's outcomes where when holds, publishes them, and returns
	// the poison and the others.
	batchOf := func(t *testing.T, b *bundle, n int, when string, mods ...func(*job.Job)) (*job.Job, []*job.Job) {
		t.Helper()
		jobs := make([]*job.Job, n)
		for i := range jobs {
			jobs[i] = b.claimedJob(mods...)
		}
		b.refuseOutcomes(t, jobs[0].ID, when)
		b.create(t, jobs...)
		require.Equal(t, n, b.publish(t))
		return jobs[0], jobs[1:]
	}
	allFinished := func(t *testing.T, b *bundle, jobs []*job.Job) bool {
		for _, j := range jobs {
			if b.finished(t, j) == "" {
				return false
			}
		}
		return true
	}

	t.Run("RecordsTheRestOfABatchPostgresRefuses", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// Postgres refuses the poison's outcome as its target answered it,
		// not without the answer.
		poison, good := batchOf(t, b, 16, "NEW.output IS NOT NULL")

		// A visibility timeout longer than the test: whatever runs, runs
		// from the first read of the one batch, not from a reclaim.
		r := newRunner()
		c := b.consumer(r, func(c *Worker) { c.Concurrency, c.Batch, c.Visibility, c.MaxDeliveries = 16, 16, time.Minute, 3 })
		began := time.Now()
		testenv.GoRun(t, c.Run)
		b.untilSettled(t, 10*time.Second, func() bool { return allFinished(t, b, append(good, poison)) && b.settled(t) },
			"the batch was not recorded")
		t.Logf("the %d entries of the batch were recorded within %s", len(good)+1, time.Since(began).Round(time.Millisecond))

		require.Equal(t, len(good)+1, r.calls(), "every entry of the batch ran, once")
		for _, j := range good {
			require.Equal(t, job.StatusCompleted, b.job(t, j.ID).Status)
			runs := b.runs(t, j.ID)
			require.Len(t, runs, 1)
			require.Equal(t, "pong "+firstAttempt(j).Key(), runs[0].Output)
		}
		require.Zero(t, testutil.ToFloat64(c.Metrics.Reclaimed))
		runs := b.runs(t, poison.ID)
		require.Len(t, runs, 1, "the poison ran once and is recorded, without its answer")
		require.Equal(t, job.RunCompleted, runs[0].Status)
		require.Empty(t, runs[0].Output)
		require.Equal(t, "its answer was not recorded: Postgres refused it (SQLSTATE 22023)", runs[0].Error)
		require.Equal(t, job.StatusCompleted, b.job(t, poison.ID).Status)
		require.Empty(t, b.leases(t, poison.ID))

		lines := b.logs.FilterMessage("finish_refused").AllUntimed()
		require.Len(t, lines, 1, "the refused outcome is logged once")
		f := lines[0].ContextMap()
		require.Equal(t, poison.ID.String(), f["job_id"])
		require.Equal(t, "22023", f["code"])
		require.NotContains(t, fmt.Sprint(f), "refused by the test", "the message, which may quote data, is not logged")
	})

	t.Run("DeadLettersEntryDeliveredMoreThanMaxDeliveries", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// Postgres refuses every outcome of the poison but its dead letter.
		poison, good := batchOf(t, b, 4, "NEW.error IS NULL OR NEW.error NOT LIKE 'dead-lettered%'",
			func(j *job.Job) { j.Timeout = 100 * time.Millisecond })
		first := firstAttempt(poison)

		r := newRunner()
		c := b.consumer(r, func(c *Worker) {
			c.Visibility, c.MaxDeliveries, c.LeaseMargin = 500*time.Millisecond, 3, 100*time.Millisecond
		})
		testenv.GoRun(t, c.Run)
		b.untilSettled(t, 20*time.Second, func() bool { return b.finished(t, poison) != "" && b.settled(t) },
			"the poison entry was not dead-lettered")

		require.Equal(t, job.StatusPermanentlyFailed, b.job(t, poison.ID).Status)
		want := "dead-lettered: delivered 4 times without an outcome (TOCK_MAX_DELIVERIES is 3): " +
			"Postgres refused its outcome or its worker died each time; see the workers' logs"
		runs := b.runs(t, poison.ID)
		require.Len(t, runs, 1)
		require.Equal(t, job.RunPermanentlyFailed, runs[0].Status)
		require.Equal(t, want, runs[0].Error)
		require.Equal(t, 1, runs[0].Attempt)
		require.True(t, runs[0].FinishedAt.Equal(runs[0].StartedAt))
		require.Empty(t, b.leases(t, poison.ID))

		dead := b.entries(t, b.keys.Dead())
		require.Len(t, dead, 1)
		require.Equal(t, first.Member(), dead[0].Values["f_m"])
		require.Equal(t, want, dead[0].Values["error"])
		require.Equal(t, "4", dead[0].Values["deliveries"])
		require.Zero(t, b.pending(t), "acknowledged")

		require.Len(t, b.logs.FilterMessage("finish_refused").AllUntimed(), 3, "refused on each of its 3 deliveries")
		lines := b.logs.FilterMessage("entry_dead_lettered").AllUntimed()
		require.Len(t, lines, 1)
		f := lines[0].ContextMap()
		require.Equal(t, poison.ID.String(), f["job_id"])
		require.EqualValues(t, 1, f["attempt"])
		require.EqualValues(t, 4, f["deliveries"])
		require.Equal(t, 1.0, testutil.ToFloat64(c.Metrics.DeadLettered))

		ran := 0
		for _, task := range r.seen() {
			if task.JobID == poison.ID {
				require.Equal(t, first.Key(), task.Key, "each run carries the same Idempotency-Key")
				ran++
			}
		}
		require.Equal(t, 3, ran, "the poison ran on each delivery whose outcome was refused")
		require.Len(t, r.seen(), len(good)+3)
		for _, j := range good {
			require.Equal(t, job.StatusCompleted, b.job(t, j.ID).Status)
		}
	})

	t.Run("LeavesLongAttemptWithALiveLeasePending", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// A long attempt: its lease outlives many visibility timeouts, so its
		// entry is reclaimed again and again while it runs.
		j := b.claimedJob(func(j *job.Job) { j.Timeout = time.Minute })
		b.create(t, j)
		b.publish(t)
		o := firstAttempt(j)

		r := holding()
		c := b.consumer(r, func(c *Worker) { c.Visibility, c.MaxDeliveries = time.Second, 2 })
		testenv.GoRun(t, c.Run)
		testenv.WaitUntil(t, 20*time.Second, func() bool { return testutil.ToFloat64(c.Metrics.Reclaimed) >= 5 },
			"the entry of the running attempt was not reclaimed past MaxDeliveries")

		require.Empty(t, b.runs(t, j.ID), "not dead-lettered: its worker holds the lease")
		require.Len(t, b.leases(t, j.ID), 1)
		require.Equal(t, 1, r.calls())
		require.Empty(t, b.entries(t, b.keys.Dead()))
		require.LessOrEqual(t, b.deliveries(t, o), 2, "each reclaim that found the lease was given back")

		r.let(t, 1)
		b.untilSettled(t, 10*time.Second, func() bool { return b.finished(t, j) != "" && b.settled(t) }, "the attempt did not finish")
		require.Equal(t, job.StatusCompleted, b.job(t, j.ID).Status)
		runs := b.runs(t, j.ID)
		require.Len(t, runs, 1)
		require.Equal(t, job.RunCompleted, runs[0].Status)
		require.Empty(t, b.leases(t, j.ID))
		require.Empty(t, b.entries(t, b.keys.Dead()))
		require.Zero(t, b.logs.FilterMessage("entry_dead_lettered").Len())
		require.Zero(t, testutil.ToFloat64(c.Metrics.DeadLettered))
	})

	t.Run("TakesOverLongAttemptWhoseWorkerDiesAfterManyReclaims", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		const maxDeliveries = 3
		j := b.claimedJob(func(j *job.Job) { j.Timeout = time.Minute })
		b.create(t, j)
		b.publish(t)
		o := firstAttempt(j)
		fast := func(c *Worker) {
			c.Visibility, c.MaxDeliveries, c.Grace = 500*time.Millisecond, maxDeliveries, 10*time.Millisecond
		}

		// The attempt's worker runs it for long; it and another worker
		// reclaim its entry every visibility timeout, finding it leased.
		r1 := holding()
		c1 := b.consumer(r1, fast)
		stop1, done1 := testenv.GoRun(t, c1.Run)
		testenv.WaitUntil(t, 10*time.Second, func() bool { return r1.calls() == 1 }, "the attempt did not start")
		r2 := newRunner()
		c2 := b.consumer(r2, fast)
		testenv.GoRun(t, c2.Run)
		reclaims := func() float64 {
			return testutil.ToFloat64(c1.Metrics.Reclaimed) + testutil.ToFloat64(c2.Metrics.Reclaimed)
		}
		testenv.WaitUntil(t, 20*time.Second, func() bool { return reclaims() > 2*maxDeliveries },
			"the entry of the running attempt was not reclaimed past MaxDeliveries")
		require.Zero(t, r2.calls(), "not taken over while its lease lives")
		require.LessOrEqual(t, b.deliveries(t, o), 2, "each reclaim that found the lease was given back")

		// Its worker dies: it records nothing, and its lease runs out.
		stop1()
		testenv.Returned(t, done1, 10*time.Second)
		b.expireLeases(t, j.ID)

		b.untilSettled(t, 10*time.Second, func() bool { return b.finished(t, j) != "" && b.settled(t) },
			"the attempt was not taken over")
		t.Logf("taken over after %v reclaims", reclaims())
		require.Equal(t, job.StatusCompleted, b.job(t, j.ID).Status, "run again, not dead-lettered")
		require.Equal(t, 1, r2.calls())
		first, again := r1.seen()[0], r2.seen()[0]
		require.Equal(t, first.Key, again.Key, "the same Idempotency-Key")
		require.Equal(t, 1, again.Attempt)
		runs := b.runs(t, j.ID)
		require.Len(t, runs, 1, "one outcome")
		require.Equal(t, job.RunCompleted, runs[0].Status)
		require.Empty(t, b.leases(t, j.ID))
		require.Empty(t, b.entries(t, b.keys.Dead()))
		require.Zero(t, b.logs.FilterMessage("entry_dead_lettered").Len())
		require.Zero(t, testutil.ToFloat64(c2.Metrics.DeadLettered))
	})

	t.Run("GivesBackReclaimOfOverdueEntryWithALiveLease", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.claimedJob(func(j *job.Job) { j.Timeout = time.Minute })
		b.create(t, j)
		b.publish(t)
		o := firstAttempt(j)
		// Delivered past MaxDeliveries already (counted before reclaims were
		// given back), its attempt running under a live lease.
		b.start(t, time.Now(), time.Minute, o)
		xs, err := b.rdb.XReadGroup(b.ctx, &redis.XReadGroupArgs{
			Group: queue.Group, Consumer: "live", Streams: []string{b.keys.Ready(), ">"}, Count: 10, Block: -1,
		}).Result()
		require.NoError(t, err)
		require.NoError(t, b.rdb.Do(b.ctx, "XCLAIM", b.keys.Ready(), queue.Group, "live", 0, xs[0].Messages[0].ID, "RETRYCOUNT", 5).Err())

		r := newRunner()
		c := b.consumer(r, func(c *Worker) { c.Visibility, c.MaxDeliveries = 500*time.Millisecond, 3 })
		testenv.GoRun(t, c.Run)
		testenv.WaitUntil(t, 20*time.Second, func() bool { return testutil.ToFloat64(c.Metrics.Reclaimed) >= 4 },
			"the entry was not reclaimed")

		require.LessOrEqual(t, b.deliveries(t, o), 6, "the dead-letter path gives back what it leaves to the live worker")
		require.Zero(t, r.calls())
		require.Empty(t, b.runs(t, j.ID))
		require.Len(t, b.leases(t, j.ID), 1, "the live worker's lease stands")
		require.Empty(t, b.entries(t, b.keys.Dead()))
		require.Zero(t, testutil.ToFloat64(c.Metrics.DeadLettered))
	})

	t.Run("DeadLettersAttemptWhoseWorkersKeptDying", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.claimedJob(func(j *job.Job) { j.Timeout = 100 * time.Millisecond })
		b.create(t, j)
		b.publish(t)
		o := firstAttempt(j)
		// A worker started it, died, and so did those that took it over:
		// the attempt is leased, past its lease, the entry delivered 5 times.
		b.start(t, time.Now(), 0, o)
		xs, err := b.rdb.XReadGroup(b.ctx, &redis.XReadGroupArgs{
			Group: queue.Group, Consumer: "dead", Streams: []string{b.keys.Ready(), ">"}, Count: 10, Block: -1,
		}).Result()
		require.NoError(t, err)
		require.NoError(t, b.rdb.Do(b.ctx, "XCLAIM", b.keys.Ready(), queue.Group, "dead", 0, xs[0].Messages[0].ID, "RETRYCOUNT", 5).Err())

		r := newRunner()
		c := b.consumer(r, func(c *Worker) { c.Visibility, c.MaxDeliveries = time.Second, 3 })
		testenv.GoRun(t, c.Run)
		b.untilSettled(t, 10*time.Second, func() bool { return b.finished(t, j) != "" && b.settled(t) }, "the entry was not dead-lettered")

		require.Zero(t, r.calls(), "not taken over once more")
		require.Equal(t, job.StatusPermanentlyFailed, b.job(t, j.ID).Status)
		runs := b.runs(t, j.ID)
		require.Len(t, runs, 1)
		require.Equal(t, job.RunPermanentlyFailed, runs[0].Status)
		require.Empty(t, b.leases(t, j.ID), "its lease ends")
		require.Contains(t, runs[0].Error, "dead-lettered: delivered 6 times without an outcome (TOCK_MAX_DELIVERIES is 3)")
		require.Len(t, b.entries(t, b.keys.Dead()), 1)
	})
}

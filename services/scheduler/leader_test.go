package main

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/testenv"
)

// count is how many times msg was logged.
func count(logs *observer.ObservedLogs, msg string) int { return logs.FilterMessage(msg).Len() }

// messages lists what was logged, in order.
func messages(logs *observer.ObservedLogs) []string {
	var out []string
	for _, e := range logs.All() {
		out = append(out, e.Message)
	}
	return out
}

// lockValue is the loader lock's value (the holder's token), or "" if nobody
// holds it.
func (b *bundle) lockValue(t *testing.T) string {
	t.Helper()
	v, err := b.rdb.Get(b.ctx, b.keys.LoaderLock()).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	require.NoError(t, err)
	return v
}

func TestLeader(t *testing.T) {
	t.Parallel()

	t.Run("LoadsJobsDueWithinHorizon", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		overdue := newJob(b.now.Add(-2 * time.Second))
		soon := newJob(b.now.Add(2*time.Second), func(j *job.Job) { j.Priority = 5 })
		inHorizon := newJob(b.now.Add(30 * time.Second))
		beyond := newJob(b.now.Add(5 * time.Minute)) // the horizon is a minute
		b.create(t, overdue, soon, inHorizon, beyond)

		l, logs := b.leader(nil)
		testenv.GoRun(t, l.Run)
		b.untilStepped(t, 5*time.Second, func() bool {
			return b.loaded(t, overdue) && b.loaded(t, soon) && b.loaded(t, inHorizon)
		}, "the jobs due within the horizon were not loaded")
		for _, j := range []*job.Job{overdue, soon, inHorizon} {
			require.Equal(t, j.RunAt, b.score(t, firstAttempt(j)), "job %s is due in Redis at its run time", j.ID)
			require.Equal(t, job.StatusScheduled, b.job(t, j.ID).Status)
		}
		require.False(t, b.scheduled(t, firstAttempt(beyond)), "a job beyond the horizon is not loaded")
		require.Equal(t, beyond.RunAt, b.job(t, beyond.ID).DueAt, "a job beyond the horizon stays unclaimed")

		// A job created while leading is loaded by a later round.
		fresh := newJob(time.Now().Add(5 * time.Second))
		b.create(t, fresh)
		b.untilStepped(t, 5*time.Second, func() bool { return b.loaded(t, fresh) }, "a job created during the leadership was not loaded")
		require.False(t, b.scheduled(t, firstAttempt(beyond)))
		require.Equal(t, 1, count(logs, "leadership_gained"))
		// The round counts its claims once ClaimDue returns, just after the ZADD.
		b.untilStepped(t, 5*time.Second, func() bool { return testutil.ToFloat64(l.metrics.Claimed) == 4 },
			"tock_loader_claimed_total does not count the four occurrences loaded")
	})

	t.Run("OnlyOneInstanceHoldsTheLockUntilItStops", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// A 2 s lock: refreshed every 667 ms, so a slow test machine does not
		// let it lapse between refreshes.
		ttl := func(c *Config) { c.LockTTL = 2 * time.Second }
		a, aLogs := b.leader(nil, ttl)
		c, cLogs := b.leader(nil, ttl)
		stopA, doneA := testenv.GoRun(t, a.Run)
		stopC, doneC := testenv.GoRun(t, c.Run)

		b.untilStepped(t, 5*time.Second, func() bool {
			return count(aLogs, "leadership_gained")+count(cLogs, "leadership_gained") > 0
		}, "no instance became leader")
		holderLogs, otherLogs, stopHolder, holderDone := aLogs, cLogs, stopA, doneA
		if count(cLogs, "leadership_gained") > 0 {
			holderLogs, otherLogs, stopHolder, holderDone = cLogs, aLogs, stopC, doneC
		}
		token := b.lockValue(t)
		require.NotEmpty(t, token)

		// The holder keeps the lock well past its TTL by refreshing it, and the
		// other instance, retrying every 500 ms, never gets it meanwhile.
		held := time.Now()
		b.untilStepped(t, 10*time.Second, func() bool {
			require.Equal(t, token, b.lockValue(t), "the lock changed hands while its holder was running")
			ttl, err := b.rdb.PTTL(b.ctx, b.keys.LoaderLock()).Result()
			require.NoError(t, err)
			require.Greater(t, ttl, time.Duration(0), "the lock has a TTL")
			require.LessOrEqual(t, ttl, 2*time.Second)
			require.Zero(t, count(otherLogs, "leadership_gained"), "two instances led at once")
			return time.Since(held) > 3*time.Second
		}, "unreachable")

		first := newJob(time.Now())
		b.create(t, first)
		b.untilStepped(t, 5*time.Second, func() bool { return b.loaded(t, first) }, "the leader did not load a new job")

		stopHolder()
		testenv.Returned(t, holderDone, 10*time.Second)
		require.Equal(t, 1, count(holderLogs, "leadership_lost"))
		require.NotEqual(t, token, b.lockValue(t), "the holder released its lock when it stopped")

		b.untilStepped(t, 5*time.Second, func() bool { return count(otherLogs, "leadership_gained") == 1 },
			"the other instance did not take over")
		second := newJob(time.Now())
		b.create(t, second)
		b.untilStepped(t, 5*time.Second, func() bool { return b.loaded(t, second) }, "the new leader did not load a new job")
		require.Equal(t, 1, count(holderLogs, "leadership_gained"))
	})

	t.Run("StalledLeaderStopsAtFirstFailedRefresh", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		a, aLogs := b.leader(nil)
		c, cLogs := b.leader(nil)
		testenv.GoRun(t, a.Run)
		testenv.GoRun(t, c.Run)
		b.untilStepped(t, 5*time.Second, func() bool {
			return count(aLogs, "leadership_gained")+count(cLogs, "leadership_gained") > 0
		}, "no instance became leader")
		holderLogs, otherLogs := aLogs, cLogs
		if count(cLogs, "leadership_gained") > 0 {
			holderLogs, otherLogs = cLogs, aLogs
		}
		before := newJob(time.Now())
		b.create(t, before)
		b.untilStepped(t, 5*time.Second, func() bool { return b.loaded(t, before) }, "the leader did not load")

		// The holder stalled past its TTL and another instance took the lock:
		// the key now holds a token that is not the holder's.
		const intruder = "intruder-token"
		key := b.keys.LoaderLock()
		require.NoError(t, b.rdb.Del(b.ctx, key).Err())
		require.NoError(t, b.rdb.Set(b.ctx, key, intruder, 1500*time.Millisecond).Err())

		b.untilStepped(t, 3*time.Second, func() bool { return count(holderLogs, "leadership_lost") == 1 },
			"the holder did not give up leadership after its refresh failed: logged %v", func() string { return fmt.Sprint(messages(holderLogs)) })
		msgs := messages(holderLogs)
		failed := slices.Index(msgs, "lock_refresh_failed")
		require.GreaterOrEqual(t, failed, 0, "the failed refresh is logged: %v", msgs)
		require.Less(t, failed, slices.Index(msgs, "leadership_lost"), "leadership ends because the refresh failed: %v", msgs)
		require.Equal(t, 1, count(holderLogs, "lock_refresh_failed"))

		// While the foreign token holds the lock, nobody loads: the stalled
		// holder, still running, stopped at once. Each check of the job is
		// followed by a check that the intruder still held the lock.
		after := newJob(time.Now())
		b.create(t, after)
		b.untilStepped(t, 5*time.Second, func() bool {
			claimedNow := b.job(t, after.ID).DueAt.IsZero()
			if b.lockValue(t) != intruder {
				return true
			}
			require.False(t, claimedNow, "a job was loaded while another instance held the lock")
			require.False(t, b.scheduled(t, firstAttempt(after)))
			return false
		}, "the intruder's lock did not expire")

		// Once that lock expires, one instance takes over and loads the job.
		b.untilStepped(t, 5*time.Second, func() bool { return b.loaded(t, after) }, "nobody took over after the lock expired")
		require.Equal(t, 2, count(holderLogs, "leadership_gained")+count(otherLogs, "leadership_gained"),
			"exactly one instance leads after the intruder: holder %v, other %v", messages(holderLogs), messages(otherLogs))
	})

	t.Run("ReleasesLockWhenStopped", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		l, logs := b.leader(nil)
		stop, done := testenv.GoRun(t, l.Run)
		b.untilStepped(t, 5*time.Second, func() bool { return count(logs, "leadership_gained") == 1 }, "did not become leader")
		require.NotEmpty(t, b.lockValue(t))
		stop()
		testenv.Returned(t, done, 10*time.Second)
		require.Empty(t, b.lockValue(t), "the lock is deleted, not left to expire")
		require.Equal(t, 1, count(logs, "leadership_lost"))
	})
}

func TestReconcile(t *testing.T) {
	t.Parallel()

	t.Run("RequeuesLostClaims", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// The dashboard committed these claimed jobs; their ZADD may be lost.
		lost := newJob(b.now.Add(-2*time.Minute), claimed, func(j *job.Job) { j.Priority = 3 })
		recent := newJob(b.now.Add(-10*time.Second), claimed) // within LostAfter
		queued := newJob(b.now.Add(-2*time.Minute), claimed)
		running := newJob(b.now.Add(-2*time.Minute), claimed)
		failed := newJob(b.now.Add(-2*time.Minute), claimed)
		b.create(t, lost, recent, queued, running, failed)
		queuedAt := b.now.Add(time.Hour)
		require.NoError(t, b.q.Enqueue(b.ctx, []queue.Entry{{Occurrence: firstAttempt(queued), DueAt: queuedAt}}))
		// One attempt runs, leased in Redis with no row in Postgres; the
		// other has its outcome row, its retry to come.
		b.lease(t, firstAttempt(running), running.RunAt, b.now.Add(time.Minute))
		require.NoError(t, b.st.FinishRuns(b.ctx, []store.Result{outcome(firstAttempt(failed), job.RunFailed, b.now)}, b.now))

		l, logs := b.leader(func() time.Time { return b.now })
		l.reconcile(b.ctx)

		require.True(t, b.scheduled(t, firstAttempt(lost)), "a lost claim is re-added")
		require.Equal(t, lost.RunAt, b.score(t, firstAttempt(lost)), "due at its run time, so it is published at once")
		require.False(t, b.scheduled(t, firstAttempt(recent)), "a claim younger than LostAfter is left alone")
		require.Equal(t, queuedAt, b.score(t, firstAttempt(queued)), "a claim still in the due set is left alone")
		require.False(t, b.due(t, firstAttempt(running)), "a claim whose attempt runs is not re-added")
		require.False(t, b.scheduled(t, firstAttempt(failed)), "a claim whose attempt has an outcome is not re-added")
		require.Len(t, logs.FilterMessage("requeued_lost_claims").All(), 1)
		require.EqualValues(t, 1, logs.FilterMessage("requeued_lost_claims").All()[0].ContextMap()["jobs"])
	})

	t.Run("RequeuesAttemptsPastTheirLease", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		prio := func(j *job.Job) { j.Priority = -4 }
		first := newJob(b.now.Add(-time.Second), claimed, prio)
		retry := newJob(b.now.Add(-time.Second), claimed, prio)
		recent := newJob(b.now.Add(-time.Second), claimed)
		live := newJob(b.now.Add(-time.Second), claimed)
		b.create(t, first, retry, recent, live)
		// retry's first attempt failed; its second runs. Two leases end in
		// 100 ms (their workers die), one in 30 s, one in five minutes.
		second := firstAttempt(retry).Next()
		require.NoError(t, b.st.FinishRuns(b.ctx, []store.Result{outcome(firstAttempt(retry), job.RunFailed, b.now)}, b.now))
		b.lease(t, firstAttempt(first), first.RunAt, b.now.Add(100*time.Millisecond))
		b.lease(t, second, b.now, b.now.Add(100*time.Millisecond))
		b.lease(t, firstAttempt(recent), recent.RunAt, b.now.Add(30*time.Second))
		b.lease(t, firstAttempt(live), live.RunAt, b.now.Add(5*time.Minute))

		// A second past LostAfter after the short leases ended: the
		// reclaimers had their chance; the reconciler puts them back.
		later := b.now.Add(testConfig().LostAfter + time.Second)
		l, logs := b.leader(func() time.Time { return later })
		l.reconcile(b.ctx)

		require.Equal(t, later, b.score(t, firstAttempt(first)), "the attempt past its lease is re-added, due now")
		require.Equal(t, later, b.score(t, second), "the same attempt, not a new one")
		require.False(t, b.scheduled(t, firstAttempt(first).Next()))
		require.False(t, b.scheduled(t, firstAttempt(retry)), "the attempt that has its outcome is not")
		require.False(t, b.due(t, firstAttempt(recent)), "a lease that ended less than LostAfter ago is left to the reclaimers")
		require.False(t, b.due(t, firstAttempt(live)), "an attempt within its lease is left alone")
		requeued := logs.FilterMessage("requeued_expired_leases").All()
		require.Len(t, requeued, 1)
		require.EqualValues(t, 2, requeued[0].ContextMap()["runs"])
		require.Zero(t, count(logs, "requeued_lost_claims"), "a claim whose attempt is leased is not lost")
	})

	t.Run("SweepsEveryPartition", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// A job due before the loader's window (a claim released late): the
		// windowed rounds cannot see it, the reconciler's full sweep does.
		old := newJob(b.now.Add(-3 * time.Hour))
		b.create(t, old)
		l, _ := b.leader(func() time.Time { return b.now })
		l.watermark = b.now.Add(-time.Minute)
		l.load(b.ctx)
		require.False(t, b.loaded(t, old), "outside the windowed round")
		l.reconcile(b.ctx)
		require.True(t, b.loaded(t, old))
	})
}

// TestDrainDead: what workers set aside in a dead stream ends in Postgres
// and leaves Redis; a drain that saved entries but stopped before deleting
// them saves nothing twice the next time.
func TestDrainDead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	j := newJob(b.now.Add(-time.Minute), claimed)
	b.create(t, j)
	occ := firstAttempt(j)
	require.NoError(t, b.q.SetAside(b.ctx, []queue.Message{
		{ID: "1-1", Occurrence: occ, Deliveries: 11, Err: errors.New("dead-lettered: delivered 11 times"), Raw: map[string]any{"m": occ.Member(), "d": "1"}},
		{ID: "1-2", Err: errors.New("parse member \"garbage\": want 5 or 7 parts"), Raw: map[string]any{"m": "garbage"}},
	}))
	// A drain that saved them and died before deleting them from Redis.
	entries, err := b.q.DeadEntries(b.ctx, 10)
	require.NoError(t, err)
	require.Len(t, entries, 2)
	kept, _ := keptEntries(0, entries)
	require.NoError(t, b.st.SaveDeadEntries(b.ctx, kept))

	l, logs := b.leader(func() time.Time { return b.now })
	l.reconcile(b.ctx)

	left, err := b.rdb.XLen(b.ctx, b.keys.Dead()).Result()
	require.NoError(t, err)
	require.Zero(t, left, "the dead stream is drained")
	got, err := b.st.DeadEntries(b.ctx, 0)
	require.NoError(t, err)
	require.Len(t, got, 2, "each entry kept once")
	require.Equal(t, occ.Member(), got[0].Fields["m"])
	require.Equal(t, 11, got[0].Deliveries)
	require.Equal(t, j.ID, got[0].JobID)
	require.Equal(t, j.Owner, got[0].Owner)
	require.Contains(t, got[0].Error, "dead-lettered")
	require.Equal(t, "garbage", got[1].Fields["m"])
	require.Contains(t, got[1].Error, "want 5 or 7 parts")
	require.Equal(t, uuid.Nil, got[1].JobID, "a member that does not parse names no job")
	require.Len(t, logs.FilterMessage("dead_entries_drained").All(), 1)
}

func TestUpkeep(t *testing.T) {
	t.Parallel()

	t.Run("CreatesRunPartitionsAheadAndDropsExpired", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		l, logs := b.leader(func() time.Time { return b.now }, func(c *Config) {
			c.PartitionsAhead = 10 * 24 * time.Hour
			c.RunRetention = 24 * time.Hour
		})
		l.upkeep(b.ctx)

		rows, err := b.st.Pool().Query(b.ctx, `SELECT c.relname FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'job_runs'::regclass AND c.relname ~ '^job_runs_[0-9]{8}$'`)
		require.NoError(t, err)
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)

		day := func(d int) string { return "job_runs_" + b.now.AddDate(0, 0, d).Format("20060102") }
		for d := -1; d <= 10; d++ {
			require.Contains(t, names, day(d), "day %+d has its partition", d)
		}
		require.NotContains(t, names, day(-2), "the partition past retention is dropped")
		require.Len(t, names, 12)

		entries := logs.FilterMessage("partition_upkeep").All()
		require.Len(t, entries, 1)
		require.Contains(t, entries[0].ContextMap()["dropped"], day(-2))
		require.Zero(t, count(logs, "partition_upkeep_failed"))
	})
}

func TestRebuild(t *testing.T) {
	t.Parallel()

	t.Run("PutsBackWhatRedisLost", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// A claimed one-off job due in five minutes, and one whose first attempt
		// failed with its retry only in Redis; then Redis loses everything.
		soon := newJob(b.now.Add(5*time.Minute), claimed)
		failing := newJob(b.now.Add(-time.Second), claimed)
		b.create(t, soon, failing)
		failed := outcome(firstAttempt(failing), job.RunFailed, b.now)
		failed.Error = "status 500"
		require.NoError(t, b.st.FinishRuns(b.ctx, []store.Result{failed}, b.now))
		require.NoError(t, b.rdb.Del(b.ctx, b.keys.Marker(), b.keys.Due(), b.keys.Ready()).Err())

		l, logs := b.leader(func() time.Time { return b.now })
		l.reconcile(b.ctx)

		require.True(t, b.scheduled(t, firstAttempt(soon)), "a claimed job due later is put back")
		require.True(t, b.scheduled(t, firstAttempt(failing).Next()), "a lost retry is put back")
		require.Len(t, logs.FilterMessage("redis_rebuilt").All(), 1)
		intact, err := b.q.Intact(b.ctx, 0)
		require.NoError(t, err)
		require.True(t, intact, "the marker is set once the rebuild worked")

		l.reconcile(b.ctx)
		require.Len(t, logs.FilterMessage("redis_rebuilt").All(), 1, "an intact Redis is not rebuilt again")
	})
}

package main

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tockhq/tock/pkg/config"
	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/metrics"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/testenv"
	"github.com/tockhq/tock/pkg/testsignal"
)

// goleak runs once after all tests: inside parallel tests it would see the
// goroutines of the others.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var owner = uuid.MustParse("0190aaaa-0000-7000-8000-00000000000a")

// bundle is what a scheduler test works with: a migrated schema of its own on
// the real Postgres, and a key prefix of its own on the real Redis.
type bundle struct {
	ctx   context.Context
	st    *store.Store
	rdb   redis.UniversalClient
	queue *queue.Queue
	q     *queue.Shard // the queue's one shard
	keys  queue.Keys
	now   time.Time
	// stepped is raised by the bundle's leaders (see untilStepped).
	stepped *testsignal.Signal
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := setupRedis(t)
	b.st = testenv.Store(t)
	// Redis starts out holding what tock put there; TestRebuild removes the
	// marker to stand for a Redis that lost its data.
	if err := b.q.MarkIntact(b.ctx, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

// setupRedis is setup without Postgres, for the publisher, which never uses it.
func setupRedis(t *testing.T) *bundle {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	q := queue.New(rdb, prefix, 1)
	return &bundle{
		ctx: t.Context(), rdb: rdb, queue: q, q: q.Home(), keys: q.Home().Keys(),
		now: time.Now().UTC().Truncate(time.Millisecond), stepped: testsignal.New(),
	}
}

// testConfig is a leader configuration fast enough for tests: a 1 s lock
// (refreshed every 333 ms, retried every 250 ms) and a load every 50 ms. The
// reconciler and hourly upkeep stay out of the way unless a test calls them.
func testConfig() Config {
	return Config{
		Scheduling:        config.Scheduling{Horizon: time.Minute},
		LoadInterval:      50 * time.Millisecond,
		LoadBatch:         100,
		LockTTL:           time.Second,
		PublishBatch:      100,
		PublishTick:       50 * time.Millisecond,
		ReconcileInterval: time.Hour,
		LostAfter:         time.Minute,
		RunRetention:      30 * 24 * time.Hour,
		PartitionsAhead:   3 * 24 * time.Hour,
		RetentionInterval: time.Hour,
		RetentionBatch:    1000,
	}
}

// observed returns a logger that records every entry, for assertions on what a
// component logged.
func observed() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	return zap.New(core), logs
}

// leader returns a Leader on b's store and keys with testConfig changed by
// mods, and the logs it writes.
func (b *bundle) leader(clock func() time.Time, mods ...func(*Config)) (*Leader, *observer.ObservedLogs) {
	cfg := testConfig()
	for _, mod := range mods {
		mod(&cfg)
	}
	if clock == nil {
		clock = time.Now
	}
	log, logs := observed()
	return &Leader{store: b.st, queue: b.queue, locker: redislock.New(b.rdb), log: log, clock: clock, cfg: cfg,
		metrics: metrics.NewScheduler(prometheus.NewRegistry()), stepped: b.stepped}, logs
}

// untilStepped waits until cond holds, rechecking it each time a leader of
// b gains or loses leadership or ends a load or reconcile round.
func (b *bundle) untilStepped(t *testing.T, timeout time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	testenv.WaitFor(t, b.stepped, timeout, cond, msg, args...)
}

// newJob returns a scheduled one-off ping job due at runAt, not claimed yet
// (DueAt = RunAt), as the dashboard stores a job beyond the load horizon.
func newJob(runAt time.Time, mods ...func(*job.Job)) *job.Job {
	return testenv.Job(owner, runAt, mods...)
}

// claimed marks a job as already claimed into Redis (DueAt zero), as the
// dashboard stores a job due within the horizon before its ZADD.
func claimed(j *job.Job) { j.DueAt = time.Time{} }

func (b *bundle) create(t *testing.T, jobs ...*job.Job) {
	t.Helper()
	require.NoError(t, b.st.CreateJobs(b.ctx, jobs, store.Create{}))
}

func (b *bundle) job(t *testing.T, id uuid.UUID) *job.Job {
	t.Helper()
	j, err := b.st.GetJob(b.ctx, store.AnyOwner, id)
	require.NoError(t, err)
	return j
}

// firstAttempt is the occurrence a claim of j hands to Redis.
func firstAttempt(j *job.Job) job.Occurrence {
	return job.Occurrence{JobID: j.ID, ScheduledFor: j.RunAt, Attempt: 1, Priority: j.Priority}.Route(j.Owner, j.Payload)
}

// scheduled reports whether o is in Redis: in the due set, held back in a
// lane's held set, or running (leased in its job's run hash).
func (b *bundle) scheduled(t *testing.T, o job.Occurrence) bool {
	t.Helper()
	in, err := b.q.Scheduled(b.ctx, []job.Occurrence{o})
	require.NoError(t, err)
	return in[0]
}

// due reports whether o is in the due set itself.
func (b *bundle) due(t *testing.T, o job.Occurrence) bool {
	t.Helper()
	_, err := b.rdb.ZScore(b.ctx, b.keys.Due(), o.Member()).Result()
	if errors.Is(err, redis.Nil) {
		return false
	}
	require.NoError(t, err)
	return true
}

// lease starts attempt o as a worker does: its lease, from b.now until
// until, goes into its job's run hash in Redis, where attempts in flight
// live; Postgres holds nothing of it until its outcome.
func (b *bundle) lease(t *testing.T, o job.Occurrence, dueAt, until time.Time) {
	t.Helper()
	got, err := b.queue.Of(o.JobID).Start(b.ctx, []queue.Start{{Generation: o.Generation, Lease: queue.Lease{
		Occurrence: o, Worker: "w", Run: job.NewID(), StartedAt: b.now, Until: until, DueAt: dueAt, Entry: "0-1", Member: o.Member(),
	}}}, b.now, store.OverlapWaitKept)
	require.NoError(t, err)
	require.Equal(t, []int{queue.StartRun}, got, "attempt %s is leased", o.Member())
}

// outcome is attempt o's outcome, due and started at its scheduled time and
// finished at: the one row FinishRuns writes for it.
func outcome(o job.Occurrence, status job.RunStatus, at time.Time) store.Result {
	return store.Result{Occurrence: o, Owner: o.Owner, Status: status, DueAt: o.ScheduledFor, StartedAt: o.ScheduledFor, FinishedAt: at}
}

// score is o's due time in the due set; o must be there.
func (b *bundle) score(t *testing.T, o job.Occurrence) time.Time {
	t.Helper()
	s, err := b.rdb.ZScore(b.ctx, b.keys.Due(), o.Member()).Result()
	require.NoError(t, err, "member %s is not in the due set", o.Member())
	return time.UnixMilli(int64(s)).UTC()
}

// loaded reports whether the loader handed j to Redis: claimed in Postgres
// (due_at NULL) and its first attempt in the due set.
func (b *bundle) loaded(t *testing.T, j *job.Job) bool {
	t.Helper()
	return b.job(t, j.ID).DueAt.IsZero() && b.scheduled(t, firstAttempt(j))
}

// streamEntry is one decoded entry of the ready stream.
type streamEntry struct {
	id  string
	ms  int64 // the millisecond part of the entry id: when Redis appended it
	occ job.Occurrence
	due int64 // the d field: the due time in unix ms
}

func (b *bundle) stream(t *testing.T) []streamEntry {
	t.Helper()
	xs, err := b.rdb.XRange(b.ctx, b.keys.Ready(), "-", "+").Result()
	require.NoError(t, err)
	out := make([]streamEntry, 0, len(xs))
	for _, x := range xs {
		var e streamEntry
		e.id = x.ID
		msPart, _, _ := strings.Cut(x.ID, "-")
		var err error
		e.ms, err = strconv.ParseInt(msPart, 10, 64)
		require.NoError(t, err, "entry id %s", x.ID)
		m, ok := x.Values["m"].(string)
		require.True(t, ok, "entry %s has no member", x.ID)
		e.occ, err = job.ParseMember(m)
		require.NoError(t, err)
		d, ok := x.Values["d"].(string)
		require.True(t, ok, "entry %s has no due time", x.ID)
		e.due, err = strconv.ParseInt(d, 10, 64)
		require.NoError(t, err, "entry %s due time", x.ID)
		out = append(out, e)
	}
	return out
}

package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
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

// bundle is what a consumer test works with: a migrated schema of its own on
// the real Postgres, a key prefix of its own on the real Redis (with the
// consumer group created), and a logger that records what the consumer logs.
type bundle struct {
	ctx   context.Context
	st    *store.Store
	rdb   redis.UniversalClient
	queue *queue.Queue
	q     *queue.Shard // shard 0, the only one unless setupShards asked for more
	keys  queue.Keys
	now   time.Time
	log   *zap.Logger
	logs  *observer.ObservedLogs
	// settledSignal is raised when a consumer of the bundle settles.
	settledSignal *testsignal.Signal
}

func setup(t *testing.T) *bundle { return setupShards(t, 1) }

// setupShards is setup with the queue spread over n shards.
func setupShards(t *testing.T, n int) *bundle {
	t.Helper()
	st := testenv.Store(t)
	rdb, prefix := testenv.Redis(t)
	q := queue.New(rdb, prefix, n)
	core, logs := observer.New(zapcore.DebugLevel)
	b := &bundle{
		ctx: t.Context(), st: st, rdb: rdb, queue: q, q: q.Home(), keys: q.Home().Keys(),
		now: time.Now().UTC().Truncate(time.Millisecond), log: zap.New(core), logs: logs,
		settledSignal: testsignal.New(),
	}
	require.NoError(t, q.EnsureGroup(b.ctx))
	return b
}

// consumer returns a Consumer on b with settings fast enough for tests,
// changed by mods.
func (b *bundle) consumer(r Runner, mods ...func(*Worker)) *Worker {
	c := &Worker{
		Store: b.st, Queue: b.queue, Runner: r, Log: b.log, Clock: time.Now,
		Name: "consumer-" + job.NewID().String()[24:], Concurrency: 4, Batch: 4, Block: 50 * time.Millisecond,
		Visibility: 30 * time.Second, LeaseMargin: time.Second, MaxDeliveries: 10,
		BackoffBase: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond, Grace: 5 * time.Second,
		Metrics: metrics.NewWorker(prometheus.NewRegistry()),
		settled: b.settledSignal,
	}
	for _, mod := range mods {
		mod(c)
	}
	return c
}

// untilSettled waits until cond holds, rechecking it each time a consumer
// of b has settled entries (when outcomes are recorded and acknowledged).
func (b *bundle) untilSettled(t *testing.T, timeout time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	testenv.WaitFor(t, b.settledSignal, timeout, cond, msg, args...)
}

// publishing keeps moving due members to the stream, as the scheduler's
// publisher does, so retries come back to the consumer.
func (b *bundle) publishing(t *testing.T) {
	t.Helper()
	testenv.GoRun(t, func(ctx context.Context) {
		for ctx.Err() == nil {
			for _, q := range b.queue.Shards() {
				if _, err := q.Publish(ctx, 100, time.Time{}, queue.Caps{}); err != nil && ctx.Err() == nil {
					t.Errorf("publish: %v", err)
					return
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
}

// claimedJob returns a scheduled one-off ping job due at b.now and already
// claimed into Redis (DueAt zero), as the loader or the dashboard leaves it.
func (b *bundle) claimedJob(mods ...func(*job.Job)) *job.Job {
	j := testenv.Job(owner, b.now, func(j *job.Job) { j.DueAt, j.CreatedAt, j.UpdatedAt = time.Time{}, b.now, b.now })
	for _, mod := range mods {
		mod(j)
	}
	return j
}

// firstAttempt is the occurrence a claim of j hands to Redis.
func firstAttempt(j *job.Job) job.Occurrence {
	return job.Occurrence{JobID: j.ID, ScheduledFor: j.RunAt, Attempt: 1, Priority: j.Priority}.Route(j.Owner, j.Payload)
}

// create stores jobs and puts their first attempts into the due set.
func (b *bundle) create(t *testing.T, jobs ...*job.Job) {
	t.Helper()
	require.NoError(t, b.st.CreateJobs(b.ctx, jobs, store.Create{}))
	entries := make([]queue.Entry, len(jobs))
	for i, j := range jobs {
		entries[i] = queue.Entry{Occurrence: firstAttempt(j), DueAt: j.RunAt}
	}
	require.NoError(t, b.queue.Enqueue(b.ctx, entries))
}

// publish moves every due member to the ready streams and returns how many.
func (b *bundle) publish(t *testing.T) int {
	t.Helper()
	moved := 0
	for _, q := range b.queue.Shards() {
		p, err := q.Publish(b.ctx, 1000, time.Now(), queue.Caps{})
		require.NoError(t, err)
		moved += p.Moved
	}
	return moved
}

func (b *bundle) job(t *testing.T, id uuid.UUID) *job.Job {
	t.Helper()
	j, err := b.st.GetJob(b.ctx, store.AnyOwner, id)
	require.NoError(t, err)
	return j
}

// runs returns j's attempts, first attempt first.
func (b *bundle) runs(t *testing.T, id uuid.UUID) []job.Run {
	t.Helper()
	runs, err := b.st.ListRuns(b.ctx, store.RunFilter{JobID: id, Limit: 100})
	require.NoError(t, err)
	for i, k := 0, len(runs)-1; i < k; i, k = i+1, k-1 {
		runs[i], runs[k] = runs[k], runs[i]
	}
	return runs
}

// streamLen is how many entries the ready stream holds, read or not.
func (b *bundle) streamLen(t *testing.T) int64 {
	t.Helper()
	n, err := b.rdb.XLen(b.ctx, b.keys.Ready()).Result()
	require.NoError(t, err)
	return n
}

// pending is how many entries were delivered and not acknowledged.
func (b *bundle) pending(t *testing.T) int64 {
	t.Helper()
	p, err := b.rdb.XPending(b.ctx, b.keys.Ready(), queue.Group).Result()
	require.NoError(t, err)
	return p.Count
}

// entries returns the raw entries of a stream.
func (b *bundle) entries(t *testing.T, stream string) []redis.XMessage {
	t.Helper()
	xs, err := b.rdb.XRange(b.ctx, stream, "-", "+").Result()
	require.NoError(t, err)
	return xs
}

// scheduled reports whether o is in the due set.
func (b *bundle) scheduled(t *testing.T, o job.Occurrence) bool {
	t.Helper()
	in, err := b.queue.Scheduled(b.ctx, []job.Occurrence{o})
	require.NoError(t, err)
	return in[0]
}

// runner is a fake Runner: it records every task, answers with outcome (OK
// when nil) and, when hold is set, blocks each task until let releases it or
// its context ends, as a real executor returns at its deadline.
type runner struct {
	outcome func(jobtype.Task) jobtype.Outcome
	hold    bool
	gate    chan struct{}

	mu         sync.Mutex
	tasks      []jobtype.Task
	running    int
	maxRunning int
	abandoned  int
}

func newRunner() *runner { return &runner{gate: make(chan struct{})} }

// holding returns a runner whose tasks block until let releases them.
func holding() *runner {
	r := newRunner()
	r.hold = true
	return r
}

func (r *runner) Execute(ctx context.Context, t jobtype.Task) jobtype.Outcome {
	r.mu.Lock()
	r.tasks = append(r.tasks, t)
	r.running++
	r.maxRunning = max(r.maxRunning, r.running)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.running--
		r.mu.Unlock()
	}()
	if r.hold {
		select {
		case <-r.gate:
		case <-ctx.Done():
			r.mu.Lock()
			r.abandoned++
			r.mu.Unlock()
			return jobtype.Outcome{Error: ctx.Err().Error()}
		}
	}
	if r.outcome != nil {
		return r.outcome(t)
	}
	return jobtype.Outcome{OK: true, StatusCode: 200, Output: "pong " + t.Key}
}

// let releases n held tasks, waiting for each to be there to take it.
func (r *runner) let(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case r.gate <- struct{}{}:
		case <-time.After(10 * time.Second):
			t.Fatal("no held task to release")
		}
	}
}

func (r *runner) seen() []jobtype.Task {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]jobtype.Task(nil), r.tasks...)
}

func (r *runner) calls() int { return len(r.seen()) }

// concurrency reports how many tasks are running and the most that ever ran at once.
func (r *runner) concurrency() (running, most int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running, r.maxRunning
}

// failing answers every attempt with a failure.
func failing(jobtype.Task) jobtype.Outcome {
	return jobtype.Outcome{StatusCode: 503, Error: "target answered 503"}
}

package main

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/metrics"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/testsignal"
)

// Runner executes one attempt; jobtype.Registry is the real one.
type Runner interface {
	Execute(ctx context.Context, t jobtype.Task) jobtype.Outcome
}

// Consumer reads the ready streams of every shard in batches and runs what it
// reads on one bounded pool. A slot is taken before an entry is read, so the
// worker never holds more entries than it can run, and entries it has not
// taken stay in the stream, in priority order, for whichever worker frees a
// slot first.
//
// Per batch it makes one Postgres round trip to start the attempts
// (store.StartRuns; a batch whose data Postgres refuses is halved until
// only the refused entries are left out) and, through the recorder, one to
// record their outcomes (store.FinishRuns, a group commit) and one Redis
// round trip to schedule retries and acknowledge (queue.Settle).
type Consumer struct {
	Store  *store.Store
	Queue  *queue.Queue
	Runner Runner
	Log    *zap.Logger
	Clock  func() time.Time

	Name        string        // consumer name in the group, unique per process
	Concurrency int           // attempts run at once
	Batch       int           // most entries read per XREADGROUP
	Block       time.Duration // XREADGROUP BLOCK
	Visibility  time.Duration // pending this long, an entry is reclaimed
	LeaseMargin time.Duration // lease = timeout + margin
	BackoffBase time.Duration
	BackoffMax  time.Duration
	Grace       time.Duration // on shutdown, in-flight attempts get this long
	// MisfireThreshold: a recurring occurrence starting later than this is
	// judged by its job's misfire policy before it runs.
	MisfireThreshold time.Duration
	// AutoPauseAfter pauses a recurring job whose last this many occurrences
	// all failed permanently; 0 never does.
	AutoPauseAfter int
	// MaxDeliveries: an entry delivered more often than this without an
	// outcome (Postgres refused to start it, or its worker died each time)
	// is dead-lettered instead of started again; 0 never dead-letters.
	MaxDeliveries int
	// Metrics receives each attempt's lateness when it starts and its outcome
	// once recorded.
	Metrics *metrics.Worker
	// Tracer makes a span per attempt and sends its trace context to the
	// target; nil (tracing off) makes none and sends none.
	Tracer trace.Tracer

	// settled is raised after each settle, for tests to wait on; nil in
	// production.
	settled *testsignal.Signal

	slots   *slotPool
	results chan result
	// ended takes each entry whose attempt has ended, for releaser to give
	// its places in its lanes back before the group commit settles it.
	ended chan queue.Message
	// attempts are the attempts running now, for aborts to stop.
	attempts *attempts
	// alerts holds a token per failure alert in flight (see maxAlerts).
	alerts chan struct{}
}

// Run consumes until ctx ends, then stops fetching, lets in-flight attempts
// finish within the grace period, records them, and returns. Attempts still
// running after the grace period are abandoned unrecorded and unacknowledged:
// their lease expires and another worker takes them over.
func (c *Consumer) Run(ctx context.Context) {
	if c.Metrics == nil {
		c.Metrics = metrics.NewWorker(prometheus.NewRegistry()) // counted, not served
	}
	c.slots = newSlotPool(c.Concurrency)
	c.alerts = make(chan struct{}, maxAlerts)
	c.results = make(chan result, c.Concurrency)
	c.ended = make(chan queue.Message, c.Concurrency)
	c.attempts = newAttempts()
	// exec outlives ctx by the grace period, so in-flight attempts can finish.
	execCtx, abandon := context.WithCancel(context.WithoutCancel(ctx))
	defer abandon()

	var fetchers, running sync.WaitGroup
	recorded, released := make(chan struct{}), make(chan struct{})
	go func() {
		c.record(execCtx)
		close(recorded)
	}()
	go func() {
		c.releaser(execCtx)
		close(released)
	}()
	fetchers.Go(func() { c.watchAborts(ctx) })
	// Two fetchers per shard: one reads new entries, one reclaims.
	shared := len(c.Queue.Shards()) > 1
	for _, q := range c.Queue.Shards() {
		fetchers.Go(func() { c.fetch(ctx, execCtx, &running, q, false, shared) })
		fetchers.Go(func() { c.fetch(ctx, execCtx, &running, q, true, shared) })
	}
	fetchers.Wait()

	// Past the grace period everything still in flight is abandoned: attempts
	// and the recorder's retries alike, so Run always returns.
	grace := time.AfterFunc(c.Grace, func() {
		c.Log.Warn("shutdown_grace_expired_abandoning_attempts")
		abandon()
	})
	defer grace.Stop()
	running.Wait()
	close(c.ended)
	close(c.results)
	<-released
	<-recorded
}

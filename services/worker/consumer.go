package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/metrics"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/schedule"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/worker/executor"
)

// Runner executes one attempt; executor.Registry is the real one.
type Runner interface {
	Execute(ctx context.Context, t executor.Task) executor.Outcome
}

// Consumer reads the ready streams of every shard in batches and runs what it
// reads on one bounded pool. A slot is taken before an entry is read, so the
// worker never holds more entries than it can run, and entries it has not
// taken stay in the stream, in priority order, for whichever worker frees a
// slot first.
//
// Per batch it makes one Postgres round trip to start the attempts
// (store.StartRuns) and, through the recorder, one to record their outcomes
// (store.FinishRuns, a group commit) and one Redis round trip to schedule
// retries and acknowledge (queue.Settle).
type Consumer struct {
	Store  *store.Store
	Queue  *queue.Ring
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
	// Metrics receives each attempt's lateness when it starts and its outcome
	// once recorded.
	Metrics *metrics.Worker

	slots   chan struct{}
	results chan result
	// ended takes each entry whose attempt has ended, for releaser to give
	// its places in its lanes back before the group commit settles it.
	ended chan queue.Message
	// attempts are the attempts running now, for aborts to stop.
	attempts *attempts
}

type result struct {
	msg     queue.Message
	started store.Started
	outcome executor.Outcome
	at      time.Time
	skip    string // why a misfire policy skipped it; empty when it ran
	// aborted says who stopped it while it ran; nil when nobody did.
	aborted *abortedError
}

// Run consumes until ctx ends, then stops fetching, lets in-flight attempts
// finish within the grace period, records them, and returns. Attempts still
// running after the grace period are abandoned unrecorded and unacknowledged:
// their lease expires and another worker takes them over.
func (c *Consumer) Run(ctx context.Context) {
	if c.Metrics == nil {
		c.Metrics = metrics.NewWorker(prometheus.NewRegistry()) // counted, not served
	}
	c.slots = make(chan struct{}, c.Concurrency)
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

// releaser gives back, in batches, the places in their lanes of entries
// whose attempts ended (queue.Ring.Release), so that an owner's next attempt
// does not wait for the group commit of this one's outcome. A failure is
// logged, once per outage, and dropped: settling the entries then gives
// their places back.
func (c *Consumer) releaser(ctx context.Context) {
	const maxBatch = 1024
	failing := false
	for m := range c.ended {
		byShard := map[int][]string{}
		add := func(m queue.Message) { byShard[m.Shard] = append(byShard[m.Shard], m.ID) }
		add(m)
	drain:
		for n := 1; n < maxBatch; n++ {
			select {
			case m, ok := <-c.ended:
				if !ok {
					break drain
				}
				add(m)
			default:
				break drain
			}
		}
		err := c.Queue.Release(ctx, byShard)
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			c.Log.Warn("release_failed", zap.Error(err))
			failing = true
		case err == nil:
			failing = false
		}
	}
}

// fetch fills free slots from q's stream, or, when reclaim is set, from
// entries other consumers left pending past the visibility timeout. When the
// slots are shared with other shards' fetchers, a fetcher waiting on an empty
// stream holds one slot, not a batch's worth, so it starves no other shard.
func (c *Consumer) fetch(ctx, execCtx context.Context, running *sync.WaitGroup, q *queue.Queue, reclaim, shared bool) {
	var tick *time.Ticker
	if reclaim {
		tick = time.NewTicker(max(c.Visibility/3, 100*time.Millisecond))
		defer tick.Stop()
	}
	failing := false
	for {
		if reclaim {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
		// Take one slot, waiting if all are busy, then as many more as are free.
		select {
		case <-ctx.Done():
			return
		case c.slots <- struct{}{}:
		}
		n := 1
	more:
		for n < c.Batch {
			select {
			case c.slots <- struct{}{}:
				n++
			default:
				break more
			}
		}
		var msgs []queue.Message
		var err error
		switch {
		case reclaim:
			msgs, err = q.Reclaim(ctx, c.Name, c.Visibility, n)
		case shared:
			msgs, err = q.Read(ctx, c.Name, n, -1)
			if err == nil && len(msgs) == 0 {
				c.release(n - 1)
				n = 1
				msgs, err = q.Read(ctx, c.Name, n, c.Block)
			}
		default:
			msgs, err = q.Read(ctx, c.Name, n, c.Block)
		}
		if err != nil {
			c.release(n)
			if ctx.Err() != nil {
				return
			}
			if !failing {
				c.Log.Warn("read_failed", zap.Bool("reclaim", reclaim), zap.Error(err))
				failing = true
			}
			sleep(ctx, time.Second)
			continue
		}
		failing = false
		if reclaim && len(msgs) > 0 {
			c.Metrics.Reclaimed.Add(float64(len(msgs)))
		}
		c.release(n - len(msgs))
		if len(msgs) > 0 {
			// On this goroutine, not one of its own: concurrent starts of
			// small batches made Postgres spend a 100,000-job burst on lock
			// contention (StartRuns p50 141 ms against 17 ms, and the burst
			// 1.7 times as long in make bench).
			c.handle(ctx, execCtx, q, msgs, running)
		}
	}
}

func (c *Consumer) release(n int) {
	for range n {
		<-c.slots
	}
}

// handle starts a batch of entries, each holding one slot. Its Postgres and
// Redis calls end with ctx (fetching stops at shutdown, leaving entries
// pending); the attempts it starts run under execCtx, which outlives ctx by
// the grace period.
func (c *Consumer) handle(ctx, execCtx context.Context, q *queue.Queue, msgs []queue.Message, running *sync.WaitGroup) {
	var poison []queue.Message
	byMember := make(map[string]queue.Message, len(msgs))
	starts := make([]store.Start, 0, len(msgs))
	for _, m := range msgs {
		if m.Err != nil {
			poison = append(poison, m)
			continue
		}
		member := attemptKey(m.Occurrence)
		if _, dup := byMember[member]; dup {
			// The same attempt twice in one batch (a re-add after a fault):
			// run it once, acknowledge the copy with the outcome of the first.
			poison = append(poison, m)
			continue
		}
		byMember[member] = m
		starts = append(starts, store.Start{Occurrence: m.Occurrence, DueAt: m.DueAt})
	}
	if len(poison) > 0 {
		c.release(len(poison))
		c.setAside(ctx, q, poison)
	}
	if len(starts) == 0 {
		return
	}
	// The clock is read on every try: a start retried through an outage must
	// not write a lease that expired while it waited, or another worker would
	// take the attempt over at once.
	var now time.Time
	started, err := retryPG(ctx, c.Log, func() ([]store.Started, error) {
		now = c.Clock()
		return c.Store.StartRuns(ctx, starts, now, c.LeaseMargin)
	})
	if err != nil {
		// ctx ended, or Postgres refused the batch's data: leave the entries
		// pending; they are reclaimed after the visibility timeout.
		if ctx.Err() == nil {
			c.Log.Error("start_runs_refused", zap.Int("entries", len(starts)), zap.Error(err))
		}
		c.release(len(starts))
		return
	}
	for _, st := range started {
		key := attemptKey(job.Occurrence{JobID: st.Run.JobID, ScheduledFor: st.Run.ScheduledFor,
			Attempt: st.Run.Attempt, Generation: st.Generation})
		m, ok := byMember[key]
		if !ok {
			// Cannot happen for entries ParseMember accepted; never run an
			// attempt without its entry, and never free its slot twice.
			c.Log.Error("started_run_without_entry", zap.String("job_id", st.Run.JobID.String()))
			continue
		}
		delete(byMember, key)
		// Every attempt started counts, a skipped misfire too: its lateness
		// is what made it one. A clock skewed behind Redis's counts as on time.
		c.Metrics.Lateness.Observe(max(st.Run.Lateness().Seconds(), 0))
		if reason := c.misfired(st, now); reason != "" {
			c.ended <- m
			c.results <- result{msg: m, started: st, at: now, skip: reason}
			<-c.slots
			continue
		}
		running.Add(1)
		go func() {
			defer running.Done()
			c.execute(execCtx, m, st)
		}()
	}
	if len(byMember) > 0 {
		c.release(len(byMember))
		c.resolve(ctx, q, byMember)
	}
}

// attemptKey names one attempt of one occurrence under one generation,
// whatever its priority: a stale generation's copy in the same batch is a
// different entry, not a duplicate of the current one.
func attemptKey(o job.Occurrence) string {
	return o.Key() + "/" + strconv.Itoa(o.Attempt) + "/" + strconv.Itoa(o.Generation)
}

// misfireUnits and misfireTime bound the judging of one late attempt: a
// catch_up bound of misfire_max walks up to that many occurrences.
const (
	misfireUnits = schedule.RequestUnits / 4
	misfireTime  = 5 * time.Millisecond
)

// misfired applies a recurring job's misfire policy to a first attempt that
// starts later than the threshold, and returns why it must be skipped, or "".
func (c *Consumer) misfired(st store.Started, now time.Time) string {
	if len(st.Schedule) == 0 || st.Run.Attempt != 1 || now.Sub(st.Run.ScheduledFor) <= c.MisfireThreshold {
		return ""
	}
	if st.LastAt.Equal(st.Run.ScheduledFor) {
		// The final occurrence of an ended recurrence: no later one supersedes it.
		return ""
	}
	sched, err := schedule.FromJSONWithin(schedule.NewBudget(context.Background(), misfireUnits, misfireTime), st.Schedule)
	if err != nil {
		c.Log.Warn("stored_schedule_unreadable", zap.String("job_id", st.Run.JobID.String()), zap.Error(err))
		return ""
	}
	if run, reason := sched.Misfired(st.Run.ScheduledFor, now, c.MisfireThreshold); !run && sched.Err() == nil {
		return reason
	}
	// Judged to run, or too costly to judge (a catch_up bound of thousands
	// on a dense rule): it runs, late, and says how late.
	return ""
}

// setAside handles entries that must not run: undecodable ones go to the dead
// stream; duplicates within a batch are only acknowledged.
func (c *Consumer) setAside(ctx context.Context, q *queue.Queue, msgs []queue.Message) {
	var dead []queue.Message
	var ack []string
	for _, m := range msgs {
		if m.Err != nil {
			c.Log.Error("poison_entry_set_aside", zap.String("entry_id", m.ID), zap.Error(m.Err))
			dead = append(dead, m)
		} else {
			ack = append(ack, m.ID)
		}
	}
	if err := q.SetAside(ctx, dead); err != nil {
		c.Log.Warn("set_aside_failed", zap.Error(err))
	}
	if err := q.Settle(ctx, ack, nil); err != nil {
		c.Log.Warn("settle_failed", zap.Error(err))
	}
}

// resolve settles entries that StartRuns did not start: a finished attempt is
// only acknowledged (after making sure a failed one's retry is scheduled), an
// attempt leased to a live worker stays pending, and an entry of a job that is
// no longer scheduled (cancelled, paused, deleted) is dropped.
func (c *Consumer) resolve(ctx context.Context, q *queue.Queue, msgs map[string]queue.Message) {
	occs := make([]job.Occurrence, 0, len(msgs))
	for _, m := range msgs {
		occs = append(occs, m.Occurrence)
	}
	states, err := c.Store.RunStates(ctx, occs)
	if err != nil {
		c.Log.Warn("run_states_failed", zap.Error(err))
		return // left pending; reclaimed later
	}
	var ack []string
	var retries []queue.Entry
	for _, m := range msgs {
		st, ok := states[m.Occurrence.Member()]
		switch {
		case !ok:
			c.Log.Info("entry_dropped_job_not_scheduled", zap.String("job_id", m.Occurrence.JobID.String()))
			ack = append(ack, m.ID)
		case m.Occurrence.Generation < st.JobGeneration:
			// Planned under a schedule the job has left: stale, whatever the
			// run of its occurrence is doing.
			ack = append(ack, m.ID)
		case st.Status == job.RunRunning:
			// Leased to a live worker; it will acknowledge. Leave it pending.
		case st.Status == job.RunFailed:
			retries = append(retries, queue.Entry{Occurrence: m.Occurrence.Next(), DueAt: c.Clock()})
			ack = append(ack, m.ID)
		default:
			ack = append(ack, m.ID)
		}
	}
	if err := q.Settle(ctx, ack, retries); err != nil {
		c.Log.Warn("settle_failed", zap.Error(err))
	}
}

func (c *Consumer) execute(ctx context.Context, m queue.Message, st store.Started) {
	task := executor.Task{
		JobID: st.Run.JobID, Owner: st.Run.Owner, Name: st.Name, Type: st.Type,
		ScheduledFor: st.Run.ScheduledFor, Attempt: st.Run.Attempt,
		Key: m.Occurrence.Key(), Payload: st.Payload, Timeout: st.Timeout, SigningSecret: st.SigningSecret,
	}
	actx, stop := context.WithCancelCause(ctx)
	at := &attempt{job: st.Run.JobID, owner: st.Run.Owner, started: st.Run.StartedAt, stop: stop}
	c.attempts.add(at)
	tctx, cancel := context.WithTimeout(actx, st.Timeout)
	out := c.Runner.Execute(tctx, task)
	cancel()
	c.attempts.remove(at)
	var aborted *abortedError
	errors.As(context.Cause(actx), &aborted)
	stop(nil)
	if ctx.Err() != nil {
		// Abandoned at shutdown: record nothing, so the attempt is taken over.
		<-c.slots
		return
	}
	c.ended <- m
	c.results <- result{msg: m, started: st, outcome: out, at: c.Clock(), aborted: aborted}
	<-c.slots
}

// record is the group commit: it takes every outcome waiting, writes them to
// Postgres in one statement, then schedules retries and acknowledges in one
// Redis round trip. While a flush is in flight the next batch gathers, so
// batches grow with load and a lone outcome is written at once.
func (c *Consumer) record(ctx context.Context) {
	const maxBatch = 1024
	batch := make([]result, 0, maxBatch)
	for r := range c.results {
		batch = append(batch[:0], r)
	drain:
		for len(batch) < maxBatch {
			select {
			case r, ok := <-c.results:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		c.flush(ctx, batch)
	}
}

func (c *Consumer) flush(ctx context.Context, batch []result) {
	results := make([]store.Result, len(batch))
	// Per shard: a retry goes to the due set of the shard its entry came
	// from, so it is safe there before the entry is acknowledged.
	done := make(map[int]queue.Settlement, 1)
	for i, r := range batch {
		s := done[r.msg.Shard]
		occ := r.msg.Occurrence
		res := store.Result{Occurrence: occ, FinishedAt: r.at, Output: r.outcome.Output, Error: r.outcome.Error}
		switch {
		case r.skip != "":
			res.Status, res.Error = job.RunSkipped, "misfire: "+r.skip
		case r.aborted != nil:
			// Stopped by someone: recorded as such, and never retried.
			res.Status, res.Error = job.RunAborted, r.aborted.Error()
		case r.outcome.OK:
			res.Status = job.RunCompleted
		case occ.Attempt <= r.started.MaxRetries:
			res.Status = job.RunFailed
			s.Retries = append(s.Retries, queue.Entry{Occurrence: occ.Next(), DueAt: r.at.Add(c.backoff(occ.Attempt))})
		default:
			res.Status = job.RunPermanentlyFailed
		}
		results[i] = res
		s.IDs = append(s.IDs, r.msg.ID)
		done[r.msg.Shard] = s
	}
	if _, err := retryPG(ctx, c.Log, func() (struct{}, error) {
		return struct{}{}, c.Store.FinishRuns(ctx, results, c.Clock())
	}); err != nil {
		if ctx.Err() == nil {
			c.Log.Error("finish_runs_refused", zap.Int("runs", len(results)), zap.Error(err))
		}
		return // unacknowledged entries are reclaimed later and retried
	}
	c.observe(batch, results)
	c.autoPause(ctx, batch, results)
	for attempt := 0; ; attempt++ {
		err := c.Queue.Settle(ctx, done)
		if err == nil || ctx.Err() != nil {
			return
		}
		c.Log.Warn("settle_failed", zap.Error(err))
		sleep(ctx, backoffStep(attempt))
	}
}

// observe logs one line per recorded outcome and counts it. It runs only
// once the outcomes are in Postgres, so an outcome that a shutdown left
// unrecorded (and another worker will redo) is neither logged nor counted.
// The line carries ids and figures only: never the payload, the output, the
// error text (a target may echo a URL with its token) or the signing secret.
func (c *Consumer) observe(batch []result, results []store.Result) {
	for i, r := range batch {
		run, res := r.started.Run, results[i]
		typ := string(r.started.Type)
		dur := r.at.Sub(run.StartedAt)
		c.Metrics.Runs.WithLabelValues(typ, string(res.Status)).Inc()
		if r.skip == "" {
			c.Metrics.Duration.WithLabelValues(typ).Observe(max(dur.Seconds(), 0))
		}
		c.Log.Info("run_finished",
			zap.String("job_id", run.JobID.String()), zap.String("owner", run.Owner.String()),
			zap.String("type", typ), zap.Int("attempt", run.Attempt), zap.String("status", string(res.Status)),
			zap.Int64("lateness_ms", run.Lateness().Milliseconds()), zap.Int64("duration_ms", dur.Milliseconds()),
			zap.Int("status_code", r.outcome.StatusCode))
	}
}

// autoPause pauses the recurring jobs of this batch whose last occurrences
// all failed permanently. A failure here only delays it to the next failure.
func (c *Consumer) autoPause(ctx context.Context, batch []result, results []store.Result) {
	if c.AutoPauseAfter <= 0 {
		return
	}
	var ids []uuid.UUID
	for i, r := range batch {
		if results[i].Status == job.RunPermanentlyFailed && len(r.started.Schedule) > 0 {
			ids = append(ids, r.started.Run.JobID)
		}
	}
	if len(ids) == 0 {
		return
	}
	paused, err := c.Store.AutoPause(ctx, ids, c.AutoPauseAfter, c.Clock())
	if err != nil {
		c.Log.Warn("auto_pause_failed", zap.Error(err))
		return
	}
	for _, id := range paused {
		c.Log.Warn("job_auto_paused", zap.String("job_id", id.String()), zap.Int("failed_occurrences", c.AutoPauseAfter))
	}
}

// retryPG retries a Postgres call with backoff until it succeeds or ctx ends:
// an outage pauses the worker rather than losing outcomes.
func retryPG[T any](ctx context.Context, log *zap.Logger, f func() (T, error)) (T, error) {
	for attempt := 0; ; attempt++ {
		v, err := f()
		if err == nil || ctx.Err() != nil || permanent(err) {
			return v, err
		}
		if attempt == 0 {
			log.Warn("postgres_call_failed_retrying", zap.Error(err))
		}
		sleep(ctx, backoffStep(attempt))
	}
}

// backoff is the delay before attempt+1: exponential from the base, capped,
// with full jitter over its upper half so retries of a burst spread out.
func (c *Consumer) backoff(attempt int) time.Duration {
	d := c.BackoffBase << min(attempt-1, 30)
	if d <= 0 || d > c.BackoffMax {
		d = c.BackoffMax
	}
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(half)+1))
}

// permanent reports a Postgres error that retrying cannot cure: bad data
// (class 22) or a broken constraint (class 23).
func permanent(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "23"))
}

// backoffStep is the wait before retrying a Postgres or Redis call; capped at
// a second so a worker resumes within about a second of an outage's end.
func backoffStep(attempt int) time.Duration {
	return min(100*time.Millisecond<<min(attempt, 6), time.Second)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Completing: one recorder group-commits the outcomes of ended attempts, then
// settles their entries in Redis (retries, acknowledgements) and auto-pauses
// a recurring job that keeps failing.

package main

import (
	"context"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
)

type result struct {
	msg     queue.Message
	started store.Started
	outcome jobtype.Outcome
	at      time.Time
	skip    string // why it was skipped (misfire, overlap); empty when it ran
	// expired says why it expired before it could start; empty otherwise.
	expired string
	// wait: a buffer_one occurrence not started, to be put back in the due
	// set; nothing is recorded in Postgres.
	wait bool
	// aborted says who stopped it while it ran; nil when nobody did.
	aborted *abortedError
}

// status is what the attempt is recorded as. An aborted attempt (stopped by
// someone) is never retried; a failed one is while retries are left.
func (r result) status() job.RunStatus {
	switch {
	case r.skip != "":
		return job.RunSkipped
	case r.expired != "":
		return job.RunExpired
	case r.aborted != nil:
		return job.RunAborted
	case r.outcome.OK:
		return job.RunCompleted
	case r.msg.Occurrence.Attempt <= r.started.MaxRetries:
		return job.RunFailed
	}
	return job.RunPermanentlyFailed
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
	results := make([]store.Result, 0, len(batch))
	recorded := make([]result, 0, len(batch))
	// Per shard: a retry goes to the due set of the shard its entry came
	// from, so it is safe there before the entry is acknowledged.
	done := make(map[int]queue.Settlement, 1)
	for _, r := range batch {
		s := done[r.msg.Shard]
		occ := r.msg.Occurrence
		s.IDs = append(s.IDs, r.msg.ID)
		if r.wait {
			s.Retries = append(s.Retries, queue.Entry{Occurrence: occ, DueAt: r.at.Add(store.OverlapPoll)})
			done[r.msg.Shard] = s
			continue
		}
		res := store.Result{Occurrence: occ, Status: r.status(), FinishedAt: r.at, Output: r.outcome.Output, Error: r.outcome.Error,
			TrimHistory: r.started.History == job.HistoryFailures, Held: r.started.Overlap != ""}
		switch res.Status {
		case job.RunSkipped:
			res.Error = r.skip
		case job.RunExpired:
			res.Error = r.expired
		case job.RunAborted:
			res.Error = r.aborted.Error()
		case job.RunFailed:
			s.Retries = append(s.Retries, queue.Entry{Occurrence: occ.Next(), DueAt: r.at.Add(c.backoff(occ.Attempt))})
		}
		results = append(results, res)
		recorded = append(recorded, r)
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
	c.observe(recorded, results)
	paused := c.autoPause(ctx, recorded, results)
	c.alert(ctx, recorded, results, paused)
	for attempt := 0; ; attempt++ {
		err := c.Queue.Settle(ctx, done)
		if err == nil {
			c.settled.Signal()
			return
		}
		if ctx.Err() != nil {
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
		if r.skip == "" && r.expired == "" {
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
// all failed permanently, and returns them.
func (c *Consumer) autoPause(ctx context.Context, batch []result, results []store.Result) []uuid.UUID {
	var ids []uuid.UUID
	for i, r := range batch {
		if results[i].Status == job.RunPermanentlyFailed && len(r.started.Schedule) > 0 {
			ids = append(ids, r.started.Run.JobID)
		}
	}
	return c.pause(ctx, ids)
}

// pause pauses those of the recurring jobs ids, each of which just had an
// occurrence fail permanently, whose last AutoPauseAfter occurrences all
// did, and returns them. A failure here only delays it to the next failure.
func (c *Consumer) pause(ctx context.Context, ids []uuid.UUID) []uuid.UUID {
	if c.AutoPauseAfter <= 0 || len(ids) == 0 {
		return nil
	}
	paused, err := c.Store.AutoPause(ctx, ids, c.AutoPauseAfter, c.Clock())
	if err != nil {
		c.Log.Warn("auto_pause_failed", zap.Error(err))
		return nil
	}
	for _, id := range paused {
		c.Log.Warn("job_auto_paused", zap.String("job_id", id.String()), zap.Int("failed_occurrences", c.AutoPauseAfter))
	}
	return paused
}

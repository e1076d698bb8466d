// Starting: a batch read is started in one statement, late occurrences are
// judged by their misfire policy, and each attempt runs on its own goroutine.

package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/schedule"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/telemetry"
)

// handle starts a batch of entries, each holding one slot. Its Postgres and
// Redis calls end with ctx (fetching stops at shutdown, leaving entries
// pending); the attempts it starts run under execCtx, which outlives ctx by
// the grace period. An entry delivered more than MaxDeliveries times is not
// started again but dead-lettered.
func (c *Consumer) handle(ctx, execCtx context.Context, q *queue.Shard, msgs []queue.Message, running *sync.WaitGroup) {
	var aside, overdue []queue.Message
	seen := make(map[string]bool, len(msgs))
	byMember := make(map[string]queue.Message, len(msgs))
	starts := make([]store.Start, 0, len(msgs))
	for _, m := range msgs {
		if m.Err != nil {
			aside = append(aside, m)
			continue
		}
		member := attemptKey(m.Occurrence)
		if seen[member] {
			// The same attempt twice in one batch (a re-add after a fault):
			// run it once, acknowledge the copy with the outcome of the first.
			aside = append(aside, m)
			continue
		}
		seen[member] = true
		if c.MaxDeliveries > 0 && m.Deliveries > c.MaxDeliveries {
			overdue = append(overdue, m)
			continue
		}
		byMember[member] = m
		starts = append(starts, store.Start{Occurrence: m.Occurrence, DueAt: m.DueAt})
	}
	if len(aside) > 0 {
		c.slots.give(len(aside))
		c.setAside(ctx, q, aside)
	}
	if len(starts) > 0 {
		c.start(ctx, execCtx, q, byMember, starts, running)
	}
	if len(overdue) > 0 {
		c.slots.give(len(overdue))
		c.deadLetter(ctx, q, overdue)
	}
}

// start starts the attempts of byMember's entries (starts) in one
// statement, or, if Postgres refuses the batch's data, in halves until only
// the entries it refuses are left out: those stay pending, to be reclaimed
// after the visibility timeout and, delivered too often, dead-lettered, while
// the rest of the batch starts at once. It runs what started and settles
// what may not run.
func (c *Consumer) start(ctx, execCtx context.Context, q *queue.Shard, byMember map[string]queue.Message, starts []store.Start, running *sync.WaitGroup) {
	refused := 0
	// The clock is read on every try: a start retried through an outage must
	// not write a lease that expired while it waited, or another worker would
	// take the attempt over at once.
	started, tried := bisect(ctx, c.Log, starts, func(part []store.Start) ([]store.Started, error) {
		return c.Store.StartRuns(ctx, part, c.Clock(), c.LeaseMargin)
	}, func(s store.Start, err error) {
		key := attemptKey(s.Occurrence)
		m := byMember[key]
		delete(byMember, key)
		refused++
		c.Log.Error("start_refused", zap.String("job_id", s.Occurrence.JobID.String()),
			zap.Time("scheduled_for", s.Occurrence.ScheduledFor), zap.Int("attempt", s.Occurrence.Attempt),
			zap.Int("deliveries", m.Deliveries), zap.String("code", pgCode(err)))
	})
	c.slots.give(refused)
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
		// Its part of the batch started at this instant (StartRuns sets it).
		now := st.Run.StartedAt
		if st.Gate == store.GateWait {
			// buffer_one: an earlier occurrence still runs. Not started;
			// back in the due set shortly, its place in the buffer kept.
			c.ended <- m
			c.results <- result{msg: m, started: st, at: now, wait: true}
			c.slots.give(1)
			continue
		}
		// Every attempt started counts, a skipped misfire too: its lateness
		// is what made it one. A clock skewed behind Redis's counts as on time.
		c.Metrics.Lateness.Observe(max(st.Run.Lateness().Seconds(), 0))
		var r result
		switch {
		case st.Gate == store.GateSkip:
			r.skip = "overlap: an earlier occurrence of the job still runs"
		case st.ExpiresAfter > 0 && now.Sub(st.Run.DueAt) > st.ExpiresAfter:
			r.expired = fmt.Sprintf("expired: could start only %s after it was due; expires_after is %s",
				now.Sub(st.Run.DueAt).Round(time.Millisecond), st.ExpiresAfter)
		default:
			if reason := c.misfired(st, now); reason != "" {
				r.skip = "misfire: " + reason
			}
		}
		if r.skip != "" || r.expired != "" {
			r.msg, r.started, r.at = m, st, now
			if c.Tracer != nil {
				_, span := c.startAttempt(ctx, st, now)
				endAttempt(span, r.status(), 0, now)
			}
			c.ended <- m
			c.results <- r
			c.slots.give(1)
			continue
		}
		running.Add(1)
		go func() {
			defer running.Done()
			c.execute(execCtx, m, st)
		}()
	}
	if len(byMember) == 0 {
		return
	}
	c.slots.give(len(byMember))
	if !tried {
		// ctx ended before every part was tried: leave the rest pending;
		// they are reclaimed after the visibility timeout.
		return
	}
	c.resolve(ctx, q, byMember)
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
func (c *Consumer) setAside(ctx context.Context, q *queue.Shard, msgs []queue.Message) {
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
	if err := c.Queue.Settle(ctx, map[int]queue.Settlement{q.Keys().Shard: {IDs: ack}}); err != nil {
		c.Log.Warn("settle_failed", zap.Error(err))
	} else {
		c.settled.Signal()
	}
}

// resolve settles entries that StartRuns did not start: a finished attempt is
// only acknowledged (after making sure a failed one's retry is scheduled), an
// attempt leased to a live worker stays pending, its reclaim not counted as a
// delivery, and an entry of a job that is no longer scheduled (cancelled,
// paused, deleted) is dropped.
func (c *Consumer) resolve(ctx context.Context, q *queue.Shard, msgs map[string]queue.Message) {
	occs := make([]job.Occurrence, 0, len(msgs))
	for _, m := range msgs {
		occs = append(occs, m.Occurrence)
	}
	states, err := c.Store.RunStates(ctx, occs)
	if err != nil {
		c.Log.Warn("run_states_failed", zap.Error(err))
		return // left pending; reclaimed later
	}
	now := c.Clock()
	var ack []string
	var retries []queue.Entry
	var live []queue.Message
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
			// A long attempt is reclaimed every visibility timeout while it
			// runs: those reclaims must not add up to dead-letter it should
			// its worker die later, so give this one back. A lease that
			// lapsed since StartRuns looked keeps the count: the next
			// reclaim takes the attempt over, or dead-letters it.
			if st.LeaseUntil.After(now) {
				live = append(live, m)
			}
		case st.Status == job.RunFailed:
			retries = append(retries, queue.Entry{Occurrence: m.Occurrence.Next(), DueAt: c.Clock()})
			ack = append(ack, m.ID)
		default:
			ack = append(ack, m.ID)
		}
	}
	if len(live) > 0 {
		// A failure leaves the entries pending all the same, this reclaim
		// counted.
		if _, err := q.GiveBack(ctx, c.Name, live); err != nil {
			c.Log.Warn("give_back_failed", zap.Int("entries", len(live)), zap.Error(err))
		}
	}
	if err := c.Queue.Settle(ctx, map[int]queue.Settlement{q.Keys().Shard: {IDs: ack, Retries: retries}}); err != nil {
		c.Log.Warn("settle_failed", zap.Error(err))
	} else {
		c.settled.Signal()
	}
}

func (c *Consumer) execute(ctx context.Context, m queue.Message, st store.Started) {
	task := jobtype.Task{
		JobID: st.Run.JobID, Owner: st.Run.Owner, Name: st.Name, Type: st.Type,
		ScheduledFor: st.Run.ScheduledFor, Attempt: st.Run.Attempt,
		Key: m.Occurrence.Key(), Payload: st.Payload, Timeout: st.Timeout, SigningSecret: st.SigningSecret, PreviousSigningSecret: st.PreviousSigningSecret,
	}
	sctx := ctx
	var span trace.Span
	if c.Tracer != nil {
		sctx, span = c.startAttempt(ctx, st, st.Run.StartedAt)
		task.TraceParent, task.TraceState = telemetry.Headers(span.SpanContext())
	}
	actx, stop := context.WithCancelCause(sctx)
	at := &attempt{job: st.Run.JobID, owner: st.Run.Owner, started: st.Run.StartedAt, stop: stop}
	c.attempts.add(at)
	tctx, cancel := context.WithTimeout(actx, st.Timeout)
	var out jobtype.Outcome
	if st.SigningErr != nil {
		// Never sent unsigned: the attempt fails, and is retried, until a
		// worker with the operator key runs it.
		c.Log.Error("signing_secret_unavailable", zap.String("job_id", st.Run.JobID.String()), zap.Error(st.SigningErr))
		out = jobtype.Outcome{Error: "the worker cannot open the signing secret: it lacks the operator key (TOCK_SECRET_KEY)"}
	} else if st.SecretsErr != nil {
		// Never sent with fingerprints for credentials: retried until a
		// worker with the operator key runs it.
		c.Log.Error("job_secrets_unavailable", zap.String("job_id", st.Run.JobID.String()), zap.Error(st.SecretsErr))
		out = jobtype.Outcome{Error: "the worker cannot open the job's secrets: it lacks the operator key (TOCK_SECRET_KEY)"}
	} else {
		out = c.Runner.Execute(tctx, task)
	}
	cancel()
	c.attempts.remove(at)
	var aborted *abortedError
	errors.As(context.Cause(actx), &aborted)
	stop(nil)
	if ctx.Err() != nil {
		// Abandoned at shutdown: record nothing, so the attempt is taken over.
		if span != nil {
			span.SetStatus(codes.Error, "abandoned at shutdown")
			span.End()
		}
		c.slots.give(1)
		return
	}
	r := result{msg: m, started: st, outcome: out, at: c.Clock(), aborted: aborted}
	if span != nil {
		endAttempt(span, r.status(), out.StatusCode, r.at)
	}
	c.ended <- m
	c.results <- r
	c.slots.give(1)
}

// Running: as many long-lived runners as slots, each running one attempt
// at a time under its timeout, stoppable by an abort.

package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/codes"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/telemetry"
)

// runners run the attempts the starter leased. There are as many as the
// worker has slots, started once: an attempt waits for none, and none is a
// goroutine of its own whose stack grows anew each time. An attempt goes
// to the runner that became idle last: under a light load the same few
// runners take every attempt, their stacks grown and their memory in the
// cache, while the others sleep (a shared channel would wake the one idle
// longest, whose stack the collector has shrunk meanwhile).
type runners struct {
	w        *Worker
	comp     *completer
	attempts *attempts
	done     sync.WaitGroup

	mu      sync.Mutex
	freed   *sync.Cond   // signalled when a runner becomes idle
	idle    []chan *item // the idle runners' inboxes, the latest last
	stopped bool
}

func newRunners(w *Worker, c *completer, a *attempts) *runners {
	r := &runners{w: w, comp: c, attempts: a, idle: make([]chan *item, 0, w.Concurrency)}
	r.freed = sync.NewCond(&r.mu)
	return r
}

// start starts the runners; attempts run under ctx, which outlives the
// readers by the grace period.
func (r *runners) start(ctx context.Context) {
	for range r.w.Concurrency {
		r.done.Go(func() {
			inbox := make(chan *item, 1)
			for r.ready(inbox) {
				it, ok := <-inbox
				if !ok {
					return
				}
				r.execute(ctx, it)
			}
		})
	}
}

// ready puts a runner's inbox among the idle ones; false once the runners
// have stopped.
func (r *runners) ready(inbox chan *item) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return false
	}
	r.idle = append(r.idle, inbox)
	r.freed.Signal()
	return true
}

// run hands a leased attempt to the runner idle last. Each attempt holds a
// slot and there is a runner per slot, so one is idle or about to be (a
// runner hands its outcome over just before it is idle again).
func (r *runners) run(it *item) {
	r.mu.Lock()
	for len(r.idle) == 0 {
		r.freed.Wait()
	}
	inbox := r.idle[len(r.idle)-1]
	r.idle = r.idle[:len(r.idle)-1]
	r.mu.Unlock()
	inbox <- it
}

// stop waits for the attempts handed over to end; the starter has stopped.
func (r *runners) stop() {
	r.mu.Lock()
	r.stopped = true
	for _, inbox := range r.idle {
		close(inbox)
	}
	r.idle = nil
	r.mu.Unlock()
	r.done.Wait()
}

// execute runs one attempt and hands its outcome to the completer. An
// attempt abandoned at shutdown is handed over to be left pending: another
// worker takes it over once its lease ends.
func (r *runners) execute(ctx context.Context, it *item) {
	w, aj, occ := r.w, it.job, it.msg.Occurrence
	task := jobtype.Task{
		JobID: occ.JobID, Owner: aj.Owner, Name: aj.Name, Type: aj.Type,
		ScheduledFor: occ.ScheduledFor, Nominal: nominal(aj, occ.ScheduledFor), Attempt: occ.Attempt, Key: occ.Key(), Payload: aj.Payload, Timeout: aj.Timeout,
		Backfill:      occ.Backfill != uuid.Nil,
		SigningSecret: aj.SigningSecret, PreviousSigningSecret: aj.PreviousSigningSecret,
		KeepAnswer: keepsAnswer(aj),
	}
	sctx := ctx
	if w.Tracer != nil {
		sctx, it.span = w.startAttempt(ctx, it, it.startedAt)
		task.TraceParent, task.TraceState = telemetry.Headers(it.span.SpanContext())
	}
	actx, stop := context.WithCancelCause(sctx)
	at := &attempt{job: occ.JobID, owner: aj.Owner, started: it.startedAt, stop: stop}
	r.attempts.add(at)
	// Read ahead of its due time, it starts at it; an abort or a shutdown
	// while it waits ends it without calling the target.
	if d := it.startedAt.Sub(w.Clock()); d > 0 {
		untilDue(actx, d)
	}
	if now := w.Clock(); now.After(it.startedAt) {
		it.startedAt = now
	}
	w.Metrics.Lateness.Observe(max(it.startedAt.Sub(it.msg.Released()).Seconds(), 0))
	tctx, cancel := context.WithTimeout(actx, aj.Timeout)
	switch {
	case actx.Err() != nil:
		it.out = jobtype.Outcome{Error: "stopped before its due time"}
	case aj.SigningErr != nil:
		// Never sent unsigned: the attempt fails, and is retried, until a
		// worker with the operator key runs it.
		w.Log.Error("signing_secret_unavailable", zap.String("job_id", occ.JobID.String()), zap.Error(aj.SigningErr))
		it.out = jobtype.Outcome{Error: "the worker cannot open the signing secret: it lacks the operator key (TOCK_SECRET_KEY)"}
	case aj.SecretsErr != nil:
		// Never sent with fingerprints for credentials: retried until a
		// worker with the operator key runs it.
		w.Log.Error("job_secrets_unavailable", zap.String("job_id", occ.JobID.String()), zap.Error(aj.SecretsErr))
		it.out = jobtype.Outcome{Error: "the worker cannot open the job's secrets: it lacks the operator key (TOCK_SECRET_KEY)"}
	default:
		w.startCall()
		it.out = w.Runner.Execute(tctx, task)
		w.endCall()
	}
	cancel()
	r.attempts.remove(at)
	var aborted *abortedError
	errors.As(context.Cause(actx), &aborted)
	stop(nil)
	if ctx.Err() != nil {
		// Abandoned at shutdown: record nothing, so the attempt is taken over.
		if it.span != nil {
			it.span.SetStatus(codes.Error, "abandoned at shutdown")
			it.span.End()
		}
		it.action = leave
		r.comp.end(it)
		return
	}
	it.endedAt = w.Clock()
	it.status = runStatus(it.out, aborted != nil, occ.Attempt, aj.MaxRetries)
	if aborted != nil {
		it.reason = aborted.Error()
	}
	if it.span != nil {
		endAttempt(it.span, it.status, it.out.StatusCode, it.endedAt)
	}
	r.comp.end(it)
}

// untilDue waits d, or until ctx ends.
func untilDue(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

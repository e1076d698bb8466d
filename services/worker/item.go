package main

import (
	"time"

	"github.com/google/uuid"

	"go.opentelemetry.io/otel/trace"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
)

// item is one stream entry on its way through a worker: read into a slot,
// judged and leased by the starter, run by a runner, settled by the
// completer, which gives its slot back.
type item struct {
	msg   queue.Message
	shard *queue.Shard
	// job is what the attempt needs of its job, once fetched.
	job *store.AttemptJob
	// calendar is why a calendar of its job skips it ("" when none does):
	// it is recorded skipped when it starts.
	calendar string
	// run is the id of the attempt's run, given when it is leased.
	run uuid.UUID
	// finished says it had an outcome already, and any lease on it ends;
	// dropped that it is acknowledged unrun, and a lease a dead worker left
	// on it ends. (A lease of this worker's ends when its outcome is
	// recorded.)
	finished, dropped bool
	// unended says it had its final outcome already while its job is still
	// scheduled: the job ends now (store.EndJobs).
	unended    bool
	startedAt  time.Time
	leaseUntil time.Time
	endedAt    time.Time

	// action is what settling does with the entry.
	action action
	// status and reason are the outcome recorded (action record or
	// deadLetter): reason is the error of a skipped, expired, aborted or
	// dead-lettered attempt; out what a run returned.
	status job.RunStatus
	reason string
	out    jobtype.Outcome
	// requeueAt is when a requeued entry's member is due again.
	requeueAt time.Time
	span      trace.Span
}

// action is what the completer does with an entry.
type action int

const (
	// record writes the attempt's outcome, then acknowledges the entry,
	// ends its lease and schedules its retry when it failed.
	record action = iota
	// deadLetter records it permanently failed, then moves the entry to
	// the dead stream.
	deadLetter
	// ack acknowledges the entry: stale, of a job gone or no longer
	// scheduled, or finished before.
	ack
	// ackRetry acknowledges an attempt that failed before, putting its
	// retry in the due set again (a re-add changes nothing).
	ackRetry
	// requeue puts the entry's member back in the due set at requeueAt and
	// acknowledges it.
	requeue
	// giveBack leaves the entry pending to the live worker that runs it,
	// its reclaim not counted as a delivery.
	giveBack
	// leave leaves the entry pending, to be reclaimed after the visibility
	// timeout (Postgres or Redis failed, or the worker stops).
	leave
	// setAside moves an entry that cannot be decoded to the dead stream.
	setAside
)

// status is what an attempt that ran is recorded as. An aborted attempt
// (stopped by someone) is never retried; a failed one is while retries are
// left.
func runStatus(out jobtype.Outcome, aborted bool, attempt, maxRetries int) job.RunStatus {
	switch {
	case aborted:
		return job.RunAborted
	case out.OK:
		return job.RunCompleted
	case attempt <= maxRetries:
		return job.RunFailed
	}
	return job.RunPermanentlyFailed
}

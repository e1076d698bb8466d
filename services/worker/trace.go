// Tracing: one span per attempt, linked to the span that created its job.

package main

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/telemetry"
)

// attemptSpan is the name of an attempt's span.
const attemptSpan = "tock.attempt"

// startAttempt starts the span of one attempt at start; the caller has
// checked that c.Tracer is set. The span links to the job's creation span
// whenever the job stored one. A one-off job's attempts are also its
// children, so the trace of the API call that created the job runs on to
// the delivery; a recurring job's attempt begins a trace of its own, or one
// trace would gather every occurrence for as long as the job lives. A job
// created untraced gets a new trace and no link.
func (w *Worker) startAttempt(ctx context.Context, it *item, start time.Time) (context.Context, trace.Span) {
	occ := it.msg.Occurrence
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(start),
		trace.WithAttributes(
			telemetry.JobID.String(occ.JobID.String()),
			telemetry.RunID.String(it.run.String()),
			telemetry.Attempt.Int(occ.Attempt),
			telemetry.JobType.String(string(it.job.Type)),
			telemetry.OwnerID.String(it.job.Owner.String()),
			telemetry.ScheduledFor.String(occ.ScheduledFor.Format(time.RFC3339Nano)),
			telemetry.LatenessMS.Int64(start.Sub(it.msg.Released()).Milliseconds()),
		),
	}
	created := telemetry.ParseTraceParent(it.job.TraceParent)
	if created.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: created,
			Attributes: []attribute.KeyValue{telemetry.Link.String("creation")}}))
	}
	if created.IsValid() && len(it.job.Schedule) == 0 {
		ctx = trace.ContextWithRemoteSpanContext(ctx, created)
	} else {
		opts = append(opts, trace.WithNewRoot())
	}
	return w.Tracer.Start(ctx, attemptSpan, opts...)
}

// endAttempt ends an attempt's span at end with the status it is recorded
// with. Like the run_finished log line, it leaves out the output and the
// error text (a target may echo a URL or a token back).
func endAttempt(span trace.Span, status job.RunStatus, httpStatus int, end time.Time) {
	span.SetAttributes(telemetry.Outcome.String(string(status)))
	if httpStatus != 0 {
		span.SetAttributes(telemetry.HTTPStatusCode.Int(httpStatus))
	}
	if status != job.RunCompleted && status != job.RunSkipped {
		span.SetStatus(codes.Error, string(status))
	}
	span.End(trace.WithTimestamp(end))
}

package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/telemetry"
	"github.com/tockhq/tock/pkg/testenv"
)

// creation is the span context a traced dashboard stored on a job.
var creation = telemetry.ParseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")

// recorder is a tracer whose ended spans are kept in memory.
func recorder(t *testing.T) (trace.Tracer, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	return tp.Tracer("worker"), rec
}

// attrs are a span's attributes by key.
func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestTracing(t *testing.T) {
	t.Parallel()
	require.True(t, creation.IsValid())

	t.Run("AttemptSpanLinksToCreationAndItsContextGoesToTheTarget", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		tracer, rec := recorder(t)
		ok := b.claimedJob(func(j *job.Job) { j.Name, j.TraceParent = "ok", telemetry.TraceParent(creation) })
		bad := b.claimedJob(func(j *job.Job) { j.Name, j.MaxRetries, j.TraceParent = "bad", 0, telemetry.TraceParent(creation) })
		untraced := b.claimedJob(func(j *job.Job) { j.Name = "untraced" })
		b.create(t, ok, bad, untraced)
		require.Equal(t, 3, b.publish(t))

		r := newRunner()
		r.outcome = func(task jobtype.Task) jobtype.Outcome {
			if task.Name == "bad" {
				return failing(task)
			}
			return jobtype.Outcome{OK: true, StatusCode: 200}
		}
		testenv.GoRun(t, b.consumer(r, func(c *Worker) { c.Tracer = tracer }).Run)
		b.untilSettled(t, 10*time.Second, func() bool {
			return b.finished(t, ok) != "" && b.finished(t, bad) != "" && b.finished(t, untraced) != ""
		}, "the jobs did not finish")

		spans := map[string]sdktrace.ReadOnlySpan{}
		for _, s := range rec.Ended() {
			require.Equal(t, "tock.attempt", s.Name())
			spans[attrs(s)[telemetry.JobID].AsString()] = s
		}
		require.Len(t, spans, 3, "one span per attempt")
		tasks := map[string]jobtype.Task{}
		for _, task := range r.seen() {
			tasks[task.JobID.String()] = task
		}

		for _, j := range []*job.Job{ok, bad} {
			s := spans[j.ID.String()]
			require.Equal(t, creation.TraceID(), s.SpanContext().TraceID(), "a one-off job's attempt joins its creation's trace")
			require.Equal(t, creation.SpanID(), s.Parent().SpanID())
			require.Len(t, s.Links(), 1)
			require.Equal(t, creation.TraceID(), s.Links()[0].SpanContext.TraceID())
			require.Equal(t, creation.SpanID(), s.Links()[0].SpanContext.SpanID())
			a := attrs(s)
			require.Equal(t, owner.String(), a[telemetry.OwnerID].AsString())
			require.EqualValues(t, 1, a[telemetry.Attempt].AsInt64())
			require.Equal(t, "ping", a[telemetry.JobType].AsString())
			require.Equal(t, b.runs(t, j.ID)[0].ID.String(), a[telemetry.RunID].AsString())

			parent, _ := telemetry.Headers(s.SpanContext())
			require.Equal(t, parent, tasks[j.ID.String()].TraceParent, "the target gets the attempt's context")
		}
		require.Equal(t, "completed", attrs(spans[ok.ID.String()])[telemetry.Outcome].AsString())
		require.Equal(t, codes.Unset, spans[ok.ID.String()].Status().Code)
		failed := spans[bad.ID.String()]
		require.Equal(t, "permanently_failed", attrs(failed)[telemetry.Outcome].AsString())
		require.EqualValues(t, 503, attrs(failed)[telemetry.HTTPStatusCode].AsInt64())
		require.Equal(t, codes.Error, failed.Status().Code)
		require.NotContains(t, failed.Status().Description, "503", "no error text: a target may echo secrets")

		plain := spans[untraced.ID.String()]
		require.Empty(t, plain.Links(), "a job created untraced has nothing to link to")
		require.False(t, plain.Parent().IsValid(), "its attempt starts a trace")
		require.NotEmpty(t, tasks[untraced.ID.String()].TraceParent)
	})

	t.Run("RecurringAttemptStartsItsOwnTraceLinkedToCreation", func(t *testing.T) {
		t.Parallel()
		tracer, rec := recorder(t)
		c := &Worker{Tracer: tracer}
		it := &item{msg: queue.Message{Occurrence: job.Occurrence{JobID: job.NewID(), Attempt: 1, ScheduledFor: time.Now()}, DueAt: time.Now()},
			run: job.NewID(), job: &store.AttemptJob{Owner: owner, Type: jobtype.TypePing,
				Schedule: json.RawMessage(`{"cron":"* * * * *"}`), TraceParent: telemetry.TraceParent(creation)}}
		_, span := c.startAttempt(t.Context(), it, time.Now())
		endAttempt(span, job.RunCompleted, 200, time.Now())
		s := rec.Ended()[0]
		require.False(t, s.Parent().IsValid())
		require.NotEqual(t, creation.TraceID(), s.SpanContext().TraceID())
		require.Len(t, s.Links(), 1)
		require.Equal(t, creation.SpanID(), s.Links()[0].SpanContext.SpanID())
	})

	t.Run("OffSendsNoTraceContext", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := b.claimedJob(func(j *job.Job) { j.TraceParent = telemetry.TraceParent(creation) })
		b.create(t, j)
		require.Equal(t, 1, b.publish(t))
		r := newRunner()
		testenv.GoRun(t, b.consumer(r).Run)
		b.untilSettled(t, 10*time.Second, func() bool { return b.finished(t, j) != "" }, "the job did not finish")
		require.Len(t, r.seen(), 1)
		require.Empty(t, r.seen()[0].TraceParent)
	})
}

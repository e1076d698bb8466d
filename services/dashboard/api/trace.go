package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/telemetry"
)

// createSpan is the name of the span around a create's store write, whose
// context every job it creates keeps.
const createSpan = "tock.create"

// traceRequests gives each request a server span named by its method and
// route pattern ("POST /api/v1/jobs/:id", never the path with its id, as
// the metrics do), continuing the client's trace when the request carries a
// W3C traceparent, so a caller's own trace runs on into tock. It is
// installed only with tracing on, and runs outside everything else, so the
// status it records is the one sent.
func (s *Server) traceRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		req := c.Request()
		route := c.Path()
		name, attrs := req.Method, []attribute.KeyValue{telemetry.HTTPMethod.String(req.Method)}
		if route != "" {
			name += " " + route
			attrs = append(attrs, telemetry.HTTPRoute.String(route))
		}
		ctx := telemetry.Propagator.Extract(req.Context(), propagation.HeaderCarrier(req.Header))
		ctx, span := s.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		defer span.End()
		c.SetRequest(req.WithContext(ctx))
		err := next(c)
		_, status := echo.ResolveResponseStatus(c.Response(), err)
		span.SetAttributes(telemetry.HTTPStatusCode.Int(status))
		if status >= http.StatusInternalServerError {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
		return err
	}
}

// createJobs creates jobs through the lifecycle (a single create, a batch,
// a PUT by key). With tracing on, the store write runs in a span of its own,
// child of the request's, and every job keeps that span's context
// (job.TraceParent) for its attempts' spans to link to: a batch shares one
// creation span. Off, it adds nothing, and the jobs store no context.
func (s *Server) createJobs(c *echo.Context, jobs []*job.Job, now time.Time, create store.Create) error {
	ctx := c.Request().Context()
	if s.tracer == nil {
		return s.jobs.Create(ctx, jobs, now, create)
	}
	attrs := []attribute.KeyValue{telemetry.Jobs.Int(len(jobs)), telemetry.OwnerID.String(jobs[0].Owner.String())}
	if len(jobs) == 1 {
		attrs = append(attrs, telemetry.JobID.String(jobs[0].ID.String()), telemetry.JobType.String(string(jobs[0].Type)))
	}
	ctx, span := s.tracer.Start(ctx, createSpan, trace.WithAttributes(attrs...))
	defer span.End()
	parent := telemetry.TraceParent(span.SpanContext())
	for _, j := range jobs {
		j.TraceParent = parent
	}
	if err := s.jobs.Create(ctx, jobs, now, create); err != nil {
		span.SetStatus(codes.Error, "create failed") // the error may quote stored values (a unique key)
		return err
	}
	return nil
}

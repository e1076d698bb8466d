package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Header names of the W3C Trace Context.
const (
	HeaderTraceParent = "traceparent"
	HeaderTraceState  = "tracestate"
)

// TraceParent returns sc as a W3C traceparent value
// ("00-<trace id>-<span id>-<flags>"), what a job stores of the span that
// created it; "" when sc is not valid. Its tracestate is not kept: a link
// needs the ids only.
func TraceParent(sc trace.SpanContext) string {
	parent, _ := Headers(sc)
	return parent
}

// Headers returns sc as the W3C traceparent and tracestate values sent to a
// target; both "" when sc is not valid, tracestate "" when it has none.
func Headers(sc trace.SpanContext) (traceparent, tracestate string) {
	if !sc.IsValid() {
		return "", ""
	}
	c := propagation.MapCarrier{}
	Propagator.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	return c[HeaderTraceParent], c[HeaderTraceState]
}

// ParseTraceParent reads a stored traceparent back; the span context is
// not valid when s is empty or malformed.
func ParseTraceParent(s string) trace.SpanContext {
	if s == "" {
		return trace.SpanContext{}
	}
	ctx := Propagator.Extract(context.Background(), propagation.MapCarrier{HeaderTraceParent: s})
	return trace.SpanContextFromContext(ctx)
}

// Package telemetry sets up a service's OpenTelemetry tracing and holds what
// the services share about it: the W3C trace context carried from a job's
// creation to its attempts, and the names of the attributes tock puts on
// spans (docs/observability.md lists them).
//
// Tracing is off unless an OTLP endpoint is configured (config.Tracing).
// Off, Setup returns a nil *Tracing, whose tracers are nil: every component
// takes a nil trace.Tracer as "trace nothing" and tests it before any other
// tracing work, so a service without tracing pays one nil check where a
// span would start, and writes no trace context anywhere.
package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/config"
)

// Propagator is the one trace context format tock reads and writes: W3C
// Trace Context (traceparent, tracestate).
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// instrumentation names tock's tracers, followed by the component's name.
const instrumentation = "github.com/tockhq/tock/"

// Tracing is a service's tracer provider. A nil *Tracing is tracing off.
type Tracing struct {
	provider *sdktrace.TracerProvider
}

// Setup starts exporting the spans of service (dashboard, scheduler or
// worker) when c is on, and returns nil when it is off. The exporter reads
// the other OTEL_EXPORTER_OTLP_ variables itself, the provider
// OTEL_TRACES_SAMPLER (default: parent-based, always on) and the batch
// processor OTEL_BSP_*. The service is named tock-<service> unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES says otherwise. Export
// errors (a collector down) are logged on log, never returned: spans are
// dropped, the service goes on.
func Setup(ctx context.Context, c config.Tracing, service string, log *zap.Logger) (*Tracing, error) {
	if !c.On() {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("otlp trace exporter: %w", err)
	}
	// Later detectors win: the environment names the service over our default.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "tock-"+service)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("otel resource (OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	elog := log.Named("otel")
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { elog.Warn("otel_error", zap.Error(err)) }))
	otel.SetTracerProvider(provider)
	otel.SetTextMapPropagator(Propagator)
	return &Tracing{provider: provider}, nil
}

// Tracer returns the tracer of one component (api, loader, publisher,
// worker), or nil when tracing is off.
func (t *Tracing) Tracer(component string) trace.Tracer {
	if t == nil {
		return nil
	}
	return t.provider.Tracer(instrumentation + component)
}

// Shutdown exports the spans still buffered and stops the exporter, within
// ctx. It does nothing when tracing is off.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	if err := t.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("flush spans: %w", err)
	}
	return nil
}

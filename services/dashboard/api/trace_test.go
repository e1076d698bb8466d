package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tockhq/tock/pkg/telemetry"
	"github.com/tockhq/tock/services/dashboard/api"
)

// tracedSetup is setup with tracing on, its spans kept in memory.
func tracedSetup(t *testing.T) (*bundle, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	return setup(t, func(d *api.Deps) { d.Tracer = tp.Tracer("api") }), rec
}

// span returns the one ended span named name.
func span(t *testing.T, rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "spans named %q", name)
	return found[0]
}

// attributes are a span's attributes by key.
func attributes(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// jsonBody is v encoded as JSON.
func jsonBody(t *testing.T, v any) io.Reader {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return bytes.NewReader(raw)
}

// storedTraceParent reads a job's trace_parent column; "" for NULL.
func (b *bundle) storedTraceParent(t *testing.T, id string) string {
	t.Helper()
	var tp *string
	require.NoError(t, b.store.Pool().QueryRow(t.Context(), `SELECT trace_parent FROM jobs WHERE id = $1`, id).Scan(&tp))
	if tp == nil {
		return ""
	}
	return *tp
}

func TestTracing(t *testing.T) {
	t.Parallel()
	// The client's own trace, as its instrumentation would send it.
	const clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	const clientParent = "00-" + clientTrace + "-00f067aa0ba902b7-01"

	t.Run("CreateContinuesTheClientsTraceAndStoresTheCreationSpan", func(t *testing.T) {
		t.Parallel()
		b, rec := tracedSetup(t)
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/api/v1/jobs",
			jsonBody(t, spec("traced", b.now.Add(time.Hour))))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("traceparent", clientParent)
		w := httptest.NewRecorder()
		b.h.ServeHTTP(w, req)
		require.Equal(t, http.StatusCreated, w.Code, w.Body.String())
		j := decode[api.Job](t, w)

		server := span(t, rec, "POST /api/v1/jobs")
		require.Equal(t, trace.SpanKindServer, server.SpanKind())
		require.Equal(t, clientTrace, server.SpanContext().TraceID().String(), "the client's trace goes on")
		require.Equal(t, "00f067aa0ba902b7", server.Parent().SpanID().String())
		require.True(t, server.Parent().IsRemote())
		attrs := attributes(server)
		require.Equal(t, "/api/v1/jobs", attrs[telemetry.HTTPRoute].AsString())
		require.Equal(t, "POST", attrs[telemetry.HTTPMethod].AsString())
		require.EqualValues(t, http.StatusCreated, attrs[telemetry.HTTPStatusCode].AsInt64())

		create := span(t, rec, "tock.create")
		require.Equal(t, server.SpanContext().SpanID(), create.Parent().SpanID(), "the store write is the request's child")
		require.Equal(t, clientTrace, create.SpanContext().TraceID().String())
		cattrs := attributes(create)
		require.Equal(t, j.ID.String(), cattrs[telemetry.JobID].AsString())
		require.EqualValues(t, 1, cattrs[telemetry.Jobs].AsInt64())
		require.Equal(t, "ping", cattrs[telemetry.JobType].AsString())

		require.Equal(t, telemetry.TraceParent(create.SpanContext()), b.storedTraceParent(t, j.ID.String()),
			"the job keeps its creation span's context")
	})

	t.Run("NamesSpansByRouteNotPath", func(t *testing.T) {
		t.Parallel()
		b, rec := tracedSetup(t)
		j := b.create(t, "named", b.now.Add(time.Hour))
		w := b.do(t, http.MethodGet, "/api/v1/jobs/"+j.ID.String(), nil)
		require.Equal(t, http.StatusOK, w.Code)
		got := span(t, rec, "GET /api/v1/jobs/:id")
		require.Equal(t, "/api/v1/jobs/:id", attributes(got)[telemetry.HTTPRoute].AsString())
		w = b.do(t, http.MethodGet, "/no/such/path", nil)
		require.Equal(t, http.StatusNotFound, w.Code)
		span(t, rec, "GET") // unmatched: the method alone
	})

	t.Run("BatchSharesOneCreationSpan", func(t *testing.T) {
		t.Parallel()
		b, rec := tracedSetup(t)
		w := b.do(t, http.MethodPost, "/api/v1/jobs:batch", map[string]any{"jobs": []any{
			spec("a", b.now.Add(time.Hour)), spec("b", b.now.Add(time.Minute)),
		}})
		require.Equal(t, http.StatusCreated, w.Code, w.Body.String())
		out := decode[api.BatchCreated](t, w)
		create := span(t, rec, "tock.create")
		require.EqualValues(t, 2, attributes(create)[telemetry.Jobs].AsInt64())
		want := telemetry.TraceParent(create.SpanContext())
		for _, id := range out.IDs {
			require.Equal(t, want, b.storedTraceParent(t, id.String()))
		}
	})

	t.Run("OffStoresNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/api/v1/jobs",
			jsonBody(t, spec("untraced", b.now.Add(time.Hour))))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("traceparent", clientParent)
		w := httptest.NewRecorder()
		b.h.ServeHTTP(w, req)
		require.Equal(t, http.StatusCreated, w.Code, w.Body.String())
		require.Empty(t, b.storedTraceParent(t, decode[api.Job](t, w).ID.String()), "NULL with tracing off")
	})
}

package telemetry_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/tockhq/tock/pkg/config"
	"github.com/tockhq/tock/pkg/telemetry"
)

func TestSetup(t *testing.T) {
	t.Parallel()

	t.Run("OffIsNilAndHandsOutNilTracers", func(t *testing.T) {
		t.Parallel()
		tr, err := telemetry.Setup(t.Context(), config.Tracing{}, "worker", zap.NewNop())
		require.NoError(t, err)
		require.Nil(t, tr)
		require.Nil(t, tr.Tracer("worker"), "components test for nil and trace nothing")
		require.NoError(t, tr.Shutdown(t.Context()))
	})
}

// TestSetupExports is not parallel: the exporter reads its endpoint from
// the environment.
func TestSetupExports(t *testing.T) {
	got := make(chan *collectortrace.ExportTraceServiceRequest, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.URL.Path != "/v1/traces" {
			http.Error(w, "no", http.StatusBadRequest)
			return
		}
		var req collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got <- &req
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "")

	tr, err := telemetry.Setup(t.Context(), config.Tracing{Endpoint: srv.URL}, "worker", zap.NewNop())
	require.NoError(t, err)
	_, span := tr.Tracer("worker").Start(t.Context(), "tock.attempt")
	span.End()
	require.NoError(t, tr.Shutdown(t.Context()), "shutdown flushes what is buffered")

	req := <-got
	rs := req.GetResourceSpans()
	require.Len(t, rs, 1)
	var service string
	for _, kv := range rs[0].GetResource().GetAttributes() {
		if kv.GetKey() == "service.name" {
			service = kv.GetValue().GetStringValue()
		}
	}
	require.Equal(t, "tock-worker", service)
	require.Equal(t, "tock.attempt", rs[0].GetScopeSpans()[0].GetSpans()[0].GetName())
}

func TestTraceParent(t *testing.T) {
	t.Parallel()

	t.Run("RoundTrips", func(t *testing.T) {
		t.Parallel()
		const s = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		sc := telemetry.ParseTraceParent(s)
		require.True(t, sc.IsValid())
		require.True(t, sc.IsRemote())
		require.True(t, sc.IsSampled())
		require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", sc.TraceID().String())
		require.Equal(t, s, telemetry.TraceParent(sc))
	})

	t.Run("KeepsTheSampledFlag", func(t *testing.T) {
		t.Parallel()
		const s = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
		require.Equal(t, s, telemetry.TraceParent(telemetry.ParseTraceParent(s)))
	})

	t.Run("HeadersCarryTheTraceState", func(t *testing.T) {
		t.Parallel()
		ts, err := trace.ParseTraceState("vendor=opaque")
		require.NoError(t, err)
		sc := telemetry.ParseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").WithTraceState(ts)
		parent, state := telemetry.Headers(sc)
		require.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", parent)
		require.Equal(t, "vendor=opaque", state)
	})

	t.Run("InvalidIsEmpty", func(t *testing.T) {
		t.Parallel()
		for _, s := range []string{"", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"} {
			require.False(t, telemetry.ParseTraceParent(s).IsValid(), "%q", s)
		}
		require.Empty(t, telemetry.TraceParent(trace.SpanContext{}))
	})
}

package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/tockhq/tock/e2e/cluster"
)

// otlpReceiver is an OTLP/HTTP collector in the test: it keeps every span
// the services export, with the name of the service that sent it.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []receivedSpan
}

// receivedSpan is one exported span and the service.name of its resource.
type receivedSpan struct {
	service string
	*tracepb.Span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "only OTLP/HTTP protobuf traces", http.StatusUnsupportedMediaType)
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		raw, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var export collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &export); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range export.GetResourceSpans() {
			service := stringAttr(rs.GetResource().GetAttributes(), "service.name")
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					r.spans = append(r.spans, receivedSpan{service: service, Span: s})
				}
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.Close)
	return r
}

// find returns the spans named name that match.
func (r *otlpReceiver) find(name string, match func(receivedSpan) bool) []receivedSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []receivedSpan
	for _, s := range r.spans {
		if s.GetName() == name && (match == nil || match(s)) {
			out = append(out, s)
		}
	}
	return out
}

func stringAttr(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

func intAttr(kvs []*commonpb.KeyValue, key string) int64 {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			return kv.GetValue().GetIntValue()
		}
	}
	return -1
}

// TestTrace is the tracing acceptance: with OTEL_EXPORTER_OTLP_ENDPOINT set,
// one webhook job created with the client's traceparent can be followed from
// the API call to its delivery. The dashboard's request span continues the
// client's trace and its create span is the job's creation; the loader's
// round and the publisher's batch that moved it are exported; the attempt's
// span is a child of the creation span and links to it; and the target
// receives a traceparent naming the attempt's span.
func TestTrace(t *testing.T) {
	recv := newOTLPReceiver(t)
	c := start(t, cluster.Options{
		Schedulers: 1, Workers: 1,
		Env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.URL, "OTEL_BSP_SCHEDULE_DELAY=100",
			// A horizon shorter than the job's delay leaves it to the loader,
			// so its round is traced too.
			"TOCK_LOAD_HORIZON=1s"},
	})
	target := cluster.NewTarget()
	defer target.Close()
	ctx := t.Context()

	// The client's own trace, as its instrumentation would send it.
	const clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	body, err := json.Marshal(createJob{Name: "traced", Type: "webhook", RunAt: time.Now().Add(2500 * time.Millisecond),
		Payload: map[string]any{"url": target.URL + "/ok"}})
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.APIURL+"/api/v1/jobs", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+clientTrace+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var j cluster.Job
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&j))
	_ = resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)

	require.True(t, target.WaitFor(30*time.Second, func(ds []cluster.Delivery) bool { return len(ds) >= 1 }), "the job was not delivered")
	delivery := target.Deliveries()[0]
	require.Equal(t, j.ID, delivery.JobID)

	isJob := func(s receivedSpan) bool { return stringAttr(s.GetAttributes(), "tock.job.id") == j.ID }
	require.True(t, cluster.WaitUntil(15*time.Second, 50*time.Millisecond, func() bool {
		return len(recv.find("tock.attempt", isJob)) == 1 && len(recv.find("tock.publish", nil)) > 0 && len(recv.find("tock.load", nil)) > 0
	}), "the attempt, publish and load spans were not all exported")

	// The dashboard: the client's trace goes on, the create span is its child.
	server := recv.find("POST /api/v1/jobs", nil)
	require.Len(t, server, 1)
	require.Equal(t, "tock-dashboard", server[0].service)
	require.Equal(t, clientTrace, hex.EncodeToString(server[0].GetTraceId()))
	require.Equal(t, "00f067aa0ba902b7", hex.EncodeToString(server[0].GetParentSpanId()))
	require.Equal(t, "/api/v1/jobs", stringAttr(server[0].GetAttributes(), "http.route"))
	require.EqualValues(t, http.StatusCreated, intAttr(server[0].GetAttributes(), "http.response.status_code"))
	create := recv.find("tock.create", isJob)
	require.Len(t, create, 1)
	require.Equal(t, server[0].GetSpanId(), create[0].GetParentSpanId())
	require.Equal(t, clientTrace, hex.EncodeToString(create[0].GetTraceId()))

	// The scheduler: the loader's round claimed it, a publisher batch moved it.
	load := recv.find("tock.load", func(s receivedSpan) bool { return intAttr(s.GetAttributes(), "tock.occurrences") >= 1 })
	require.NotEmpty(t, load)
	require.Equal(t, "tock-scheduler", load[0].service)
	publish := recv.find("tock.publish", func(s receivedSpan) bool { return intAttr(s.GetAttributes(), "tock.published") >= 1 })
	require.NotEmpty(t, publish)
	require.Equal(t, "tock-scheduler", publish[0].service)
	require.EqualValues(t, 0, intAttr(publish[0].GetAttributes(), "tock.shard"))

	// The worker: the attempt is the creation's child, and links to it.
	attempt := recv.find("tock.attempt", isJob)[0]
	require.Equal(t, "tock-worker", attempt.service)
	require.Equal(t, clientTrace, hex.EncodeToString(attempt.GetTraceId()))
	require.Equal(t, create[0].GetSpanId(), attempt.GetParentSpanId())
	require.Len(t, attempt.GetLinks(), 1)
	link := attempt.GetLinks()[0]
	require.Equal(t, create[0].GetTraceId(), link.GetTraceId())
	require.Equal(t, create[0].GetSpanId(), link.GetSpanId())
	require.Equal(t, "completed", stringAttr(attempt.GetAttributes(), "tock.outcome"))
	require.EqualValues(t, 1, intAttr(attempt.GetAttributes(), "tock.attempt"))
	require.Equal(t, "webhook", stringAttr(attempt.GetAttributes(), "tock.job.type"))
	require.NotEmpty(t, stringAttr(attempt.GetAttributes(), "tock.run.id"))
	require.Equal(t, tracepb.Span_SPAN_KIND_CLIENT, attempt.GetKind())

	// The target: the traceparent names the attempt's span.
	parts := strings.Split(delivery.TraceParent, "-")
	require.Len(t, parts, 4, "traceparent %q", delivery.TraceParent)
	require.Equal(t, hex.EncodeToString(attempt.GetTraceId()), parts[1], "the target continues the attempt's trace")
	require.Equal(t, hex.EncodeToString(attempt.GetSpanId()), parts[2])
}

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// TestMetrics is the observability acceptance: after 20 webhook jobs that
// succeed and one that fails on both of its attempts, every service's
// /metrics counts them exactly (worker: lateness per started attempt, outcomes
// by type and status; scheduler: claims, moves and the queue's sizes;
// dashboard: the creations by route pattern and code), and each worker logs one
// run_finished line per outcome with its ids and figures.
func TestMetrics(t *testing.T) {
	c := start(t, cluster.Options{
		Schedulers: 1, Workers: 2,
		// A horizon shorter than the jobs' delay leaves them to the loader
		// rather than the dashboard's short-notice path, so it claims them all.
		Env: []string{"TOCK_LOAD_HORIZON=1s", "TOCK_RETRY_BACKOFF=100ms", "TOCK_RETRY_BACKOFF_MAX=200ms"},
	})
	target := cluster.NewTarget()
	defer target.Close()
	api := c.API()
	ctx := t.Context()

	const ok = 20
	due := time.Now().Add(2500 * time.Millisecond)
	for i := range ok {
		_, err := api.CreateJob(ctx, createJob{Name: fmt.Sprintf("metered-%d", i), Type: "webhook", RunAt: due,
			Payload: map[string]any{"url": target.URL + "/ok"}})
		require.NoError(t, err)
	}
	one := 1
	_, err := api.CreateJob(ctx, createJob{Name: "metered-fail", Type: "webhook", RunAt: due, MaxRetries: &one,
		Payload: map[string]any{"url": target.URL + "/fail"}})
	require.NoError(t, err)
	const attempts = ok + 2 // the failing job's first attempt and its one retry

	workers := []string{"worker-1", "worker-2"}
	// Outcomes are counted once recorded, just after the target answered.
	var wm []map[string]*dto.MetricFamily
	require.True(t, cluster.WaitUntil(30*time.Second, 100*time.Millisecond, func() bool {
		wm = wm[:0]
		for _, w := range workers {
			wm = append(wm, scrape(t, c.Proc(w).MetricsAddr))
		}
		return sum(wm, "tock_runs_total", nil) >= attempts
	}), "the workers did not count %d outcomes; deliveries: %d", attempts, target.Count())

	require.Equal(t, float64(attempts), sum(wm, "tock_job_lateness_seconds", nil), "one lateness per started attempt")
	require.Equal(t, float64(ok), sum(wm, "tock_runs_total", map[string]string{"type": "webhook", "status": "completed"}))
	require.Equal(t, 1.0, sum(wm, "tock_runs_total", map[string]string{"type": "webhook", "status": "failed"}))
	require.Equal(t, 1.0, sum(wm, "tock_runs_total", map[string]string{"type": "webhook", "status": "permanently_failed"}))
	require.Equal(t, float64(attempts), sum(wm, "tock_runs_total", nil), "no other outcome")
	require.Equal(t, float64(attempts), sum(wm, "tock_run_duration_seconds", map[string]string{"type": "webhook"}))
	require.Zero(t, sum(wm, "tock_reclaimed_total", nil), "nothing was left pending")
	// Every attempt started within the 10 s top bucket: the histogram resolves it.
	require.Equal(t, float64(attempts), bucket(wm, "tock_job_lateness_seconds", 10))

	sm := []map[string]*dto.MetricFamily{scrape(t, c.Proc("scheduler-1").MetricsAddr)}
	require.GreaterOrEqual(t, sum(sm, "tock_loader_claimed_total", nil), float64(ok+1), "the loader claimed every job")
	require.GreaterOrEqual(t, sum(sm, "tock_publisher_moved_total", nil), float64(attempts), "every attempt, the retry too, went through the stream")
	for _, name := range []string{"tock_due_set_size", "tock_stream_length", "tock_stream_pending"} {
		require.Contains(t, sm[0], name)
	}
	require.Equal(t, 1.0, sum(sm, "tock_queue_stats_up", nil))
	require.Contains(t, sm[0], "go_goroutines", "the Go collector is registered")

	dm := []map[string]*dto.MetricFamily{scrape(t, c.Proc("dashboard").MetricsAddr)}
	require.Equal(t, float64(ok+1), sum(dm, "tock_http_requests_total", map[string]string{"route": "/api/v1/jobs", "method": "POST", "code": "201"}))
	require.Equal(t, float64(ok+1), sum(dm, "tock_http_request_duration_seconds", map[string]string{"route": "/api/v1/jobs", "method": "POST"}))
	// The API port does not serve metrics.
	resp, err := http.Get(c.APIURL + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	// One run_finished line per outcome, with its ids and figures.
	lines := 0
	for _, w := range workers {
		sc := bufio.NewScanner(strings.NewReader(c.LogTail(w, 100_000)))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) != nil || line["msg"] != "run_finished" {
				continue
			}
			lines++
			for _, f := range []string{"job_id", "owner", "type", "attempt", "status", "lateness_ms", "duration_ms"} {
				require.Contains(t, line, f, "run_finished: %s", sc.Text())
			}
			require.Equal(t, "webhook", line["type"])
		}
	}
	require.Equal(t, attempts, lines, "one run_finished line per outcome")
}

// scrape reads and parses the Prometheus text served at addr/metrics.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// sum adds up name's series carrying every label in want, over every scrape:
// counter and gauge values, histogram sample counts.
func sum(scrapes []map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	total := 0.0
	each(scrapes, name, want, func(m *dto.Metric) {
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Histogram != nil:
			total += float64(m.Histogram.GetSampleCount())
		}
	})
	return total
}

// bucket adds up the cumulative count of name's histogram bucket le.
func bucket(scrapes []map[string]*dto.MetricFamily, name string, le float64) float64 {
	total := 0.0
	each(scrapes, name, nil, func(m *dto.Metric) {
		for _, b := range m.GetHistogram().GetBucket() {
			if b.GetUpperBound() == le {
				total += float64(b.GetCumulativeCount())
			}
		}
	})
	return total
}

func each(scrapes []map[string]*dto.MetricFamily, name string, want map[string]string, f func(*dto.Metric)) {
	for _, fams := range scrapes {
		fam, ok := fams[name]
		if !ok {
			continue
		}
	metrics:
		for _, m := range fam.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue metrics
				}
			}
			f(m)
		}
	}
}

package metrics

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/queue"
)

func TestQueueCollector(t *testing.T) {
	t.Parallel()
	t.Run("ReportsSizes", func(t *testing.T) {
		t.Parallel()
		c := NewQueueCollector(func(context.Context) (queue.Stats, error) {
			return queue.Stats{Due: 7, Ready: 3, Pending: 2, Held: 4}, nil
		})
		want := `
# HELP tock_due_set_size Members waiting in the Redis due set.
# TYPE tock_due_set_size gauge
tock_due_set_size 7
# HELP tock_held Due occurrences held back because their owner or their target host was at its cap on attempts in flight.
# TYPE tock_held gauge
tock_held 4
# HELP tock_stream_length Entries in the ready stream, unread and pending.
# TYPE tock_stream_length gauge
tock_stream_length 3
# HELP tock_stream_pending Stream entries delivered to a worker and not yet acknowledged.
# TYPE tock_stream_pending gauge
tock_stream_pending 2
# HELP tock_queue_stats_up 1 when the last scrape read the queue's sizes from Redis, 0 when it could not.
# TYPE tock_queue_stats_up gauge
tock_queue_stats_up 1
`
		require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want)))
	})
	t.Run("LeavesSizesOutWhenRedisFails", func(t *testing.T) {
		t.Parallel()
		c := NewQueueCollector(func(context.Context) (queue.Stats, error) { return queue.Stats{}, errors.New("down") })
		require.Equal(t, 1, testutil.CollectAndCount(c))
		require.Equal(t, 0, testutil.CollectAndCount(c, "tock_due_set_size"))
	})
}

func TestHandler(t *testing.T) {
	t.Parallel()
	reg := NewRegistry()
	w := NewWorker(reg)
	NewScheduler(reg)
	NewAPI(reg)
	w.Runs.WithLabelValues("webhook", "completed").Add(2)
	w.Lateness.Observe(0.003)

	rec := httptest.NewRecorder()
	Handler(reg).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, 200, rec.Code)
	body := rec.Body.String()
	require.Contains(t, body, `tock_runs_total{status="completed",type="webhook"} 2`)
	require.Contains(t, body, `tock_job_lateness_seconds_bucket{le="0.005"} 1`)
	require.Contains(t, body, "tock_job_lateness_seconds_count 1")
	require.Contains(t, body, "go_goroutines")
}

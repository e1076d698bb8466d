package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// TestPriorityUnderABacklog is the flow-control issue's priority
// acceptance on the real services, two schedulers and two workers: with a
// backlog of 50,000 jobs of priority 0, 100 jobs of priority 10 due at the
// same instant start within the first 5 % of the backlog's starts, and so
// do 100 more due a second later, in the middle of the backlog: they pass
// what is already waiting.
func TestPriorityUnderABacklog(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 2, Workers: 2})
	ctx := t.Context()
	api, _, err := c.API().User(ctx, "priority", map[string]any{"max_active_jobs": 100000, "jobs_per_minute": 1000000, "job_burst": 100000})
	require.NoError(t, err)

	var mu sync.Mutex
	starts := map[string][]time.Time{}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		mu.Lock()
		starts[r.URL.Path] = append(starts[r.URL.Path], at)
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer target.Close()
	count := func(path string) int {
		mu.Lock()
		defer mu.Unlock()
		return len(starts[path])
	}

	const backlog = 50_000
	at := time.Now().Add(8 * time.Second)
	later := at.Add(time.Second)
	jobsAt := func(n int, path string, prio int, due time.Time) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{"name": fmt.Sprintf("%s-%d", path, i), "type": "webhook", "run_at": due.Format(time.RFC3339Nano),
				"priority": prio, "max_retries": 0, "payload": hookTo(target.URL + path)}
		}
		return out
	}
	for i := 0; i < backlog; i += 10_000 {
		_, err := api.CreateBatch(ctx, jobsAt(10_000, "/low", 0, at))
		require.NoError(t, err)
	}
	_, err = api.CreateBatch(ctx, jobsAt(100, "/high", 10, at))
	require.NoError(t, err)
	_, err = api.CreateBatch(ctx, jobsAt(100, "/later", 10, later))
	require.NoError(t, err)
	require.True(t, time.Now().Before(at), "the jobs were created before they were due")

	require.True(t, cluster.WaitUntil(120*time.Second, 100*time.Millisecond, func() bool {
		return count("/low") >= backlog && count("/high") >= 100 && count("/later") >= 100
	}), "every job runs: %d, %d, %d", count("/low"), count("/high"), count("/later"))

	mu.Lock()
	low, high, late := starts["/low"], starts["/high"], starts["/later"]
	mu.Unlock()
	sort.Slice(low, func(i, j int) bool { return low[i].Before(low[j]) })
	lastOf := func(ts []time.Time) time.Time {
		var m time.Time
		for _, t := range ts {
			if t.After(m) {
				m = t
			}
		}
		return m
	}
	// lowBefore counts the backlog's starts before t.
	lowBefore := func(t time.Time) int { return sort.Search(len(low), func(i int) bool { return !low[i].Before(t) }) }
	highAhead := lowBefore(lastOf(high))
	lateAhead := lowBefore(lastOf(late)) - lowBefore(later)
	t.Logf("50,000 due at once, priority 0, drained in %s: the last of 100 of priority 10 due with them started after %d of them; of 100 due 1 s later, after %d more (%d had started when they were due)",
		lastOf(low).Sub(at).Round(time.Millisecond), highAhead, lateAhead, lowBefore(later))
	require.LessOrEqual(t, highAhead, backlog/20, "within the first 5 %% of the backlog's starts")
	require.Less(t, lowBefore(later), backlog-backlog/10, "a backlog was still waiting when the later ones were due")
	// What the workers have read already (up to a read per free slot,
	// 2,048 per worker) and the stream's unread part are not reordered:
	// the later ones pass the rest.
	require.LessOrEqual(t, lateAhead, backlog/10, "the later ones pass the waiting backlog")
}

package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// TestExpiry: a one-off job that can only start later than its
// expires_after (paused past it) never reaches the target, shows an expired run and ends
// expired; the same job without expiry runs.
func TestExpiry(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1})
	target := cluster.NewTarget()
	defer target.Close()
	api := c.API()
	ctx := t.Context()
	// Paused until well after they were due, then resumed: a one-off job
	// then starts at once, 4 s late.
	due := time.Now().Add(2 * time.Second)
	expiring, err := api.CreateJob(ctx, map[string]any{"name": "reminder", "type": "webhook", "run_at": due,
		"expires_after": "1s", "payload": map[string]any{"url": target.URL + "/expiring"}})
	require.NoError(t, err)
	control, err := api.CreateJob(ctx, map[string]any{"name": "control", "type": "webhook", "run_at": due,
		"payload": map[string]any{"url": target.URL + "/control"}})
	require.NoError(t, err)
	for _, id := range []string{expiring.ID, control.ID} {
		code, err := api.Action(ctx, id, "pause")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
	}
	time.Sleep(time.Until(due.Add(4 * time.Second)))
	for _, id := range []string{expiring.ID, control.ID} {
		code, err := api.Action(ctx, id, "resume")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
	}

	require.True(t, cluster.WaitUntil(20*time.Second, 50*time.Millisecond, func() bool {
		j, err := api.GetJob(ctx, expiring.ID)
		return err == nil && j.Status == "expired"
	}), "the late job ended expired")
	runs, err := api.Runs(ctx, expiring.ID, 10)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, "expired", runs[0].Status)
	require.Contains(t, runs[0].Error, "expires_after")
	require.True(t, target.WaitFor(20*time.Second, func(d []cluster.Delivery) bool { return len(cluster.ForJob(d, control.ID)) == 1 }),
		"the job without expiry ran")
	require.Empty(t, cluster.ForJob(target.Deliveries(), expiring.ID), "the expired job never reached the target")
}

// concurrency is a target whose every request takes hold, and which
// records, per job, the most requests it had in flight at once.
type concurrency struct {
	*httptest.Server
	hold     time.Duration
	mu       sync.Mutex
	inflight map[string]int
	most     map[string]int
	served   map[string]int
}

func newConcurrency(hold time.Duration) *concurrency {
	c := &concurrency{hold: hold, inflight: map[string]int{}, most: map[string]int{}, served: map[string]int{}}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Tock-Job-Id")
		c.mu.Lock()
		c.inflight[id]++
		c.most[id] = max(c.most[id], c.inflight[id])
		c.mu.Unlock()
		select {
		case <-time.After(c.hold):
		case <-r.Context().Done():
		}
		c.mu.Lock()
		c.inflight[id]--
		c.served[id]++
		c.mu.Unlock()
	}))
	return c
}

func (c *concurrency) stats(id string) (most, served int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.most[id], c.served[id]
}

// TestOverlap: an every-second cron aimed at a target that takes 3 s never
// has two runs at once under skip (the others are recorded skipped, reason
// overlap) nor under buffer_one, while allow piles them up.
func TestOverlap(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 1, Workers: 2})
	target := newConcurrency(3 * time.Second)
	defer target.Close()
	api := c.API()
	ctx := t.Context()
	ids := map[string]string{}
	for _, policy := range []string{"skip", "buffer_one", "allow"} {
		j, err := api.CreateJob(ctx, map[string]any{"name": "slow " + policy, "type": "webhook", "timeout": "10s",
			"schedule": map[string]any{"cron": "* * * * * *"}, "overlap": policy,
			"payload": map[string]any{"url": target.URL + "/slow"}})
		require.NoError(t, err)
		ids[policy] = j.ID
	}
	time.Sleep(10 * time.Second)
	for _, id := range ids {
		code, err := api.Do(ctx, http.MethodDelete, "/api/v1/jobs/"+id, nil, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusNoContent, code)
	}
	time.Sleep(4 * time.Second) // the runs in flight end

	for _, policy := range []string{"skip", "buffer_one"} {
		most, served := target.stats(ids[policy])
		require.Equal(t, 1, most, "%s: never two runs at once", policy)
		require.GreaterOrEqual(t, served, 2, "%s: it ran, one after the other", policy)
	}
	most, _ := target.stats(ids["allow"])
	require.Greater(t, most, 1, "allow lets them overlap")

	runs, err := api.Runs(ctx, ids["skip"], 100)
	require.NoError(t, err)
	skipped := 0
	for _, r := range runs {
		if r.Status == "skipped" {
			skipped++
			require.Contains(t, r.Error, "overlap")
		}
	}
	require.Positive(t, skipped, "skip records the occurrences it did not run")
}

// alertSink records the alerts posted to it.
type alertSink struct {
	*httptest.Server
	mu     sync.Mutex
	alerts []map[string]any
}

func newAlertSink() *alertSink {
	s := &alertSink{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var a map[string]any
		if json.Unmarshal(raw, &a) == nil {
			s.mu.Lock()
			s.alerts = append(s.alerts, a)
			s.mu.Unlock()
		}
	}))
	return s
}

func (s *alertSink) all() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.alerts...)
}

// TestNotify: a recurring job whose every occurrence fails permanently
// sends its notify webhook exactly one alert per permanently failed
// occurrence, naming the job and the run.
func TestNotify(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1})
	target := cluster.NewTarget()
	defer target.Close()
	sink := newAlertSink()
	defer sink.Close()
	api := c.API()
	ctx := t.Context()
	j, err := api.CreateJob(ctx, map[string]any{"name": "flaky", "type": "webhook", "max_retries": 0,
		"schedule": map[string]any{"cron": "* * * * * *"},
		"notify":   map[string]any{"on": []string{"permanently_failed"}, "webhook": map[string]any{"url": sink.URL + "/alerts"}},
		"payload":  map[string]any{"url": target.URL + "/fail"}})
	require.NoError(t, err)
	require.True(t, target.WaitFor(20*time.Second, func(d []cluster.Delivery) bool { return len(cluster.ForJob(d, j.ID)) >= 4 }))
	code, err := api.Do(ctx, http.MethodDelete, "/api/v1/jobs/"+j.ID, nil, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, code)

	var failed map[string]bool
	require.True(t, cluster.WaitUntil(15*time.Second, 100*time.Millisecond, func() bool {
		runs, err := api.Runs(ctx, j.ID, 100)
		if err != nil {
			return false
		}
		failed = map[string]bool{}
		for _, r := range runs {
			if r.Status == "running" {
				return false
			}
			if r.Status == "permanently_failed" {
				failed[r.ScheduledFor.UTC().Format(time.RFC3339Nano)] = true
			}
		}
		return len(sink.all()) >= len(failed)
	}), "every permanent failure alerted")
	time.Sleep(time.Second) // a duplicate would arrive meanwhile
	alerts := sink.all()
	require.Len(t, alerts, len(failed), "one alert per permanently failed occurrence")
	seen := map[string]bool{}
	for _, a := range alerts {
		require.Equal(t, "permanently_failed", a["event"])
		require.Equal(t, j.ID, a["job"].(map[string]any)["id"])
		run := a["run"].(map[string]any)
		at, err := time.Parse(time.RFC3339Nano, run["scheduled_for"].(string))
		require.NoError(t, err)
		key := at.UTC().Format(time.RFC3339Nano)
		require.True(t, failed[key], "the alert names a failed occurrence")
		require.False(t, seen[key], "once per occurrence")
		seen[key] = true
		require.Contains(t, run["error"], "500")
	}
}

// TestBulkRetry: 500 one-off jobs that failed permanently, retried by one
// bulk call on a filter, each run exactly once more.
func TestBulkRetry(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1})
	target := cluster.NewTarget()
	defer target.Close()
	api := c.API()
	ctx := t.Context()
	jobs := make([]any, 500)
	at := time.Now().Add(time.Second)
	for i := range jobs {
		jobs[i] = map[string]any{"name": "failing", "type": "webhook", "run_at": at, "max_retries": 0,
			"labels": map[string]string{"batch": "bulk-retry"}, "payload": map[string]any{"url": target.URL + "/fail"}}
	}
	ids, err := api.CreateBatch(ctx, jobs)
	require.NoError(t, err)
	require.Len(t, ids, 500)
	require.True(t, target.WaitFor(60*time.Second, func(d []cluster.Delivery) bool { return len(d) >= 500 }), "all 500 ran once")
	var dry struct {
		Matched int `json:"matched"`
	}
	require.True(t, cluster.WaitUntil(20*time.Second, 200*time.Millisecond, func() bool {
		code, err := api.Do(ctx, http.MethodPost, "/api/v1/jobs:bulk", map[string]any{"action": "retry", "dry_run": true,
			"filter": map[string]any{"status": "permanently_failed", "label": "batch=bulk-retry"}}, &dry)
		return err == nil && code == http.StatusOK && dry.Matched == 500
	}), "all 500 ended permanently_failed")

	var res struct {
		Matched int               `json:"matched"`
		Changed int               `json:"changed"`
		Skipped []json.RawMessage `json:"skipped"`
	}
	code, err := api.Do(ctx, http.MethodPost, "/api/v1/jobs:bulk", map[string]any{"action": "retry",
		"filter": map[string]any{"status": "permanently_failed", "label": "batch=bulk-retry"}}, &res)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, 500, res.Matched)
	require.Equal(t, 500, res.Changed)
	require.Empty(t, res.Skipped)

	require.True(t, target.WaitFor(60*time.Second, func(d []cluster.Delivery) bool { return len(d) >= 1000 }), "each re-ran")
	time.Sleep(2 * time.Second) // a second re-run would arrive meanwhile
	per := map[string][]int{}
	for _, d := range target.Deliveries() {
		per[d.JobID] = append(per[d.JobID], d.Attempt)
	}
	require.Len(t, per, 500)
	for id, attempts := range per {
		require.ElementsMatch(t, []int{1, 2}, attempts, "job %s ran once, then once more", id)
	}
}

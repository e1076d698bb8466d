package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/store"
)

// TestSteadyLoad holds a steady stream of webhook jobs, each due at its own
// millisecond, through the real loader, publisher and workers, and reports the
// lateness the target saw. CI runs it for 5 s; people run it for a minute:
//
//	TOCK_E2E_STEADY=60s TOCK_E2E_RATE=1000 go test -run TestSteadyLoad -v ./e2e/
//
// It asserts what users rely on (every job delivered once, none early), and
// reports the timing figures without asserting them.
func TestSteadyLoad(t *testing.T) {
	duration := 5 * time.Second
	if v := os.Getenv("TOCK_E2E_STEADY"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err)
		duration = d
	}
	rate := 1000
	if v := os.Getenv("TOCK_E2E_RATE"); v != "" {
		r, err := strconv.Atoi(v)
		require.NoError(t, err)
		rate = r
	}
	c := start(t, cluster.Options{Schedulers: 1, Workers: 2, Env: []string{"TOCK_LOG_LEVEL=warn"}})
	target := cluster.NewTarget()
	defer target.Close()
	ctx := t.Context()

	st, err := store.Open(ctx, c.DatabaseURL, 4)
	require.NoError(t, err)
	defer st.Close()

	// Jobs due from t0 on, one every 1/rate s, inserted unclaimed so the loader
	// claims them as it would any job created ahead of time.
	n := int(duration.Seconds() * float64(rate))
	t0 := time.Now().Add(8 * time.Second).Truncate(time.Millisecond)
	payload, _ := json.Marshal(jobtype.WebhookPayload{URL: target.URL + "/ok"})
	now := time.Now().UTC()
	jobs := make([]*job.Job, n)
	for i := range jobs {
		at := t0.Add(time.Duration(i) * time.Second / time.Duration(rate)).UTC().Truncate(time.Millisecond)
		jobs[i] = &job.Job{ID: job.NewID(), Owner: [16]byte{15: 1}, Name: "steady", Type: jobtype.TypeWebhook,
			Status: job.StatusScheduled, MaxRetries: 3, Timeout: 10 * time.Second, RunAt: at, DueAt: at,
			Payload: payload, CreatedAt: now, UpdatedAt: now, Timezone: "UTC"}
	}
	for start := 0; start < n; start += 10000 {
		require.NoError(t, st.CreateJobs(ctx, jobs[start:min(start+10000, n)], store.Create{}))
	}
	t.Logf("inserted %d jobs due from %s at %d/s", n, t0.Format(time.RFC3339Nano), rate)

	require.True(t, target.WaitFor(duration+60*time.Second, func([]cluster.Delivery) bool { return target.Count() >= n }),
		"not every job was delivered")
	ds := target.Deliveries()
	seen := map[string]bool{}
	var lateness []time.Duration
	early := 0
	for _, d := range ds {
		require.False(t, seen[d.IdempotencyKey], "job %s delivered twice", d.JobID)
		seen[d.IdempotencyKey] = true
		l := d.At.Sub(d.ScheduledFor)
		if l < 0 {
			early++
		}
		lateness = append(lateness, l)
	}
	require.Len(t, seen, n)
	require.Zero(t, early, "no job may start before it is due")
	slices.Sort(lateness)
	report := map[string]any{
		"jobs": n, "rate_per_s": rate, "duration_s": duration.Seconds(),
		"steady_lateness_p50_ms": ms(lateness[n/2]),
		"steady_lateness_p99_ms": ms(lateness[n*99/100]),
		"steady_lateness_max_ms": ms(lateness[n-1]),
		"steady_early_starts":    early,
	}
	t.Logf("steady %d jobs/s for %s: lateness p50=%.1fms p99=%.1fms max=%.1fms, early starts %d",
		rate, duration, report["steady_lateness_p50_ms"], report["steady_lateness_p99_ms"], report["steady_lateness_max_ms"], early)
	if dir := os.Getenv("TOCK_E2E_REPORT_DIR"); dir != "" {
		b, _ := json.MarshalIndent(report, "", "  ")
		_ = os.WriteFile(filepath.Join(dir, "steady.json"), b, 0o644)
	}
}

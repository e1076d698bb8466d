package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

type createJob struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	RunAt      time.Time      `json:"run_at"`
	Payload    map[string]any `json:"payload"`
	Priority   int            `json:"priority,omitempty"`
	MaxRetries *int           `json:"max_retries,omitempty"`
	Timeout    string         `json:"timeout,omitempty"`
}

// TestSpine is the spine's acceptance: one dashboard, two schedulers and two
// workers; 1,000 webhook jobs due within 5 s are each delivered exactly once
// and recorded completed; a job whose target answers 500 makes exactly four
// attempts and ends permanently_failed; a job due 1 s after creation shows its
// lateness through the short-notice path.
func TestSpine(t *testing.T) {
	c := start(t, cluster.Options{
		Schedulers: 2, Workers: 2,
		Env: []string{"TOCK_RETRY_BACKOFF=100ms", "TOCK_RETRY_BACKOFF_MAX=400ms"},
	})
	target := cluster.NewTarget()
	defer target.Close()
	api := c.API()
	ctx := t.Context()

	const n = 1000
	var (
		mu  sync.Mutex
		ids []string
	)
	create := func(spec createJob) cluster.Job {
		var j cluster.Job
		code, err := api.Do(ctx, "POST", "/api/v1/jobs", spec, &j)
		require.NoError(t, err)
		require.Equal(t, 201, code, "create %s", spec.Name)
		return j
	}

	// The short-notice job: due one second after it is created.
	short := create(createJob{Name: "short-notice", Type: "webhook", RunAt: time.Now().Add(time.Second),
		Payload: map[string]any{"url": target.URL + "/ok", "body": map[string]any{"short": true}}})
	three := 3
	failing := create(createJob{Name: "always-500", Type: "webhook", RunAt: time.Now().Add(2 * time.Second), MaxRetries: &three,
		Payload: map[string]any{"url": target.URL + "/fail"}})

	created := time.Now()
	var wg sync.WaitGroup
	work := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range work {
				due := time.Now().Add(1500*time.Millisecond + time.Duration(rand.Int64N(int64(3500*time.Millisecond))))
				j := create(createJob{Name: fmt.Sprintf("bulk-%d", i), Type: "webhook", RunAt: due,
					Payload: map[string]any{"url": target.URL + "/ok", "method": "POST", "body": map[string]any{"i": i}}})
				mu.Lock()
				ids = append(ids, j.ID)
				mu.Unlock()
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	t.Logf("created %d jobs in %s", n, time.Since(created).Round(time.Millisecond))

	okWanted := n + 1
	delivered := target.WaitFor(60*time.Second, func(ds []cluster.Delivery) bool {
		ok, fail := 0, 0
		for _, d := range ds {
			if d.Path == "/fail" {
				fail++
			} else {
				ok++
			}
		}
		return ok >= okWanted && fail >= 4
	})
	require.True(t, delivered, "not every job was delivered in time")

	// Let every outcome be recorded, then read the truth from Postgres.
	db, err := pgx.Connect(ctx, c.DatabaseURL)
	require.NoError(t, err)
	defer db.Close(context.Background())
	require.Eventually(t, func() bool {
		var running, unfinished int
		_ = db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'running') FROM job_runs`).Scan(&running)
		_ = db.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE status = 'scheduled'`).Scan(&unfinished)
		return running == 0 && unfinished == 0
	}, 30*time.Second, 100*time.Millisecond, "runs still running or jobs still scheduled")

	// Exactly once: one delivery per idempotency key, keyed as documented.
	ds := target.Deliveries()
	perKey := map[string][]cluster.Delivery{}
	for _, d := range ds {
		perKey[d.IdempotencyKey] = append(perKey[d.IdempotencyKey], d)
	}
	ids = append(ids, short.ID)
	for _, id := range ids {
		var key string
		for k, list := range perKey {
			if list[0].JobID == id {
				key = k
			}
		}
		require.NotEmpty(t, key, "job %s never delivered", id)
		require.Len(t, perKey[key], 1, "job %s delivered %d times", id, len(perKey[key]))
		d := perKey[key][0]
		require.Equal(t, fmt.Sprintf("%s:%d", id, d.ScheduledFor.UnixMilli()), key)
		require.Equal(t, 1, d.Attempt)
	}

	var completed int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE status = 'completed' AND attempt = 1 AND job_id = ANY($1::uuid[])`, ids).Scan(&completed))
	require.Equal(t, okWanted, completed, "every run row completed")
	var jobsCompleted int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE status = 'completed' AND id = ANY($1::uuid[])`, ids).Scan(&jobsCompleted))
	require.Equal(t, okWanted, jobsCompleted)

	// The failing job: four attempts, one idempotency key, the last one final.
	var fails []cluster.Delivery
	for _, d := range ds {
		if d.JobID == failing.ID {
			fails = append(fails, d)
		}
	}
	require.Len(t, fails, 4, "a job whose target answers 500 makes exactly 4 attempts")
	for i, d := range fails {
		require.Equal(t, fails[0].IdempotencyKey, d.IdempotencyKey)
		require.Equal(t, i+1, d.Attempt)
	}
	var runs struct {
		Runs []cluster.Run `json:"runs"`
	}
	code, err := api.Do(ctx, "GET", "/api/v1/jobs/"+failing.ID+"/runs", nil, &runs)
	require.NoError(t, err)
	require.Equal(t, 200, code)
	require.Len(t, runs.Runs, 4)
	statuses := map[int]string{}
	for _, r := range runs.Runs {
		statuses[r.Attempt] = r.Status
	}
	require.Equal(t, map[int]string{1: "failed", 2: "failed", 3: "failed", 4: "permanently_failed"}, statuses)
	var fj cluster.Job
	_, err = api.Do(ctx, "GET", "/api/v1/jobs/"+failing.ID, nil, &fj)
	require.NoError(t, err)
	require.Equal(t, "permanently_failed", fj.Status)

	// Lateness as the target saw it: request received minus scheduled_for.
	var lateness []time.Duration
	early := 0
	var shortLate time.Duration
	for _, d := range ds {
		if d.Path == "/fail" {
			continue
		}
		l := d.At.Sub(d.ScheduledFor)
		if l < 0 {
			early++
		}
		lateness = append(lateness, l)
		if d.JobID == short.ID {
			shortLate = l
		}
	}
	require.Zero(t, early, "no job may start before it is due")
	slices.Sort(lateness)
	report := map[string]any{
		"jobs":                 len(lateness),
		"lateness_p50_ms":      ms(lateness[len(lateness)/2]),
		"lateness_p99_ms":      ms(lateness[len(lateness)*99/100]),
		"lateness_max_ms":      ms(lateness[len(lateness)-1]),
		"short_notice_late_ms": ms(shortLate),
		"early_starts":         early,
		"failing_job_attempts": len(fails),
	}
	t.Logf("spine lateness (target receipt - scheduled_for): p50=%.1fms p99=%.1fms max=%.1fms; short-notice job due 1 s after create: %.1fms late",
		report["lateness_p50_ms"], report["lateness_p99_ms"], report["lateness_max_ms"], report["short_notice_late_ms"])
	if dir := os.Getenv("TOCK_E2E_REPORT_DIR"); dir != "" {
		b, _ := json.MarshalIndent(report, "", "  ")
		_ = os.WriteFile(filepath.Join(dir, "spine.json"), b, 0o644)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

package store_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/testenv"
)

// seedRunsSQL gives each of $1's jobs $2 runs, one every 30 days / $2,
// over the 30 days before $3: one in 1,000 permanently failed (a third of
// those with "connection refused"), one in 200 failed, one in 1,000
// skipped, the rest completed.
const seedRunsSQL = `INSERT INTO job_runs (job_id, scheduled_for, attempt, status, id, owner_id, due_at, started_at, lease_until, finished_at, error)
SELECT s.id, s.t, 1, s.status::run_status, gen_random_uuid(), $1, s.t, s.t, s.t + interval '35 s', s.t + interval '1 s',
       CASE WHEN s.status = 'permanently_failed' AND s.n % 3000 = 7 THEN 'dial tcp 10.0.0.1:443: connect: connection refused'
            WHEN s.status = 'permanently_failed' THEN 'status 500' WHEN s.status = 'failed' THEN 'status 503' END
FROM (SELECT j.id, n,
             $3::timestamptz - interval '30 days' + (k * 2592000.0 / $2 + j.i * 2592000.0 / $2 / j.total) * interval '1 second' AS t,
             CASE WHEN n % 1000 = 7 THEN 'permanently_failed' WHEN n % 200 = 3 THEN 'failed'
                  WHEN n % 1000 = 11 THEN 'skipped' ELSE 'completed' END AS status
      FROM (SELECT id, row_number() OVER (ORDER BY id) - 1 AS i, count(*) OVER () AS total FROM jobs WHERE owner_id = $1) j
      CROSS JOIN generate_series(0, $2 - 1) k
      CROSS JOIN LATERAL (SELECT k * j.total + j.i AS n) x) s`

// BenchmarkListRuns times the run search over TOCK_BENCH_RUNS runs of one
// owner (1,000,000 by default, 1,000 jobs over 30 days, 0.1% permanently
// failed), with 100,000 runs of another owner beside them: failures whose
// error says "refused", the newest page, completed runs, one label's runs
// (1% of the jobs), and a day's counts by status. It logs the plans of the
// first two. Run it with
//
//	go test -run '^$' -bench BenchmarkListRuns -benchtime 200x ./store/
func BenchmarkListRuns(b *testing.B) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("TOCK_BENCH_RUNS")); err == nil && v > 0 {
		n = v
	}
	st := testenv.Store(b)
	ctx := b.Context()
	owner := uuid.MustParse("0190aaaa-0000-7000-8000-00000000000a")
	other := uuid.MustParse("0190bbbb-0000-7000-8000-00000000000b")
	now := time.Now().UTC().Truncate(time.Second)
	start := time.Now()
	if _, err := st.EnsureRunPartitions(ctx, now.Add(-31*24*time.Hour), now); err != nil {
		b.Fatal(err)
	}
	const jobs = 1_000
	for _, o := range []struct {
		id   uuid.UUID
		jobs int
	}{{owner, jobs}, {other, jobs / 10}} {
		batch := make([]*job.Job, o.jobs)
		for i := range batch {
			batch[i] = testenv.Job(o.id, now.Add(time.Hour), func(j *job.Job) {
				j.Labels = map[string]string{"customer": "c" + strconv.Itoa(i%100)}
			})
		}
		if err := st.CreateJobs(ctx, batch, store.Create{}); err != nil {
			b.Fatal(err)
		}
		if _, err := st.Pool().Exec(ctx, seedRunsSQL, o.id, n/jobs, now); err != nil {
			b.Fatal(err)
		}
	}
	// VACUUM as autovacuum would after the inserts: it sets the visibility
	// map that the counts' index-only scans rely on.
	for _, q := range []string{"VACUUM ANALYZE job_runs", "ANALYZE jobs", "ANALYZE job_labels"} {
		if _, err := st.Pool().Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%d runs of 1,000 jobs (and %d of another owner) created in %s", n, n/10, time.Since(start).Round(time.Second))

	cases := []struct {
		name string
		f    store.RunSearch
	}{
		{"FailedRefused", store.RunSearch{Status: job.RunPermanentlyFailed, Error: "refused"}},
		{"Newest", store.RunSearch{}},
		{"Completed", store.RunSearch{Status: job.RunCompleted}},
		{"Label", store.RunSearch{Labels: []store.Label{{Key: "customer", Value: "c7"}}}},
	}
	for _, c := range cases {
		c.f.Owner, c.f.Limit = owner, 51
		b.Run(c.name, func(b *testing.B) {
			got, resume, err := st.SearchRuns(ctx, c.f)
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("%s: %d runs on the first page, resume %v", c.name, len(got), resume)
			if c.f.Type == "" && len(c.f.Labels) == 0 && (c.name == "FailedRefused" || c.name == "Newest") {
				b.Logf("plan:\n%s", explainRuns(b, st, c.f))
			}
			for b.Loop() {
				if _, _, err := st.SearchRuns(ctx, c.f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("StatsByStatus", func(b *testing.B) {
		got, err := st.CountRuns(ctx, owner, now.Add(-24*time.Hour), now, store.GroupByStatus, 1001)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("counts: %v", got)
		for b.Loop() {
			if _, err := st.CountRuns(ctx, owner, now.Add(-24*time.Hour), now, store.GroupByStatus, 1001); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// explainRuns returns the plan of f's search query (an owner's, with no
// label or type filter), executed.
func explainRuns(b *testing.B, st *store.Store, f store.RunSearch) string {
	args := []any{f.Owner, uuid.Nil, time.Unix(0, 0), time.Date(9999, time.December, 31, 23, 59, 59, 0, time.UTC), int16(0), uuid.Nil,
		store.DefaultRunWalk, f.Error, "", []string{}, []string{}, f.Limit}
	rows, err := st.Pool().Query(b.Context(), "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, SUMMARY ON) "+store.SearchRunsSQL(string(f.Status)), args...)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			b.Fatal(err)
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

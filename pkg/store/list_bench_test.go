package store_test

import (
	"fmt"
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

// BenchmarkListJobs times one page (50) of one owner's jobs among
// TOCK_BENCH_JOBS of theirs (100,000 by default; issue 16 asks about
// 1,000,000), filtered by status (1% paused), by one label (0.1% of the
// jobs carry customer=c7), by two labels, and not at all, and logs each
// query's plan. Run it with
//
//	TOCK_BENCH_JOBS=1000000 go test -run '^$' -bench BenchmarkListJobs -benchtime 200x ./store/
func BenchmarkListJobs(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("TOCK_BENCH_JOBS")); err == nil && v > 0 {
		n = v
	}
	st := testenv.Store(b)
	ctx := b.Context()
	owner := uuid.MustParse("0190aaaa-0000-7000-8000-00000000000a")
	at := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Millisecond)
	start := time.Now()
	const batch = 10_000
	for from := 0; from < n; from += batch {
		jobs := make([]*job.Job, 0, batch)
		for i := from; i < min(from+batch, n); i++ {
			jobs = append(jobs, testenv.Job(owner, at.Add(time.Duration(i)*time.Millisecond), func(j *job.Job) {
				j.Labels = map[string]string{"customer": "c" + strconv.Itoa(i%1000), "plan": []string{"free", "pro"}[i%2]}
				if i%100 == 0 {
					j.Status, j.DueAt = job.StatusPaused, time.Time{}
				}
			}))
		}
		if err := st.CreateJobs(ctx, jobs, store.Create{}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := st.Pool().Exec(ctx, "ANALYZE jobs; ANALYZE job_labels"); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d jobs with 2 labels each created in %s", n, time.Since(start).Round(time.Second))

	cases := []struct {
		name string
		f    store.JobFilter
	}{
		{"Unfiltered", store.JobFilter{}},
		{"Status", store.JobFilter{Status: job.StatusPaused}},
		{"Label", store.JobFilter{Labels: []store.Label{{Key: "customer", Value: "c7"}}}},
		{"TwoLabels", store.JobFilter{Labels: []store.Label{{Key: "customer", Value: "c7"}, {Key: "plan", Value: "pro"}}}},
		{"LabelAndStatus", store.JobFilter{Labels: []store.Label{{Key: "plan", Value: "pro"}}, Status: job.StatusPaused}},
	}
	for _, c := range cases {
		c.f.Owner, c.f.Limit = owner, 51
		b.Run(c.name, func(b *testing.B) {
			got, err := st.ListJobs(ctx, c.f)
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("%s: %d jobs on the first page; plan:\n%s", c.name, len(got), explain(b, st, c.f))
			for b.Loop() {
				if _, err := st.ListJobs(ctx, c.f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// explain returns the plan of f's listing query, executed.
func explain(b *testing.B, st *store.Store, f store.JobFilter) string {
	sql, args := store.ListJobsSQL, []any{f.Owner, string(f.Status), string(f.Type), f.Before, f.Limit, f.ID, f.Name}
	if len(f.Labels) > 0 {
		var keys, values []string
		for _, l := range f.Labels[1:] {
			keys, values = append(keys, l.Key), append(values, l.Value)
		}
		sql = store.OwnLabelledJobsSQL
		args = append(args, f.Labels[0].Key, f.Labels[0].Value, keys, values, store.DefaultLabelWalk)
	}
	rows, err := st.Pool().Query(b.Context(), "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) "+sql, args...)
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
	return fmt.Sprint(strings.Join(lines, "\n"))
}

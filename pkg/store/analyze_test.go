package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/testenv"
)

// TestAnalyzeStale: after a bulk create, the partition that took it is
// found stale and analysed, after which the planner knows its size; a second
// look finds nothing to do.
func TestAnalyzeStale(t *testing.T) {
	t.Parallel()
	b := setup(t)
	at := b.now.Add(48 * time.Hour).Truncate(time.Hour) // one hour partition
	jobs := make([]*job.Job, 2000)
	for i := range jobs {
		jobs[i] = newJob(ownerA, at.Add(time.Duration(i)*time.Millisecond))
	}
	b.create(t, jobs...)

	var analysed []string
	// Postgres reports a backend's changes to its statistics within a second
	// or so of the commit: there is nothing to be told, so this polls.
	testenv.WaitUntil(t, 10*time.Second, func() bool {
		names, err := b.st.AnalyzeStale(b.ctx, 8)
		require.NoError(t, err)
		analysed = append(analysed, names...)
		return slices.Contains(analysed, "jobs_h"+at.Format("15"))
	}, "the partition that took 2,000 jobs was not found stale")
	require.Contains(t, analysed, "jobs_h"+at.Format("15"))

	var tuples float64
	require.NoError(t, b.st.Pool().QueryRow(b.ctx, `SELECT reltuples FROM pg_class WHERE oid = $1::regclass`, "jobs_h"+at.Format("15")).Scan(&tuples))
	require.InDelta(t, 2000, tuples, 1, "the planner knows the partition's size")
	again, err := b.st.AnalyzeStale(b.ctx, 8)
	require.NoError(t, err)
	require.NotContains(t, again, "jobs_h"+at.Format("15"))
}

// TestAnalyzeNeverAnalysed: a partition that holds rows and was never
// analysed is stale at once, however few its rows and whether or not the
// writer's counts have reached pg_stat_user_tables yet: without statistics
// the planner reckons such a partition holds about one row.
func TestAnalyzeNeverAnalysed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	at := b.now.Add(50 * time.Hour).Truncate(time.Hour)
	part := "jobs_h" + at.Format("15")
	b.create(t, newJob(ownerA, at), newJob(ownerA, at.Add(time.Millisecond)))

	names, err := b.st.AnalyzeStale(b.ctx, 64)
	require.NoError(t, err)
	require.Contains(t, names, part, "two rows, far below the change threshold, in a partition never analysed")
	var tuples float64
	require.NoError(t, b.st.Pool().QueryRow(b.ctx, `SELECT reltuples FROM pg_class WHERE oid = $1::regclass`, part).Scan(&tuples))
	require.InDelta(t, 2, tuples, 0.5)

	again, err := b.st.AnalyzeStale(b.ctx, 64)
	require.NoError(t, err)
	require.NotContains(t, again, part, "analysed once, it waits for changes again")
}

// TestAnalyzeSteadyChurn: a partition analysed less than a minute ago that
// has since changed by a fifth (a steady load's churn) is not analysed again
// yet; one that has since more than doubled (a burst) is, at once.
func TestAnalyzeSteadyChurn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	at := b.now.Add(52 * time.Hour).Truncate(time.Hour)
	part := "jobs_h" + at.Format("15")
	add := func(n, from int) {
		jobs := make([]*job.Job, n)
		for i := range jobs {
			jobs[i] = newJob(ownerA, at.Add(time.Duration(from+i)*time.Millisecond))
		}
		b.create(t, jobs...)
	}
	// changed is what pg_stat_user_tables has been told of the partition's
	// changes since its statistics were taken.
	changed := func() int64 {
		var n int64
		require.NoError(t, b.st.Pool().QueryRow(b.ctx,
			`SELECT n_mod_since_analyze FROM pg_stat_user_tables WHERE relid = $1::regclass`, part).Scan(&n))
		return n
	}
	add(5000, 0)
	// The creates' counts reach the statistics a moment after their commit:
	// counted after the ANALYZE, they would count as changes since.
	testenv.WaitUntil(t, 10*time.Second, func() bool { return changed() >= 5000 }, "the creates were not counted")
	_, err := b.st.Pool().Exec(b.ctx, "ANALYZE "+part)
	require.NoError(t, err)
	testenv.WaitUntil(t, 15*time.Second, func() bool {
		var seen bool
		require.NoError(t, b.st.Pool().QueryRow(b.ctx,
			`SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relid = $1::regclass`, part).Scan(&seen))
		return seen
	}, "the ANALYZE was not reported")

	add(1000, 5000) // a fifth
	testenv.WaitUntil(t, 10*time.Second, func() bool { return changed() >= 1000 }, "the changes were not counted")
	names, err := b.st.AnalyzeStale(b.ctx, 64)
	require.NoError(t, err)
	require.NotContains(t, names, part, "a fifth changed, analysed moments ago: not yet")

	add(6000, 6000) // more than its size since the statistics
	testenv.WaitUntil(t, 10*time.Second, func() bool { return changed() >= 7000 }, "the changes were not counted")
	names, err = b.st.AnalyzeStale(b.ctx, 64)
	require.NoError(t, err)
	require.Contains(t, names, part, "more than doubled: at once")
}

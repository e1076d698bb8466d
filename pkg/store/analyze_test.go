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
	var bounds int
	var payload bool
	require.NoError(t, b.st.Pool().QueryRow(b.ctx, `SELECT
    (SELECT cardinality(histogram_bounds::text::timestamptz[]) FROM pg_stats WHERE tablename = $1 AND attname = 'due_at'),
    EXISTS (SELECT 1 FROM pg_stats WHERE tablename = $1 AND attname = 'payload')`, "jobs_h"+at.Format("15")).Scan(&bounds, &payload))
	require.Equal(t, 11, bounds, "a coarse histogram: statistics target 10")
	require.False(t, payload, "no statistics of the payload (migration 024)")
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

package store_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
)

// insertRun writes a run row straight into job_runs, wherever Postgres routes it.
func (b *bundle) insertRun(t *testing.T, at time.Time) uuid.UUID {
	t.Helper()
	id := job.NewID()
	_, err := b.st.Pool().Exec(b.ctx, `INSERT INTO job_runs
(job_id, scheduled_for, attempt, status, id, owner_id, due_at, started_at, lease_until)
VALUES ($1, $2, 1, 'running', $3, $4, $2, $2, $2)`, id, at, job.NewID(), ownerA)
	require.NoError(t, err)
	return id
}

// runPartitionOf names the job_runs partition that holds the run of jobID.
func (b *bundle) runPartitionOf(t *testing.T, jobID uuid.UUID) string {
	t.Helper()
	var part string
	require.NoError(t, b.st.Pool().QueryRow(b.ctx, `SELECT tableoid::regclass::text FROM job_runs WHERE job_id = $1`, jobID).Scan(&part))
	return part
}

// runPartitions lists the day partitions of job_runs, sorted.
func (b *bundle) runPartitions(t *testing.T) []string {
	t.Helper()
	rows, err := b.st.Pool().Query(b.ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'job_runs'::regclass AND c.relname <> 'job_runs_default' ORDER BY 1`)
	require.NoError(t, err)
	var names []string
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		names = append(names, n)
	}
	require.NoError(t, rows.Err())
	return names
}

func dayPartition(day time.Time) string { return "job_runs_" + day.UTC().Format("20060102") }

func TestEnsureRunPartitions(t *testing.T) {
	t.Parallel()

	t.Run("IsIdempotent", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		before := b.runPartitions(t)
		require.Contains(t, before, dayPartition(b.now), "testenv made today's partition")

		created, err := b.st.EnsureRunPartitions(b.ctx, b.now.Add(-24*time.Hour), b.now.Add(24*time.Hour))
		require.NoError(t, err)
		require.Zero(t, created)
		require.Equal(t, before, b.runPartitions(t))
	})

	t.Run("CreatesEachDayOfTheRange", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		from := time.Date(2031, 3, 30, 22, 0, 0, 0, time.UTC)
		to := time.Date(2031, 4, 2, 1, 0, 0, 0, time.UTC)
		created, err := b.st.EnsureRunPartitions(b.ctx, from, to)
		require.NoError(t, err)
		require.Equal(t, 4, created)
		for _, want := range []string{"job_runs_20310330", "job_runs_20310331", "job_runs_20310401", "job_runs_20310402"} {
			require.Contains(t, b.runPartitions(t), want)
		}
		require.NotContains(t, b.runPartitions(t), "job_runs_20310403")

		edge := b.insertRun(t, time.Date(2031, 4, 1, 0, 0, 0, 0, time.UTC))
		require.Equal(t, "job_runs_20310401", b.runPartitionOf(t, edge), "a day starts at UTC midnight, inclusive")

		rows, err := b.st.Pool().Query(b.ctx, `SELECT attname || ' ' || attstattarget FROM pg_attribute
WHERE attrelid = 'job_runs_20310401'::regclass AND attname IN ('output', 'error', 'status') ORDER BY attname`)
		require.NoError(t, err)
		targets, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		require.Equal(t, []string{"error 0", "output 0", "status -1"}, targets, "the parent's statistics targets")
	})

	t.Run("MovesRowsOutOfDefault", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		day := b.now.Add(10 * 24 * time.Hour).Truncate(24 * time.Hour)
		inDay := b.insertRun(t, day.Add(13*time.Hour))
		lastMs := b.insertRun(t, day.Add(24*time.Hour-time.Millisecond))
		nextDay := b.insertRun(t, day.Add(24*time.Hour))
		for _, id := range []uuid.UUID{inDay, lastMs, nextDay} {
			require.Equal(t, "job_runs_default", b.runPartitionOf(t, id), "no partition for that day yet")
		}

		created, err := b.st.EnsureRunPartitions(b.ctx, day.Add(5*time.Hour), day.Add(6*time.Hour))
		require.NoError(t, err, "the default partition's rows for the day do not block the new partition")
		require.Equal(t, 1, created)
		require.Equal(t, dayPartition(day), b.runPartitionOf(t, inDay))
		require.Equal(t, dayPartition(day), b.runPartitionOf(t, lastMs))
		require.Equal(t, "job_runs_default", b.runPartitionOf(t, nextDay), "another day's row stays where it was")

		var rows int
		require.NoError(t, b.st.Pool().QueryRow(b.ctx, `SELECT count(*) FROM job_runs`).Scan(&rows))
		require.Equal(t, 3, rows, "moved, not copied or lost")
	})

	t.Run("ConcurrentCallsCreateEachDayOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		from := time.Date(2032, 6, 1, 0, 0, 0, 0, time.UTC)
		to := from.Add(4 * 24 * time.Hour)
		var (
			wg      sync.WaitGroup
			created [3]int
			errs    [3]error
		)
		for i := range created {
			wg.Add(1)
			go func() {
				defer wg.Done()
				created[i], errs[i] = b.st.EnsureRunPartitions(b.ctx, from, to)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		require.Equal(t, 5, created[0]+created[1]+created[2])
	})
}

func TestDropRunPartitionsBefore(t *testing.T) {
	t.Parallel()

	t.Run("DropsOnlyDaysEndedByCutoff", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		created, err := b.st.EnsureRunPartitions(b.ctx, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2020, 1, 3, 0, 0, 0, 0, time.UTC))
		require.NoError(t, err)
		require.Equal(t, 3, created)
		b.insertRun(t, time.Date(2020, 1, 1, 12, 0, 0, 0, time.UTC))
		defaultRow := b.insertRun(t, time.Date(2019, 6, 1, 0, 0, 0, 0, time.UTC))
		before := b.runPartitions(t)

		dropped, err := b.st.DropRunPartitionsBefore(b.ctx, time.Date(2020, 1, 2, 0, 0, 0, 0, time.UTC))
		require.NoError(t, err)
		require.Equal(t, []string{"job_runs_20200101"}, dropped)

		dropped, err = b.st.DropRunPartitionsBefore(b.ctx, time.Date(2020, 1, 2, 23, 59, 59, 0, time.UTC))
		require.NoError(t, err)
		require.Empty(t, dropped, "2020-01-02 has not ended yet")

		after := b.runPartitions(t)
		require.Equal(t, slices.DeleteFunc(before, func(n string) bool { return n == "job_runs_20200101" }), after)
		require.Contains(t, after, dayPartition(b.now))
		require.Equal(t, "job_runs_default", b.runPartitionOf(t, defaultRow), "the default partition is never dropped")
		var rows int
		require.NoError(t, b.st.Pool().QueryRow(b.ctx, `SELECT count(*) FROM job_runs`).Scan(&rows))
		require.Equal(t, 1, rows, "the dropped day's runs are gone")
	})
}

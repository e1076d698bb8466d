package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// staleSQL finds the partitions of jobs and job_runs that have changed by
// more than a tenth since their statistics were taken (Postgres's own
// autovacuum threshold, with a floor of 500 rows): a bulk create, a burst of
// starts and finishes. pg_stat_user_tables counts changes whether or not
// autovacuum runs.
//
// Those counts reach pg_stat_user_tables only when the writing session
// flushes them, which an idle session may put off for 10 s. So two more
// cases count as stale, read from the files and the catalog instead: a
// partition never analysed that holds pages (the first claims of a fresh
// deployment, or a burst created a few seconds before it is due), and one
// analysed in the last minute with pages but no row (an ANALYZE that ran
// while a large claim was still uncommitted). Without statistics the planner
// takes every test on a column for 0.5 % of the rows, so it reckons a
// partition of 10,000 claimed jobs holds one row that is due and scheduled,
// and drives the finish statement's join from a scan of it: every batch of
// outcomes then walked every claimed job, 1.3 to 3.8 s a statement and
// 700 µs of Postgres CPU per job in a 10,000-job burst instead of 60 to 90.
const staleSQL = `SELECT t.relid::regclass::text
FROM (SELECT relid FROM pg_partition_tree('jobs') WHERE isleaf
      UNION ALL SELECT relid FROM pg_partition_tree('job_runs') WHERE isleaf) t
JOIN pg_class c ON c.oid = t.relid
JOIN pg_stat_user_tables s ON s.relid = t.relid
WHERE s.n_mod_since_analyze > 500 + 0.1 * greatest(c.reltuples, 0)
   OR (coalesce(s.last_analyze, s.last_autoanalyze) IS NULL AND pg_relation_size(t.relid) > 0)
   OR (c.reltuples = 0 AND c.relpages > 0 AND s.last_analyze > now() - interval '1 minute')
ORDER BY s.n_mod_since_analyze DESC
LIMIT $1`

// AnalyzeStale takes fresh statistics of up to limit partitions of jobs and
// job_runs that changed much since their last ones, and returns their
// names. The hot statements join the batch they are given with these
// tables; statistics that still describe an empty partition make the
// planner scan a whole partition for each batch. Postgres's autovacuum does
// the same, but late after a bulk load, or never where it is off.
func (s *Store) AnalyzeStale(ctx context.Context, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, staleSQL, limit)
	if err != nil {
		return nil, fmt.Errorf("find stale statistics: %w", translate(err))
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("find stale statistics: %w", translate(err))
	}
	for i, name := range names {
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			b := &pgx.Batch{}
			b.Queue(fmt.Sprintf("SET LOCAL default_statistics_target = %d", analyzeTarget))
			// The name comes from regclass's output: quoted where it needs to be.
			b.Queue("ANALYZE " + name)
			return tx.SendBatch(ctx, b).Close()
		})
		if err != nil {
			return names[:i], fmt.Errorf("analyze %s: %w", name, translate(err))
		}
	}
	return names, nil
}

// analyzeTarget is the statistics target of AnalyzeStale's ANALYZEs: a
// sample of 3,000 rows instead of Postgres's 30,000. What they are for is
// the planner's picture of each partition's size after a bulk load or a
// burst, and the coarse shape of its columns, which the hot statements
// need (their plans hold whatever the distributions say); autovacuum, where
// it runs, takes the finer statistics at its own pace. An ANALYZE of
// jobs_idle holding 32,000 jobs took 12 ms instead of 100 to 230: at a
// steady 1,000 jobs a second, churn has it analysed every few seconds.
const analyzeTarget = 10

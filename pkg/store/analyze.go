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
const staleSQL = `SELECT t.relid::regclass::text
FROM (SELECT relid FROM pg_partition_tree('jobs') WHERE isleaf
      UNION ALL SELECT relid FROM pg_partition_tree('job_runs') WHERE isleaf) t
JOIN pg_class c ON c.oid = t.relid
JOIN pg_stat_user_tables s ON s.relid = t.relid
WHERE s.n_mod_since_analyze > 500 + 0.1 * greatest(c.reltuples, 0)
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
		// The name comes from regclass's output: quoted where it needs to be.
		if _, err := s.pool.Exec(ctx, "ANALYZE "+name); err != nil {
			return names[:i], fmt.Errorf("analyze %s: %w", name, translate(err))
		}
	}
	return names, nil
}

package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// partitionLock serialises partition upkeep across every service that runs it.
const partitionLock = 7_446_733_001

// partitionExistsSQL reads pg_class under the statement's own snapshot, so after
// waiting for partitionLock it sees a partition another session just committed.
// to_regclass does not: it answers from this connection's catalog cache, which
// can still hold the "no such table" it cached before the wait.
const partitionExistsSQL = `SELECT EXISTS (SELECT 1 FROM pg_class WHERE relname = $1 AND relnamespace = current_schema()::regnamespace)`

// runPartition names the job_runs partition of a UTC day.
func runPartition(day time.Time) string { return "job_runs_" + day.UTC().Format("20060102") }

// EnsureRunPartitions creates the job_runs day partitions for every day from
// from's day through to's day that does not exist yet. Rows that landed in the
// default partition for such a day are moved into the new partition, so creating
// it never fails on them.
func (s *Store) EnsureRunPartitions(ctx context.Context, from, to time.Time) (created int, err error) {
	for day := from.UTC().Truncate(24 * time.Hour); !day.After(to); day = day.Add(24 * time.Hour) {
		name := runPartition(day)
		var exists bool
		if err := s.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&exists); err != nil {
			return created, fmt.Errorf("ensure partition %s: %w", name, err)
		}
		if exists {
			continue
		}
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, partitionLock); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, partitionExistsSQL, name).Scan(&exists); err != nil || exists {
				return err
			}
			ident := pgx.Identifier{name}.Sanitize()
			lo, hi := day.Format(time.RFC3339), day.Add(24*time.Hour).Format(time.RFC3339)
			stmts := []string{
				`CREATE TABLE ` + ident + ` (LIKE job_runs INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`,
				fmt.Sprintf(`WITH moved AS (DELETE FROM job_runs_default WHERE scheduled_for >= '%s' AND scheduled_for < '%s' RETURNING *)
INSERT INTO %s SELECT * FROM moved`, lo, hi, ident),
				fmt.Sprintf(`ALTER TABLE job_runs ATTACH PARTITION %s FOR VALUES FROM ('%s') TO ('%s')`, ident, lo, hi),
			}
			for _, q := range stmts {
				if _, err := tx.Exec(ctx, q); err != nil {
					return err
				}
			}
			if err := inheritStatistics(ctx, tx, "job_runs", ident); err != nil {
				return err
			}
			created++
			return nil
		})
		if err != nil {
			return created, fmt.Errorf("ensure partition %s: %w", name, err)
		}
	}
	return created, nil
}

// inheritStatistics gives the new partition ident the statistics targets
// set on parent's columns (migration 024): a partition created apart and
// attached does not inherit them.
func inheritStatistics(ctx context.Context, tx pgx.Tx, parent, ident string) error {
	rows, err := tx.Query(ctx, `SELECT attname, attstattarget FROM pg_attribute
WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped AND attstattarget >= 0`, parent)
	if err != nil {
		return err
	}
	var sets []string
	var name string
	var target int16
	if _, err := pgx.ForEachRow(rows, []any{&name, &target}, func() error {
		sets = append(sets, fmt.Sprintf("ALTER COLUMN %s SET STATISTICS %d", pgx.Identifier{name}.Sanitize(), target))
		return nil
	}); err != nil || len(sets) == 0 {
		return err
	}
	_, err = tx.Exec(ctx, "ALTER TABLE "+ident+" "+strings.Join(sets, ", "))
	return err
}

// DropRunPartitionsBefore drops the job_runs day partitions that end at or
// before cutoff: run history past its retention.
func (s *Store) DropRunPartitionsBefore(ctx context.Context, cutoff time.Time) (dropped []string, err error) {
	rows, err := s.pool.Query(ctx, `SELECT c.relname FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'job_runs'::regclass AND c.relname ~ '^job_runs_[0-9]{8}$'`)
	if err != nil {
		return nil, fmt.Errorf("list run partitions: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list run partitions: %w", err)
	}
	for _, name := range names {
		day, err := time.Parse("20060102", name[len("job_runs_"):])
		if err != nil || day.Add(24*time.Hour).After(cutoff) {
			continue
		}
		if _, err := s.pool.Exec(ctx, `DROP TABLE `+pgx.Identifier{name}.Sanitize()); err != nil {
			return dropped, fmt.Errorf("drop partition %s: %w", name, err)
		}
		dropped = append(dropped, name)
	}
	return dropped, nil
}

// OldestRunDay is the first day job_runs keeps a partition of: runs of an
// earlier day would land in the default partition, which retention never
// drops. Zero when there is none.
func (s *Store) OldestRunDay(ctx context.Context) (time.Time, error) {
	var name *string
	if err := s.pool.QueryRow(ctx, `SELECT min(c.relname) FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'job_runs'::regclass AND c.relname ~ '^job_runs_[0-9]{8}$'`).Scan(&name); err != nil {
		return time.Time{}, fmt.Errorf("oldest run partition: %w", err)
	}
	if name == nil {
		return time.Time{}, nil
	}
	return time.Parse("20060102", (*name)[len("job_runs_"):])
}

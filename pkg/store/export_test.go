package store

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tockhq/tock/pkg/job"
)

// ClaimDueSQL lets the external tests EXPLAIN the loader's exact claim query.
// They live in package store_test because testenv imports store: an internal
// test importing testenv would be an import cycle. Being a _test.go file, this
// adds nothing to the package's API.
const ClaimDueSQL = claimDueSQL

// ListJobsSQL and OwnLabelledJobsSQL let the benchmark EXPLAIN the listing's
// exact queries.
var (
	ListJobsSQL        = listJobsSQL
	OwnLabelledJobsSQL = ownLabelledJobsSQL
)

// FinishedRuns lets a test hold the run search's statuses to the schema.
var FinishedRuns = finishedRuns

// SearchRunsSQL and CountRunsSQL let the benchmark EXPLAIN the run
// search's exact queries: an owner's, of status st ("" for any).
func SearchRunsSQL(st string) string { return runSearches[runQuery{walkOwner, job.RunStatus(st)}][0] }

// CountRunsSQL is an owner's count by status.
func CountRunsSQL() string { return runCounts[GroupByStatus][0] }

// StoredSecret is a user's signing secret as the table holds it.
func (s *Store) StoredSecret(ctx context.Context, id uuid.UUID) (string, error) {
	var v string
	err := s.pool.QueryRow(ctx, `SELECT signing_secret FROM users WHERE id = $1`, id).Scan(&v)
	return v, err
}

// SetStoredSecret writes a user's signing secret as given, as an older
// release (or migration 004) left it.
func (s *Store) SetStoredSecret(ctx context.Context, id uuid.UUID, v string) error {
	_, err := s.pool.Exec(ctx, `UPDATE users SET signing_secret = $2 WHERE id = $1`, id, v)
	return err
}

// Busiest lets the tests check the busiest minute and second of owners'
// loads without a database: groups counts jobs by load.
func Busiest(groups map[job.Load]int, adding ...job.Load) (minuteAt time.Duration, minute int, secondAt time.Duration, second int) {
	var gs []loadGroup
	for l, n := range groups {
		gs = append(gs, loadGroup{load: l, jobs: n})
	}
	m, s := busiest(gs, adding)
	return m.at, m.n, s.at, s.n
}

// FinishRunsPlan is EXPLAIN's account of the finish statement for results,
// planned generically (as a prepared statement is after its fifth run)
// and run in a transaction it rolls back.
func (s *Store) FinishRunsPlan(ctx context.Context, results []Result, now time.Time) ([]string, error) {
	args, _, _ := finishArgs(results, now)
	var plan []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "PREPARE finish_plan AS "+finishRunsSQL); err != nil {
			return err
		}
		// A utility statement takes no bound parameters: the arguments of
		// EXECUTE are written into its text, as Postgres prints them.
		types := []string{"uuid[]", "timestamptz[]", "smallint[]", "text[]", "timestamptz[]", "text[]", "text[]",
			"uuid[]", "uuid[]", "timestamptz[]", "timestamptz[]", "timestamptz", "integer[]"}
		lits := make([]string, len(args))
		for i, a := range args {
			if err := tx.QueryRow(ctx, "SELECT quote_literal($1::"+types[i]+"::text)", a).Scan(&lits[i]); err != nil {
				return err
			}
		}
		q := "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE finish_plan(" + strings.Join(lits, ", ") + ")"
		rows, err := tx.Query(ctx, q)
		if err != nil {
			return err
		}
		if plan, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		return errRolledBack
	})
	if !errors.Is(err, errRolledBack) {
		return nil, err
	}
	return plan, nil
}

var errRolledBack = errors.New("rolled back")

// RunBackfill is the backfill_id of one attempt's run row (uuid.Nil for
// none).
func (s *Store) RunBackfill(ctx context.Context, jobID uuid.UUID, scheduledFor time.Time, attempt int) (uuid.UUID, error) {
	var id *uuid.UUID
	err := s.pool.QueryRow(ctx, `SELECT backfill_id FROM job_runs WHERE job_id = $1 AND scheduled_for = $2 AND attempt = $3`,
		jobID, scheduledFor, attempt).Scan(&id)
	if err != nil || id == nil {
		return uuid.Nil, err
	}
	return *id, nil
}

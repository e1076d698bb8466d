package store

import (
	"context"
	"time"

	"github.com/google/uuid"

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

package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrCommitUnsure marks the error of a commit whose answer never came: the
// connection broke, Postgres stopped or the caller gave up after COMMIT was
// sent, so the transaction may have committed or not. Postgres makes a
// commit durable before it answers; a server stopped in between leaves it
// committed, and a caller that took the error for a refusal would repeat
// the work (a client's retry under one Idempotency-Key made a second job
// so) and leave the first unseen. CreateJobs returns it, as a
// *CommitUnsureError; lifecycle.Jobs.Create finds out which it was
// (JobsStored).
var ErrCommitUnsure = errors.New("the commit's outcome is unknown")

// CommitUnsureError is ErrCommitUnsure with the Postgres process that ran
// the commit: while it lives, the commit may still be under way (a caller
// that gave up, rather than a Postgres that stopped).
type CommitUnsureError struct {
	PID uint32
	err error
}

func (e *CommitUnsureError) Error() string   { return ErrCommitUnsure.Error() + ": " + e.err.Error() }
func (e *CommitUnsureError) Unwrap() []error { return []error{ErrCommitUnsure, e.err} }

// inTx runs fn in a transaction, as pgx.BeginFunc does, and makes a commit
// that went unanswered a *CommitUnsureError. Any other failure leaves
// nothing committed: Postgres's own refusal, a rollback in its place, and
// any error before the commit (Postgres rolls back a transaction whose
// connection ends). pgconn.SafeToRetry cannot tell a commit never sent:
// pgx reports a connection that broke while it waited for the answer as
// closed before it was used ("conn closed", SafeToRetry true).
func inTx(ctx context.Context, db interface {
	Begin(context.Context) (pgx.Tx, error)
}, fn func(pgx.Tx) error) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	// After a commit this does nothing; after an error or a panic in fn it
	// gives the connection back clean.
	defer func() { _ = tx.Rollback(ctx) }()
	if err := fn(tx); err != nil {
		return err
	}
	pid := tx.Conn().PgConn().PID()
	if err := tx.Commit(ctx); err != nil {
		return commitErr(err, pid)
	}
	return nil
}

// commitErr is err, the failure of a commit that Postgres process pid ran,
// as it is when Postgres answered (its own refusal, or a rollback in the
// commit's place), else as a *CommitUnsureError.
func commitErr(err error, pid uint32) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) || errors.Is(err, pgx.ErrTxCommitRollback) {
		return err
	}
	return &CommitUnsureError{PID: pid, err: err}
}

// JobsStored says whether the jobs of ids are stored (true if any is: one
// transaction stores them all or none), once that is settled: not while
// pid, the Postgres process that ran their commit (CommitUnsureError),
// still runs, since the commit may be under way. It settles a create whose
// commit went unanswered. The process is looked for first and the jobs
// after, each statement with its own snapshot, so a commit that ended
// between the two is seen. Behind a connection pooler the process is the
// pooler's server connection, which outlives the commit: settled then
// only when the jobs are found.
func (s *Store) JobsStored(ctx context.Context, ids []uuid.UUID, pid uint32) (stored, settled bool, err error) {
	var running bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $1)`, int32(pid)).Scan(&running); err != nil {
		return false, false, fmt.Errorf("find the commit's process: %w", translate(err))
	}
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM jobs WHERE id = ANY($1))`, ids).Scan(&stored); err != nil {
		return false, false, fmt.Errorf("find created jobs: %w", translate(err))
	}
	return stored, stored || !running, nil
}

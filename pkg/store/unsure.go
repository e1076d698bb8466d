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
// connection broke or Postgres stopped after COMMIT was sent, so the
// transaction may have committed or not. Postgres makes a commit durable
// before it answers; a server stopped in between leaves it committed, and a
// caller that took the error for a refusal would repeat the work (a client's
// retry under one Idempotency-Key made a second job so) and leave the first
// unseen. CreateJobs returns it; lifecycle.Jobs.Create finds out which it was
// (JobsStored).
var ErrCommitUnsure = errors.New("the commit's outcome is unknown")

// inTx runs fn in a transaction, as pgx.BeginFunc does, and wraps a commit
// that failed without Postgres's answer (any error but a *pgconn.PgError)
// in ErrCommitUnsure. An error before the commit leaves nothing committed:
// Postgres rolls back a transaction whose connection ends.
func inTx(ctx context.Context, db interface {
	Begin(context.Context) (pgx.Tx, error)
}, fn func(pgx.Tx) error) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrCommitUnsure, err)
	}
	return nil
}

// JobsStored says whether the jobs of ids are stored: true if any is, as
// one transaction stores them all or none. It settles a create whose
// commit was unsure (ErrCommitUnsure): one probe of each partition's
// primary key.
func (s *Store) JobsStored(ctx context.Context, ids []uuid.UUID) (bool, error) {
	var stored bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM jobs WHERE id = ANY($1))`, ids).Scan(&stored); err != nil {
		return false, fmt.Errorf("find created jobs: %w", translate(err))
	}
	return stored, nil
}

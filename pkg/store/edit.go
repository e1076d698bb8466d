package store

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
)

var lockJobForEditSQL = `SELECT ` + jobColumns + `, due_hour, EXISTS (SELECT 1 FROM job_runs r WHERE r.job_id = jobs.id)
FROM jobs WHERE id = $1 AND ($2 = '00000000-0000-0000-0000-000000000000'::uuid OR owner_id = $2) FOR UPDATE`

// Edit changes a job in memory under its row lock; started says whether any
// run of it exists. It returns job.ErrConflict (wrapped) to refuse.
type Edit func(j *job.Job, started bool) error

// Update says who changes a job, for the audit log, and how often its
// owner's recurring jobs may run.
type Update struct {
	Audit Audit
	// Rates says an owner's limits on how often their scheduled recurring
	// jobs fire together (see Create.Rates): an edit or a resume that
	// makes this job fire where it did not, or more often, and passes one
	// is a *RateError. It is asked only then; nil, or zero Rates, is no cap.
	Rates func(ctx context.Context, owner uuid.UUID) (Rates, error)
	// Running says whether an attempt of the job runs (it lives in Redis),
	// for the edit to count it as started; nil, none.
	Running func(ctx context.Context, id uuid.UUID) (bool, error)
	// Fence fences the job at its new generation before an edit that moves
	// it to one commits (see Fencer); nil fences nothing.
	Fence Fencer
	// MaxFlowKeys bounds the flow keys the owner may hold, as
	// Create.MaxFlowKeys does, when the edit names a new one.
	MaxFlowKeys int
}

// UpdateJob applies edit to a job of owner and writes it back in one
// transaction with its audit entry, keeping its id. It returns the job as it
// was and as it is now; the caller moves the job's Redis entries accordingly
// (see job.Generation).
func (s *Store) UpdateJob(ctx context.Context, owner, id uuid.UUID, now time.Time, edit Edit, u Update) (before, after *job.Job, err error) {
	err = retrySerialization(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			var hour int16
			var started bool
			b, err := scanJob(tx.QueryRow(ctx, lockJobForEditSQL, id, owner), &hour, &started)
			if err != nil {
				return translate(err)
			}
			running := false
			if u.Running != nil {
				if running, err = u.Running(ctx, id); err != nil {
					return err
				}
			}
			a := *b
			if err := edit(&a, started || running); err != nil {
				return err
			}
			if u.Fence != nil && a.Generation != b.Generation {
				now, err := u.Fence(ctx, a.ID, a.Generation)
				if err != nil {
					return err
				}
				if now && !started && !running && !a.Recurring() && !a.RunAt.Equal(b.RunAt) {
					// It started between the look and the fence: a
					// one-off job that started no longer moves.
					return fmt.Errorf("%w: a one-off job that has started cannot be rescheduled", job.ErrConflict)
				}
			}
			if u.Rates != nil && adds(b, &a) {
				rates, err := u.Rates(ctx, a.Owner)
				if err != nil {
					return err
				}
				if rates.capped() {
					if _, err := tx.Exec(ctx, lockOwnerSQL, a.Owner); err != nil {
						return translate(err)
					}
					if err := checkRates(ctx, tx, a.Owner, a.ID, []job.Load{*a.Load}, rates); err != nil {
						return err
					}
				}
			}
			a.UpdatedAt = now
			if after, err = scanJob(tx.QueryRow(ctx, updateJobSQL, updateArgs(&a, hour)...)); err != nil {
				return translate(err)
			}
			if err := replaceLabels(ctx, tx, b, after); err != nil {
				return err
			}
			if !slices.Equal(b.SkipCalendars, after.SkipCalendars) {
				if err := checkCalendars(ctx, tx, []*job.Job{after}); err != nil {
					return err
				}
			}
			if after.Flow != nil && !reflect.DeepEqual(b.Flow, after.Flow) {
				if err := claimFlows(ctx, tx, []*job.Job{after}, now, u.MaxFlowKeys); err != nil {
					return err
				}
			}
			if k := after.DebounceKey(); k != b.DebounceKey() {
				if err := moveDebounce(ctx, tx, b, after); err != nil {
					return err
				}
			}
			before = b
			return record(ctx, tx, u.Audit, now, TargetJob, id, jobspec.Changed(b, after))
		})
	})
	if err != nil {
		return nil, nil, fmt.Errorf("update job %s: %w", id, err)
	}
	return before, after, nil
}

// adds reports whether a job changed from before to after may make its
// owner's busiest minute or second busier: after is scheduled with a load
// that fires somewhere, and before was not counted (not scheduled, or of a
// load not known) or fired nowhere after does not and at most as often
// (job.Load.Within). A change that moves a job within its own load, or
// renames it, is never refused.
func adds(before, after *job.Job) bool {
	if after.Status != job.StatusScheduled || after.Load == nil || after.Load.Empty() {
		return false
	}
	return before.Status != job.StatusScheduled || before.Load == nil || !after.Load.Within(*before.Load)
}

// replaceLabels brings a job's job_labels rows from before's labels to
// after's: only the pairs that changed are written.
func replaceLabels(ctx context.Context, tx pgx.Tx, before, after *job.Job) error {
	var goneKeys, goneValues []string
	for k, v := range before.Labels {
		if nv, ok := after.Labels[k]; !ok || nv != v {
			goneKeys, goneValues = append(goneKeys, k), append(goneValues, v)
		}
	}
	var newKeys, newValues []string
	for k, v := range after.Labels {
		if ov, ok := before.Labels[k]; !ok || ov != v {
			newKeys, newValues = append(newKeys, k), append(newValues, v)
		}
	}
	if len(goneKeys) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM job_labels l USING unnest($3::text[], $4::text[]) AS g(key, value)
WHERE l.owner_id = $1 AND l.job_id = $2 AND l.key = g.key AND l.value = g.value`, after.Owner, after.ID, goneKeys, goneValues); err != nil {
			return fmt.Errorf("remove labels: %w", translate(err))
		}
	}
	if len(newKeys) > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO job_labels (owner_id, key, value, job_id)
SELECT $1, key, value, $2 FROM unnest($3::text[], $4::text[]) AS n(key, value) ON CONFLICT DO NOTHING`, after.Owner, after.ID, newKeys, newValues); err != nil {
			return fmt.Errorf("add labels: %w", translate(err))
		}
	}
	return nil
}

package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// ActionUserErase records an erasure: the user's jobs, runs, labels, keys,
// dashboard sessions and idempotency keys deleted, the user disabled and
// renamed, and what the audit log held of their data replaced by
// {"erased": true}.
const ActionUserErase = "user.erase"

// Erased is what an erasure removed.
type Erased struct {
	Jobs  int `json:"jobs"`
	Runs  int `json:"runs"`
	Keys  int `json:"keys"`
	Audit int `json:"audit_entries_scrubbed"`
}

const eraseUserSQL = `WITH owned AS (
    SELECT id FROM jobs WHERE owner_id = $1
), scrubbed AS (
    UPDATE audit_log SET change = '{"erased": true}'
    WHERE actor_id = $1 OR target_id = $1 OR target_id = ANY(ARRAY(SELECT id FROM owned))
    RETURNING 1
), runs AS (
    DELETE FROM job_runs WHERE owner_id = $1 RETURNING 1
), labels AS (
    DELETE FROM job_labels WHERE owner_id = $1
), jobkeys AS (
    DELETE FROM job_keys WHERE owner_id = $1
), debounced AS (
    DELETE FROM debounces WHERE owner_id = $1
), backfilled AS (
    DELETE FROM backfills WHERE owner_id = $1
), calendared AS (
    DELETE FROM calendars WHERE owner_id = $1
), calledback AS (
    DELETE FROM callbacks WHERE owner_id = $1
), slos AS (
    DELETE FROM slo_states WHERE owner_id = $1
), jobs AS (
    DELETE FROM jobs WHERE owner_id = $1 RETURNING 1
), keys AS (
    DELETE FROM api_keys WHERE user_id = $1 RETURNING 1
), idem AS (
    DELETE FROM idempotency_keys WHERE owner_id = $1
), ended AS (
    DELETE FROM sessions WHERE user_id = $1
), person AS (
    UPDATE users SET name = 'erased user', signing_secret = $3,
        previous_signing_secret = NULL, previous_signing_until = NULL, disabled_at = coalesce(disabled_at, $2)
    WHERE id = $1
)
SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM runs), (SELECT count(*) FROM keys), (SELECT count(*) FROM scrubbed)`

// EraseUser removes a user's data for an erasure request, in one
// transaction: their jobs with runs and labels, their API keys, dashboard
// sessions and idempotency keys. The user stays, so that the audit log's
// references resolve: disabled, renamed, and with every secret they knew
// gone: a new signing secret nobody has seen, generated and sealed here like
// any other (a plain one would sit in the table until the next reseal), and
// no previous secret, whose grace period after a rotation would otherwise
// keep one they knew valid. Every audit entry by them or about them or their
// jobs keeps only that it happened; the entry recording the erasure holds
// the counts. An unknown user is job.ErrNotFound. The caller stops their
// running attempts (queue.Queue.Abort); an entry of theirs still in Redis
// finds no job and is dropped. A create of theirs that passed
// authentication before the erasure committed may still add a job after
// it: the keys are gone, so an erasure repeated once that request is
// answered is final.
func (s *Store) EraseUser(ctx context.Context, id uuid.UUID, now time.Time, a Audit) (Erased, error) {
	secret, err := s.sealSecret(newSigningSecret(), id)
	if err != nil {
		return Erased{}, fmt.Errorf("erase user %s: %w", id, err)
	}
	var e Erased
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM users WHERE id = $1 FOR UPDATE`, id).Scan(&one); err != nil {
			return translate(err)
		}
		if err := tx.QueryRow(ctx, eraseUserSQL, id, now, secret).Scan(&e.Jobs, &e.Runs, &e.Keys, &e.Audit); err != nil {
			return translate(err)
		}
		return record(ctx, tx, a, now, TargetUser, id, map[string]any{"jobs": e.Jobs, "runs": e.Runs, "keys": e.Keys, "audit_entries_scrubbed": e.Audit})
	})
	if err != nil {
		return Erased{}, fmt.Errorf("erase user %s: %w", id, err)
	}
	return e, nil
}

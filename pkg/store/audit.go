package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Actions recorded in the audit log. Clients filter on them, so they never
// change once shipped.
const (
	ActionJobCreate = "job.create"
	// ActionJobCreateBatch is one bulk create: one entry for the request,
	// targeting the batch, with the count and the ids of its jobs.
	ActionJobCreateBatch = "job.create_batch"
	ActionJobUpdate      = "job.update"
	// ActionJobDebounce is a create folded into the pending job that holds
	// its debounce key: its payload and due time changed.
	ActionJobDebounce = "job.debounce"
	ActionJobPause    = "job.pause"
	ActionJobResume   = "job.resume"
	ActionJobCancel   = "job.cancel"
	ActionJobTrigger  = "job.trigger"
	ActionJobRetry    = "job.retry"
	ActionJobAbort    = "job.abort"
	// ActionJobPurge removes a finished job and its runs before its
	// retention ends (DELETE ?purge=true).
	ActionJobPurge = "job.purge"
	// ActionJobBulk is one bulk action (POST /api/v1/jobs:bulk): one entry
	// for the call, targeting it under an id of its own, with the action,
	// the count and the ids of the jobs it changed.
	ActionJobBulk = "job.bulk"
	// ActionDeadLetters is one replay or purge of dead letters: one entry
	// for the request, with the action, the counts and the run ids changed.
	ActionDeadLetters = "dead_letters"
	ActionUserCreate  = "user.create"
	ActionUserUpdate  = "user.update"
	ActionUserDisable = "user.disable"
	ActionUserEnable  = "user.enable"
	ActionKeyCreate   = "key.create"
	ActionKeyRevoke   = "key.revoke"
	// ActionSigningRotate: a user's webhook signing secret was replaced,
	// the previous one kept for a grace period (never recorded by value).
	ActionSigningRotate = "user.rotate_signing_secret"
)

// Target types of audit entries.
const (
	TargetJob  = "job"
	TargetUser = "user"
	TargetKey  = "key"
	// TargetBatch is the jobs of one bulk create, under an id of its own.
	TargetBatch = "batch"
	// TargetBulk is the jobs of one bulk action, under an id of its own.
	TargetBulk = "bulk"
)

// Audit says who makes a change and what kind of change it is. The store
// methods that change something take one and write the entry in the change's
// own transaction, filling in the target and what changed; a zero Actor
// records nothing (internal callers such as tests and load generators).
type Audit struct {
	Actor  uuid.UUID
	Action string
}

// Recorded says whether a leaves an entry: it names who makes the change.
// Callers that write entries of their own (lifecycle.Jobs.Trigger) ask it
// too, so that the rule stays here.
func (a Audit) Recorded() bool { return a.Actor != uuid.Nil }

// AuditEntry is one row of the audit log. Change never holds a secret: job
// payloads are recorded as changed, never by value, and keys by prefix only.
type AuditEntry struct {
	ID         int64
	At         time.Time
	Actor      uuid.UUID
	Action     string
	TargetType string
	TargetID   uuid.UUID
	Change     json.RawMessage
}

const insertAuditSQL = `INSERT INTO audit_log (at, actor_id, action, target_type, target_id, change) VALUES ($1, $2, $3, $4, $5, $6)`

// record writes one audit entry in the transaction of the change.
func record(ctx context.Context, tx pgx.Tx, a Audit, at time.Time, targetType string, target uuid.UUID, change any) error {
	if !a.Recorded() {
		return nil
	}
	args, err := auditRow(a, at, targetType, target, change)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, insertAuditSQL, args...); err != nil {
		return fmt.Errorf("audit %s: %w", a.Action, translate(err))
	}
	return nil
}

// auditRow is the arguments of insertAuditSQL for an entry of a.
func auditRow(a Audit, at time.Time, targetType string, target uuid.UUID, change any) ([]any, error) {
	raw, err := json.Marshal(change)
	if err != nil {
		return nil, fmt.Errorf("audit %s: %w", a.Action, err)
	}
	return []any{at, a.Actor, a.Action, targetType, target, raw}, nil
}

// RecordAudit writes an entry for a change that has no Postgres transaction of
// its own, such as a trigger, which only puts an occurrence in Redis.
func (s *Store) RecordAudit(ctx context.Context, e AuditEntry) error {
	if _, err := s.pool.Exec(ctx, insertAuditSQL, e.At, e.Actor, e.Action, e.TargetType, e.TargetID, nullJSONObject(e.Change)); err != nil {
		return fmt.Errorf("audit %s: %w", e.Action, translate(err))
	}
	return nil
}

// RecordAuditAround writes an audit entry in a transaction around then:
// the entry commits only if then succeeds, and then runs only once the
// entry is written. Trigger uses it to put its occurrence in Redis between
// the entry's insert and its commit, so an occurrence is never queued
// without its entry being on its way, nor an entry kept for an occurrence
// that was not queued.
func (s *Store) RecordAuditAround(ctx context.Context, e AuditEntry, then func(context.Context) error) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, insertAuditSQL, e.At, e.Actor, e.Action, e.TargetType, e.TargetID, nullJSONObject(e.Change)); err != nil {
			return fmt.Errorf("audit %s: %w", e.Action, translate(err))
		}
		return then(ctx)
	})
	return err
}

func nullJSONObject(b json.RawMessage) []byte {
	if len(b) == 0 {
		return []byte("{}")
	}
	return b
}

// AuditFilter narrows ListAudit. Zero fields do not filter.
type AuditFilter struct {
	Actor  uuid.UUID
	Target uuid.UUID
	Action string
	Since  time.Time // at or after
	Until  time.Time // before
	Before int64     // keyset cursor: entries older than this id
	Limit  int
}

const listAuditSQL = `SELECT id, at, actor_id, action, target_type, target_id, change FROM audit_log
WHERE ($1 = '00000000-0000-0000-0000-000000000000'::uuid OR actor_id = $1)
  AND ($2 = '00000000-0000-0000-0000-000000000000'::uuid OR target_id = $2)
  AND ($3 = '' OR action = $3)
  AND ($4::timestamptz IS NULL OR at >= $4)
  AND ($5::timestamptz IS NULL OR at < $5)
  AND ($6::bigint = 0 OR id < $6)
ORDER BY id DESC
LIMIT $7`

// ListAudit returns audit entries newest first, at most f.Limit of them.
func (s *Store) ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, error) {
	rows, err := s.pool.Query(ctx, listAuditSQL, f.Actor, f.Target, f.Action, nullTime(f.Since), nullTime(f.Until), f.Before, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("list audit: %w", translate(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (AuditEntry, error) {
		var e AuditEntry
		err := r.Scan(&e.ID, &e.At, &e.Actor, &e.Action, &e.TargetType, &e.TargetID, &e.Change)
		e.At = e.At.UTC()
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("list audit: %w", translate(err))
	}
	return out, nil
}
